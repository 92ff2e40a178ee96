"""The protobuf messages of meta/v1 (k8s.io/apimachinery ``pkg/apis/meta/v1/generated.proto``)
and core/v1 (k8s.io/api ``core/v1/generated.proto``) that kubectl's bodies carry, as tables for
:mod:`kubelite.server.protobuf.decoder`: ObjectMeta, label selectors, the pod template, and the
core kinds ``kubectl create`` sends."""

from __future__ import annotations

from kubelite.server.protobuf.decoder import (
    BOOL,
    BYTES,
    INT,
    INT_OR_STR,
    QUANTITY,
    STR,
    TIME,
    F,
    Message,
)

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
