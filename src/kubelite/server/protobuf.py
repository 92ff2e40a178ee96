"""Decode the protobuf request bodies kubectl sends for imperative ``kubectl create <kind>``.

kubectl 1.32+ sends ``Content-Type: application/vnd.kubernetes.protobuf`` for the typed clients
behind ``create configmap|secret|namespace|deployment|...``, with no fallback to JSON after a 415.
The body is the magic ``k8s\\0`` followed by a ``runtime.Unknown`` message: TypeMeta (field 1:
apiVersion=1, kind=2), raw (field 2: the object's own protobuf encoding), contentEncoding (3) and
contentType (4).

The object encodings follow k8s.io/api's ``generated.proto``. Each message is declared below as
plain data, ``{field number: F(json name, kind, ...)}``, and one small table-driven decoder turns
the wire format into the dict kubectl would have sent as JSON:

- singular strings, integers and booleans are omitted when zero, like Go's ``omitempty``, unless
  ``keep`` (pointer fields, and the few fields without ``omitempty``: Go's protobuf marshaller
  writes pointers only when set and always writes value fields);
- nested messages are emitted whenever present, even when empty (``"status": {}``), as
  encoding/json does for struct fields;
- maps are repeated entries with key=1 and value=2; ``bytes`` become base64 strings;
- Quantity is a message whose field 1 is the string form; IntOrString is type=1, intVal=2,
  strVal=3; Time is seconds=1, nanos=2 and becomes an RFC 3339 string (omitted when zero);
- ``inline`` messages (Go's ``json:",inline"`` embedding) merge into their parent;
- unknown field numbers are skipped and logged at debug level.

Only this decoding direction exists: kubelite always answers in JSON.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger(__name__)

MAGIC = b"k8s\x00"

# Scalar and well-known kinds.
STR = "string"
INT = "int"  # int32/int64 varints, signed
BOOL = "bool"
BYTES = "bytes"  # base64 in JSON
TIME = "time"  # meta/v1 Time {seconds=1, nanos=2}
QUANTITY = "quantity"  # resource.Quantity {string=1}
INT_OR_STR = "intorstr"  # intstr.IntOrString {type=1, intVal=2, strVal=3}


@dataclass(frozen=True)
class F:
    """One field: its JSON name and kind (a scalar name above or a nested message table)."""

    name: str
    kind: Kind
    repeated: bool = False
    map: bool = False  # map<string, kind>: repeated entries {key=1, value=2}
    keep: bool = False  # emit zero values too (pointer fields, or no omitempty)
    null: bool = False  # repeated field without omitempty: JSON null when absent
    inline: bool = False  # Go ``json:",inline"``: merge the message's fields into the parent


Message = dict[int, F]
Kind = str | Message

# --- apimachinery: meta/v1 ------------------------------------------------------------------

OWNER_REFERENCE: Message = {
    1: F("kind", STR, keep=True),
    3: F("name", STR, keep=True),
    4: F("uid", STR, keep=True),
    5: F("apiVersion", STR, keep=True),
    6: F("controller", BOOL, keep=True),
    7: F("blockOwnerDeletion", BOOL, keep=True),
}
OBJECT_META: Message = {
    1: F("name", STR),
    2: F("generateName", STR),
    3: F("namespace", STR),
    4: F("selfLink", STR),
    5: F("uid", STR),
    6: F("resourceVersion", STR),
    7: F("generation", INT),
    8: F("creationTimestamp", TIME),
    9: F("deletionTimestamp", TIME),
    10: F("deletionGracePeriodSeconds", INT, keep=True),
    11: F("labels", STR, map=True),
    12: F("annotations", STR, map=True),
    13: F("ownerReferences", OWNER_REFERENCE, repeated=True),
    14: F("finalizers", STR, repeated=True),
    # 17 managedFields is server-owned; skipped.
}
LABEL_SELECTOR_REQUIREMENT: Message = {
    1: F("key", STR, keep=True),
    2: F("operator", STR, keep=True),
    3: F("values", STR, repeated=True),
}
LABEL_SELECTOR: Message = {
    1: F("matchLabels", STR, map=True),
    2: F("matchExpressions", LABEL_SELECTOR_REQUIREMENT, repeated=True),
}

# --- core/v1 --------------------------------------------------------------------------------

LOCAL_OBJECT_REFERENCE: Message = {1: F("name", STR)}
OBJECT_REFERENCE: Message = {
    1: F("kind", STR),
    2: F("namespace", STR),
    3: F("name", STR),
    4: F("uid", STR),
    5: F("apiVersion", STR),
    6: F("resourceVersion", STR),
    7: F("fieldPath", STR),
}
KEY_SELECTOR: Message = {  # ConfigMapKeySelector and SecretKeySelector
    1: F("", LOCAL_OBJECT_REFERENCE, inline=True),
    2: F("key", STR, keep=True),
    3: F("optional", BOOL, keep=True),
}
OBJECT_FIELD_SELECTOR: Message = {1: F("apiVersion", STR), 2: F("fieldPath", STR, keep=True)}
RESOURCE_FIELD_SELECTOR: Message = {
    1: F("containerName", STR),
    2: F("resource", STR, keep=True),
    3: F("divisor", QUANTITY),
}
ENV_VAR_SOURCE: Message = {
    1: F("fieldRef", OBJECT_FIELD_SELECTOR),
    2: F("resourceFieldRef", RESOURCE_FIELD_SELECTOR),
    3: F("configMapKeyRef", KEY_SELECTOR),
    4: F("secretKeyRef", KEY_SELECTOR),
}
ENV_VAR: Message = {
    1: F("name", STR, keep=True),
    2: F("value", STR),
    3: F("valueFrom", ENV_VAR_SOURCE),
}
ENV_SOURCE: Message = {  # ConfigMapEnvSource and SecretEnvSource
    1: F("", LOCAL_OBJECT_REFERENCE, inline=True),
    2: F("optional", BOOL, keep=True),
}
ENV_FROM_SOURCE: Message = {
    1: F("prefix", STR),
    2: F("configMapRef", ENV_SOURCE),
    3: F("secretRef", ENV_SOURCE),
}
CONTAINER_PORT: Message = {
    1: F("name", STR),
    2: F("hostPort", INT),
    3: F("containerPort", INT, keep=True),
    4: F("protocol", STR),
    5: F("hostIP", STR),
}
RESOURCE_CLAIM: Message = {1: F("name", STR, keep=True), 2: F("request", STR)}
RESOURCE_REQUIREMENTS: Message = {
    1: F("limits", QUANTITY, map=True),
    2: F("requests", QUANTITY, map=True),
    3: F("claims", RESOURCE_CLAIM, repeated=True),
}
VOLUME_MOUNT: Message = {
    1: F("name", STR, keep=True),
    2: F("readOnly", BOOL),
    3: F("mountPath", STR, keep=True),
    4: F("subPath", STR),
    5: F("mountPropagation", STR, keep=True),
    6: F("subPathExpr", STR),
}
CONTAINER: Message = {
    1: F("name", STR, keep=True),
    2: F("image", STR),
    3: F("command", STR, repeated=True),
    4: F("args", STR, repeated=True),
    5: F("workingDir", STR),
    6: F("ports", CONTAINER_PORT, repeated=True),
    7: F("env", ENV_VAR, repeated=True),
    8: F("resources", RESOURCE_REQUIREMENTS),
    9: F("volumeMounts", VOLUME_MOUNT, repeated=True),
    13: F("terminationMessagePath", STR),
    14: F("imagePullPolicy", STR),
    16: F("stdin", BOOL),
    17: F("stdinOnce", BOOL),
    18: F("tty", BOOL),
    19: F("envFrom", ENV_FROM_SOURCE, repeated=True),
    20: F("terminationMessagePolicy", STR),
    24: F("restartPolicy", STR, keep=True),
}
POD_SPEC: Message = {
    # 1 volumes: not sent by any ``create`` generator; skipped.
    2: F("containers", CONTAINER, repeated=True, null=True),
    3: F("restartPolicy", STR),
    4: F("terminationGracePeriodSeconds", INT, keep=True),
    5: F("activeDeadlineSeconds", INT, keep=True),
    6: F("dnsPolicy", STR),
    7: F("nodeSelector", STR, map=True),
    8: F("serviceAccountName", STR),
    9: F("serviceAccount", STR),
    10: F("nodeName", STR),
    11: F("hostNetwork", BOOL),
    12: F("hostPID", BOOL),
    13: F("hostIPC", BOOL),
    15: F("imagePullSecrets", LOCAL_OBJECT_REFERENCE, repeated=True),
    16: F("hostname", STR),
    17: F("subdomain", STR),
    19: F("schedulerName", STR),
    20: F("initContainers", CONTAINER, repeated=True),
    21: F("automountServiceAccountToken", BOOL, keep=True),
    24: F("priorityClassName", STR),
    25: F("priority", INT, keep=True),
    27: F("shareProcessNamespace", BOOL, keep=True),
    29: F("runtimeClassName", STR, keep=True),
    30: F("enableServiceLinks", BOOL, keep=True),
    31: F("preemptionPolicy", STR, keep=True),
}
POD_TEMPLATE_SPEC: Message = {1: F("metadata", OBJECT_META), 2: F("spec", POD_SPEC)}

CONFIG_MAP: Message = {
    1: F("metadata", OBJECT_META),
    2: F("data", STR, map=True),
    3: F("binaryData", BYTES, map=True),
    4: F("immutable", BOOL, keep=True),
}
SECRET: Message = {
    1: F("metadata", OBJECT_META),
    2: F("data", BYTES, map=True),
    3: F("type", STR),
    4: F("stringData", STR, map=True),
    5: F("immutable", BOOL, keep=True),
}
NAMESPACE: Message = {
    1: F("metadata", OBJECT_META),
    2: F("spec", {1: F("finalizers", STR, repeated=True)}),
    3: F("status", {1: F("phase", STR)}),  # 2 conditions: server-owned
}
SERVICE_ACCOUNT: Message = {
    1: F("metadata", OBJECT_META),
    2: F("secrets", OBJECT_REFERENCE, repeated=True),
    3: F("imagePullSecrets", LOCAL_OBJECT_REFERENCE, repeated=True),
    4: F("automountServiceAccountToken", BOOL, keep=True),
}
SERVICE_PORT: Message = {
    1: F("name", STR),
    2: F("protocol", STR),
    3: F("port", INT, keep=True),
    4: F("targetPort", INT_OR_STR),
    5: F("nodePort", INT),
    6: F("appProtocol", STR, keep=True),
}
SERVICE_SPEC: Message = {
    1: F("ports", SERVICE_PORT, repeated=True),
    2: F("selector", STR, map=True),
    3: F("clusterIP", STR),
    4: F("type", STR),
    5: F("externalIPs", STR, repeated=True),
    7: F("sessionAffinity", STR),
    8: F("loadBalancerIP", STR),
    9: F("loadBalancerSourceRanges", STR, repeated=True),
    10: F("externalName", STR),
    11: F("externalTrafficPolicy", STR),
    12: F("healthCheckNodePort", INT),
    13: F("publishNotReadyAddresses", BOOL),
    17: F("ipFamilyPolicy", STR, keep=True),
    18: F("clusterIPs", STR, repeated=True),
    19: F("ipFamilies", STR, repeated=True),
    20: F("allocateLoadBalancerNodePorts", BOOL, keep=True),
    21: F("loadBalancerClass", STR, keep=True),
    22: F("internalTrafficPolicy", STR, keep=True),
    23: F("trafficDistribution", STR, keep=True),
}
LOAD_BALANCER_STATUS: Message = {}  # 1 ingress: server-owned
SERVICE: Message = {
    1: F("metadata", OBJECT_META),
    2: F("spec", SERVICE_SPEC),
    3: F("status", {1: F("loadBalancer", LOAD_BALANCER_STATUS)}),
}
RESOURCE_QUOTA: Message = {
    1: F("metadata", OBJECT_META),
    2: F(
        "spec",
        {
            1: F("hard", QUANTITY, map=True),
            2: F("scopes", STR, repeated=True),
            3: F(
                "scopeSelector",
                {
                    1: F(
                        "matchExpressions",
                        {
                            1: F("scopeName", STR, keep=True),
                            2: F("operator", STR, keep=True),
                            3: F("values", STR, repeated=True),
                        },
                        repeated=True,
                    )
                },
            ),
        },
    ),
    3: F("status", {1: F("hard", QUANTITY, map=True), 2: F("used", QUANTITY, map=True)}),
}
POD: Message = {1: F("metadata", OBJECT_META), 2: F("spec", POD_SPEC)}  # 3 status: skipped

# --- apps/v1, batch/v1 ----------------------------------------------------------------------

DEPLOYMENT: Message = {
    1: F("metadata", OBJECT_META),
    2: F(
        "spec",
        {
            1: F("replicas", INT, keep=True),
            2: F("selector", LABEL_SELECTOR),
            3: F("template", POD_TEMPLATE_SPEC),
            4: F(
                "strategy",
                {
                    1: F("type", STR),
                    2: F(
                        "rollingUpdate",
                        {1: F("maxUnavailable", INT_OR_STR), 2: F("maxSurge", INT_OR_STR)},
                    ),
                },
            ),
            5: F("minReadySeconds", INT),
            6: F("revisionHistoryLimit", INT, keep=True),
            7: F("paused", BOOL),
            9: F("progressDeadlineSeconds", INT, keep=True),
        },
    ),
    3: F(
        "status",
        {
            1: F("observedGeneration", INT),
            2: F("replicas", INT),
            3: F("updatedReplicas", INT),
            4: F("availableReplicas", INT),
            5: F("unavailableReplicas", INT),
            7: F("readyReplicas", INT),
            8: F("collisionCount", INT, keep=True),
            9: F("terminatingReplicas", INT, keep=True),
        },
    ),
}
JOB_SPEC: Message = {
    1: F("parallelism", INT, keep=True),
    2: F("completions", INT, keep=True),
    3: F("activeDeadlineSeconds", INT, keep=True),
    4: F("selector", LABEL_SELECTOR),
    5: F("manualSelector", BOOL, keep=True),
    6: F("template", POD_TEMPLATE_SPEC),
    7: F("backoffLimit", INT, keep=True),
    8: F("ttlSecondsAfterFinished", INT, keep=True),
    9: F("completionMode", STR, keep=True),
    10: F("suspend", BOOL, keep=True),
    12: F("backoffLimitPerIndex", INT, keep=True),
    13: F("maxFailedIndexes", INT, keep=True),
    14: F("podReplacementPolicy", STR, keep=True),
    15: F("managedBy", STR, keep=True),
}
JOB_STATUS: Message = {  # all server-owned; the counters are what an empty status carries
    4: F("active", INT),
    5: F("succeeded", INT),
    6: F("failed", INT),
    7: F("completedIndexes", STR),
    9: F("ready", INT, keep=True),
    10: F("failedIndexes", STR, keep=True),
    11: F("terminating", INT, keep=True),
}
JOB: Message = {1: F("metadata", OBJECT_META), 2: F("spec", JOB_SPEC), 3: F("status", JOB_STATUS)}
CRON_JOB: Message = {
    1: F("metadata", OBJECT_META),
    2: F(
        "spec",
        {
            1: F("schedule", STR, keep=True),
            2: F("startingDeadlineSeconds", INT, keep=True),
            3: F("concurrencyPolicy", STR),
            4: F("suspend", BOOL, keep=True),
            5: F("jobTemplate", {1: F("metadata", OBJECT_META), 2: F("spec", JOB_SPEC)}),
            6: F("successfulJobsHistoryLimit", INT, keep=True),
            7: F("failedJobsHistoryLimit", INT, keep=True),
            8: F("timeZone", STR, keep=True),
        },
    ),
    3: F("status", {}),  # active, lastScheduleTime, lastSuccessfulTime: server-owned
}

# --- rbac.authorization.k8s.io/v1 -----------------------------------------------------------

POLICY_RULE: Message = {
    1: F("verbs", STR, repeated=True, null=True),
    2: F("apiGroups", STR, repeated=True),
    3: F("resources", STR, repeated=True),
    4: F("resourceNames", STR, repeated=True),
    5: F("nonResourceURLs", STR, repeated=True),
}
ROLE: Message = {
    1: F("metadata", OBJECT_META),
    2: F("rules", POLICY_RULE, repeated=True, null=True),
}
CLUSTER_ROLE: Message = {
    **ROLE,
    3: F("aggregationRule", {1: F("clusterRoleSelectors", LABEL_SELECTOR, repeated=True)}),
}
ROLE_BINDING: Message = {
    1: F("metadata", OBJECT_META),
    2: F(
        "subjects",
        {
            1: F("kind", STR, keep=True),
            2: F("apiGroup", STR),
            3: F("name", STR, keep=True),
            4: F("namespace", STR),
        },
        repeated=True,
    ),
    3: F(
        "roleRef",
        {
            1: F("apiGroup", STR, keep=True),
            2: F("kind", STR, keep=True),
            3: F("name", STR, keep=True),
        },
    ),
}

# --- scheduling, policy, networking ---------------------------------------------------------

PRIORITY_CLASS: Message = {
    1: F("metadata", OBJECT_META),
    2: F("value", INT, keep=True),
    3: F("globalDefault", BOOL),
    4: F("description", STR),
    5: F("preemptionPolicy", STR, keep=True),
}
POD_DISRUPTION_BUDGET: Message = {
    1: F("metadata", OBJECT_META),
    2: F(
        "spec",
        {
            1: F("minAvailable", INT_OR_STR),
            2: F("selector", LABEL_SELECTOR),
            3: F("maxUnavailable", INT_OR_STR),
            4: F("unhealthyPodEvictionPolicy", STR, keep=True),
        },
    ),
    3: F(
        "status",
        {
            1: F("observedGeneration", INT),
            3: F("disruptionsAllowed", INT, keep=True),
            4: F("currentHealthy", INT, keep=True),
            5: F("desiredHealthy", INT, keep=True),
            6: F("expectedPods", INT, keep=True),
        },
    ),
}
INGRESS_BACKEND: Message = {
    3: F(
        "resource",
        {
            1: F("apiGroup", STR, keep=True),
            2: F("kind", STR, keep=True),
            3: F("name", STR, keep=True),
        },
    ),
    4: F(
        "service",
        {
            1: F("name", STR, keep=True),
            2: F("port", {1: F("name", STR), 2: F("number", INT)}),
        },
    ),
}
HTTP_INGRESS_PATH: Message = {
    1: F("path", STR),
    2: F("backend", INGRESS_BACKEND),
    3: F("pathType", STR, keep=True),
}
INGRESS: Message = {
    1: F("metadata", OBJECT_META),
    2: F(
        "spec",
        {
            1: F("defaultBackend", INGRESS_BACKEND),
            2: F(
                "tls", {1: F("hosts", STR, repeated=True), 2: F("secretName", STR)}, repeated=True
            ),
            3: F(
                "rules",
                {
                    1: F("host", STR),
                    2: F(
                        "",
                        {
                            1: F(
                                "http", {1: F("paths", HTTP_INGRESS_PATH, repeated=True, null=True)}
                            )
                        },
                        inline=True,
                    ),
                },
                repeated=True,
            ),
            4: F("ingressClassName", STR, keep=True),
        },
    ),
    3: F("status", {1: F("loadBalancer", {})}),  # ingress points: server-owned
}

# --- autoscaling/v2 (kubectl autoscale) -----------------------------------------------------

METRIC_TARGET: Message = {
    1: F("type", STR, keep=True),
    2: F("value", QUANTITY),
    3: F("averageValue", QUANTITY),
    4: F("averageUtilization", INT, keep=True),
}
RESOURCE_METRIC_SOURCE: Message = {1: F("name", STR, keep=True), 2: F("target", METRIC_TARGET)}
HORIZONTAL_POD_AUTOSCALER: Message = {
    1: F("metadata", OBJECT_META),
    2: F(
        "spec",
        {
            1: F(
                "scaleTargetRef",
                {
                    1: F("kind", STR, keep=True),
                    2: F("name", STR, keep=True),
                    3: F("apiVersion", STR),
                },
            ),
            2: F("minReplicas", INT, keep=True),
            3: F("maxReplicas", INT, keep=True),
            # Only the Resource metric type is declared; the others are skipped.
            4: F(
                "metrics",
                {1: F("type", STR, keep=True), 4: F("resource", RESOURCE_METRIC_SOURCE)},
                repeated=True,
            ),
        },
    ),
    3: F(
        "status",
        {
            1: F("observedGeneration", INT, keep=True),
            2: F("lastScaleTime", TIME, keep=True),
            3: F("currentReplicas", INT),
            4: F("desiredReplicas", INT, keep=True),
            5: F("currentMetrics", {}, repeated=True, null=True),
        },
    ),
}

# --- authorization/v1 and authentication/v1: the reviews kubectl auth sends -----------------
# (status is the server's to fill in: not declared, so skipped)

RESOURCE_ATTRIBUTES: Message = {
    1: F("namespace", STR),
    2: F("verb", STR),
    3: F("group", STR),
    4: F("version", STR),
    5: F("resource", STR),
    6: F("subresource", STR),
    7: F("name", STR),
}
NON_RESOURCE_ATTRIBUTES: Message = {1: F("path", STR), 2: F("verb", STR)}
SELF_SUBJECT_ACCESS_REVIEW: Message = {
    1: F("metadata", OBJECT_META),
    2: F(
        "spec",
        {
            1: F("resourceAttributes", RESOURCE_ATTRIBUTES),
            2: F("nonResourceAttributes", NON_RESOURCE_ATTRIBUTES),
        },
    ),
}
SELF_SUBJECT_RULES_REVIEW: Message = {
    1: F("metadata", OBJECT_META),
    2: F("spec", {1: F("namespace", STR)}),
}
SELF_SUBJECT_REVIEW: Message = {1: F("metadata", OBJECT_META)}
TOKEN_REQUEST: Message = {  # serviceaccounts/<name>/token (kubectl create token)
    1: F("metadata", OBJECT_META),
    2: F(
        "spec",
        {
            1: F("audiences", STR, repeated=True),
            3: F(
                "boundObjectRef",
                {1: F("kind", STR), 2: F("apiVersion", STR), 3: F("name", STR), 4: F("uid", STR)},
            ),
            4: F("expirationSeconds", INT, keep=True),
        },
    ),
}

KINDS: dict[tuple[str, str], Message] = {
    ("v1", "ConfigMap"): CONFIG_MAP,
    ("v1", "Secret"): SECRET,
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("v1", "Service"): SERVICE,
    ("v1", "ResourceQuota"): RESOURCE_QUOTA,
    ("v1", "Pod"): POD,
    ("apps/v1", "Deployment"): DEPLOYMENT,
    ("batch/v1", "Job"): JOB,
    ("batch/v1", "CronJob"): CRON_JOB,
    ("rbac.authorization.k8s.io/v1", "Role"): ROLE,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): CLUSTER_ROLE,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ROLE_BINDING,
    ("scheduling.k8s.io/v1", "PriorityClass"): PRIORITY_CLASS,
    ("policy/v1", "PodDisruptionBudget"): POD_DISRUPTION_BUDGET,
    ("networking.k8s.io/v1", "Ingress"): INGRESS,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): HORIZONTAL_POD_AUTOSCALER,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): SELF_SUBJECT_ACCESS_REVIEW,
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): SELF_SUBJECT_RULES_REVIEW,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): SELF_SUBJECT_REVIEW,
    ("authentication.k8s.io/v1", "TokenRequest"): TOKEN_REQUEST,
}

# runtime.Unknown is read directly in decode_request: typeMeta=1, raw=2, contentEncoding=3,
# contentType=4.
TYPE_META: Message = {1: F("apiVersion", STR), 2: F("kind", STR)}


class UnsupportedKind(ValueError):
    """A well-formed body of a kind this module has no table for (the server answers 415)."""


# --- the wire reader ------------------------------------------------------------------------

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5
Value = int | bytes


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """Return (value, next position) of the base-128 varint at ``pos``."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint longer than 10 bytes")


