"""The protobuf messages of the kinds of the named API groups that kubectl sends as protobuf, as
tables for :mod:`kubelite.server.protobuf.decoder`, after k8s.io/api's ``generated.proto`` of
``apps/v1``, ``batch/v1``, ``rbac/v1``, ``scheduling/v1``, ``policy/v1``, ``networking/v1``,
``autoscaling/v2``, ``authorization/v1`` and ``authentication/v1``."""

from __future__ import annotations

from kubelite.server.protobuf.core import (
    LABEL_SELECTOR,
    OBJECT_META,
    POD_TEMPLATE_SPEC,
)
from kubelite.server.protobuf.decoder import (
    BOOL,
    INT,
    INT_OR_STR,
    QUANTITY,
    STR,
    TIME,
    F,
    Message,
)

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