def read_fields(data: bytes) -> list[tuple[int, int, Value]]:
    """Split one message into (field number, wire type, value) triples: varints and fixed
    widths as ints, length-delimited fields as bytes."""
    fields: list[tuple[int, int, Value]] = []
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ValueError("field number 0")
        value: Value
        if wire == VARINT:
            value, pos = read_varint(data, pos)
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            if pos + width > len(data):
                raise ValueError("truncated fixed-width field")
            value = int.from_bytes(data[pos : pos + width], "little")
            pos += width
        elif wire == LEN:
            length, pos = read_varint(data, pos)
            if pos + length > len(data):
                raise ValueError(f"field {number} runs past the end of its message")
            value = data[pos : pos + length]
            pos += length
        else:
            raise ValueError(f"unsupported wire type {wire} (field {number})")
        fields.append((number, wire, value))
    return fields


# --- the table-driven decoder ---------------------------------------------------------------


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, wire: int, value: Value, where: str) -> Any:
    if kind in (INT, BOOL):
        if wire != VARINT or not isinstance(value, int):
            raise ValueError(f"{where}: expected a varint")
        return _signed(value) if kind == INT else value != 0
    if wire != LEN or not isinstance(value, bytes):
        raise ValueError(f"{where}: expected a length-delimited field")
    if kind == STR:
        try:
            return value.decode()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{where}: invalid UTF-8") from exc
    if kind == BYTES:
        return base64.b64encode(value).decode()
    if kind == QUANTITY:
        return _decode({1: F("string", STR)}, value, where, []).get("string", "0")
    if kind == TIME:
        parts = _decode({1: F("seconds", INT), 2: F("nanos", INT)}, value, where, [])
        if not parts:
            return None
        moment = datetime.fromtimestamp(parts.get("seconds", 0), tz=UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if kind == INT_OR_STR:
        parts = _decode(
            {1: F("type", INT), 2: F("intVal", INT), 3: F("strVal", STR)}, value, where, []
        )
        return parts.get("strVal", "") if parts.get("type") == 1 else parts.get("intVal", 0)
    raise AssertionError(f"unknown kind {kind}")


def _value(kind: Kind, wire: int, value: Value, where: str, unknown: list[str]) -> Any:
    if isinstance(kind, str):
        return _scalar(kind, wire, value, where)
    if wire != LEN or not isinstance(value, bytes):
        raise ValueError(f"{where}: expected an embedded message")
    return _decode(kind, value, where, unknown)


def _decode(message: Message, data: bytes, where: str, unknown: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, wire, value in read_fields(data):
        field = message.get(number)
        if field is None:
            unknown.append(f"{where}.{number}")
            continue
        here = f"{where}.{field.name}" if field.name else where
        if field.map:
            if wire != LEN or not isinstance(value, bytes):
                raise ValueError(f"{here}: expected a map entry")
            entry = {n: (w, v) for n, w, v in read_fields(value)}
            key = _scalar(STR, *entry[1], here) if 1 in entry else ""
            item = _value(field.kind, *entry[2], here, unknown) if 2 in entry else _empty(field)
            out.setdefault(field.name, {})[key] = item
        elif field.repeated:
            items = out.setdefault(field.name, [])
            if wire == LEN and field.kind == INT:  # packed
                pos, packed = 0, value
                assert isinstance(packed, bytes)
                while pos < len(packed):
                    number_value, pos = read_varint(packed, pos)
                    items.append(_signed(number_value))
            else:
                items.append(_value(field.kind, wire, value, here, unknown))
        elif field.inline:
            out.update(_value(field.kind, wire, value, here, unknown))
        else:
            out[field.name] = _value(field.kind, wire, value, here, unknown)
    for field in message.values():  # Go's omitempty, and null for absent non-omitempty lists
        if field.name not in out:
            if field.null:
                out[field.name] = None
        elif _omitted_when_zero(field) and out[field.name] in ("", 0, None):  # False == 0
            del out[field.name]
    return out


def _omitted_when_zero(field: F) -> bool:
    return field.kind in (STR, INT, BOOL, BYTES, TIME) and not (
        field.keep or field.repeated or field.map
    )


def _empty(field: F) -> Any:
    """The value of a map entry that carries no value field (the kind's zero value)."""
    return {STR: "", BYTES: "", INT: 0, BOOL: False, QUANTITY: "0"}.get(
        field.kind if isinstance(field.kind, str) else "", {}
    )


def decode_message(message: Message, data: bytes, where: str = "") -> dict[str, Any]:
    """Decode one protobuf message by its table; unknown fields are skipped and logged."""
    unknown: list[str] = []
    result = _decode(message, data, where, unknown)
    if unknown:
        log.debug("protobuf body: skipped unknown fields %s", ", ".join(unknown))
    return result


def decode_request(body: bytes) -> dict[str, Any]:
    """Decode a ``application/vnd.kubernetes.protobuf`` request body into the JSON object
    kubectl would have sent. Raises ValueError for a malformed body, and UnsupportedKind for a
    kind with no table here."""
    if not body.startswith(MAGIC):
        raise ValueError("the protobuf body does not start with the k8s\\x00 prefix")
    envelope = {number: value for number, _, value in read_fields(body[len(MAGIC) :])}
    if envelope.get(3):
        raise ValueError(f"unsupported protobuf contentEncoding {envelope[3]!r}")
    raw, type_meta = envelope.get(2, b""), envelope.get(1, b"")
    if not isinstance(raw, bytes) or not isinstance(type_meta, bytes):
        raise ValueError("malformed runtime.Unknown envelope")
    type_fields = decode_message(TYPE_META, type_meta, "TypeMeta")
    api_version, kind = type_fields.get("apiVersion", ""), type_fields.get("kind", "")
    message = KINDS.get((api_version, kind))
    if message is None:
        raise UnsupportedKind(f"no protobuf decoding for {kind or '?'} in {api_version or '?'}")
    return {"kind": kind, "apiVersion": api_version, **decode_message(message, raw, kind)}
