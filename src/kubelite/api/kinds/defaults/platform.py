"""Defaults: the other groups (their pkg/apis/<group>/<version>/defaults.go): autoscaling
(HorizontalPodAutoscaler, v2 and v1), rbac (bindings' roleRef and subjects), storage
(StorageClass, CSIDriver), scheduling (PriorityClass), admissionregistration (webhook
configurations, Validating and MutatingAdmissionPolicy), flowcontrol (FlowSchema,
PriorityLevelConfiguration).

PodDisruptionBudget has none: pkg/apis/policy/v1 has no defaults.go."""

from __future__ import annotations

import copy
from typing import Any

from kubelite.api.kinds.defaults.pods import (
    ensure,
    items,
    set_if_empty,
    set_if_nil,
    set_if_zero,
    sub,
)
from kubelite.api.kinds.rules import Defaulter, Kind, Obj

# -- autoscaling -----------------------------------------------------------------------------------

DEFAULT_CPU_UTILIZATION = 80
_SCALE_UP: Obj = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
#: scale-down stabilization stays unset: the controller's flag decides it
_SCALE_DOWN: Obj = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


def _scaling_rules(given: Any, defaults: Obj) -> Any:
    """GenerateHPAScale{Up,Down}Rules: the defaults, with every field the rules set."""
    if given is not None and not isinstance(given, dict):
        return given
    rules = copy.deepcopy(defaults)
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
        if given is not None and given.get(key) is not None:
            rules[key] = given[key]
    return rules


def default_hpa(obj: Obj) -> None:
    """SetDefaults_HorizontalPodAutoscaler: minReplicas 1 at both versions; at v2, a CPU
    utilization metric (80%) when none is given and the behavior's rules filled in."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    set_if_nil(spec, "minReplicas", 1)
    if obj.get("apiVersion") != "autoscaling/v2":
        return
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {
                        "type": "Utilization",
                        "averageUtilization": DEFAULT_CPU_UTILIZATION,
                    },
                },
            }
        ]
    behavior = sub(spec, "behavior")
    if behavior is not None:
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), _SCALE_UP)
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), _SCALE_DOWN)


# -- rbac ------------------------------------------------------------------------------------------

RBAC_GROUP = "rbac.authorization.k8s.io"


def default_binding(obj: Obj) -> None:
    """SetDefaults_{Cluster,}RoleBinding (roleRef.apiGroup) and SetDefaults_Subject (a User's
    or Group's apiGroup is rbac's, a ServiceAccount's is core's)."""
    role_ref = sub(obj, "roleRef")
    if role_ref is not None:
        set_if_empty(role_ref, "apiGroup", RBAC_GROUP)
    for subject in items(obj, "subjects"):
        if subject.get("apiGroup") in (None, ""):
            kind = subject.get("kind")
            if kind in ("User", "Group"):
                subject["apiGroup"] = RBAC_GROUP
            elif kind == "ServiceAccount":
                subject.pop("apiGroup", None)  # core's group: "", which Go leaves out


# -- storage, scheduling ---------------------------------------------------------------------------


def default_storage_class(obj: Obj) -> None:
    """SetDefaults_StorageClass."""
    set_if_nil(obj, "reclaimPolicy", "Delete")
    set_if_nil(obj, "volumeBindingMode", "Immediate")


def default_csi_driver(obj: Obj) -> None:
    """SetDefaults_CSIDriver (SELinuxMountReadWriteOncePod is on: seLinuxMount false)."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    set_if_nil(spec, "attachRequired", True)
    set_if_nil(spec, "podInfoOnMount", False)
    set_if_nil(spec, "storageCapacity", False)
    set_if_nil(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType")
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    set_if_nil(spec, "requiresRepublish", False)
    set_if_nil(spec, "seLinuxMount", False)


def default_priority_class(obj: Obj) -> None:
    """SetDefaults_PriorityClass."""
    set_if_nil(obj, "preemptionPolicy", "PreemptLowerPriority")


# -- admissionregistration -------------------------------------------------------------------------


def _default_rules(rules: list[Obj]) -> None:
    """SetDefaults_Rule: scope ``*``."""
    for rule in rules:
        set_if_nil(rule, "scope", "*")


def _default_webhook(webhook: Obj, mutating: bool) -> None:
    """SetDefaults_{Validating,Mutating}Webhook, its rules and its service's port."""
    set_if_nil(webhook, "failurePolicy", "Fail")
    set_if_nil(webhook, "matchPolicy", "Equivalent")
    set_if_nil(webhook, "namespaceSelector", {})
    set_if_nil(webhook, "objectSelector", {})
    set_if_nil(webhook, "timeoutSeconds", 10)
    if mutating:
        set_if_nil(webhook, "reinvocationPolicy", "Never")
    _default_rules(items(webhook, "rules"))
    service = sub(sub(webhook, "clientConfig"), "service")
    if service is not None:
        set_if_nil(service, "port", 443)


def default_validating_webhooks(obj: Obj) -> None:
    for webhook in items(obj, "webhooks"):
        _default_webhook(webhook, mutating=False)


def default_mutating_webhooks(obj: Obj) -> None:
    for webhook in items(obj, "webhooks"):
        _default_webhook(webhook, mutating=True)


def _default_match_resources(match: Obj | None) -> None:
    """SetDefaults_MatchResources."""
    if match is None:
        return
    set_if_nil(match, "matchPolicy", "Equivalent")
    set_if_nil(match, "namespaceSelector", {})
    set_if_nil(match, "objectSelector", {})
    _default_rules(items(match, "resourceRules"))
    _default_rules(items(match, "excludeResourceRules"))


def default_validating_admission_policy(obj: Obj) -> None:
    """SetDefaults_ValidatingAdmissionPolicySpec and its match constraints."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    set_if_nil(spec, "failurePolicy", "Fail")
    _default_match_resources(sub(spec, "matchConstraints"))


def default_validating_admission_policy_binding(obj: Obj) -> None:
    _default_match_resources(sub(sub(obj, "spec"), "matchResources"))


def default_mutating_admission_policy(obj: Obj) -> None:
    """SetDefaults_MutatingAdmissionPolicySpec and its match constraints."""
    default_validating_admission_policy(obj)  # the same two rules


# -- flowcontrol -----------------------------------------------------------------------------------


def default_flow_schema(obj: Obj) -> None:
    """SetDefaults_FlowSchemaSpec: matchingPrecedence 1000."""
    spec = sub(obj, "spec")
    if spec is not None:
        set_if_zero(spec, "matchingPrecedence", 1000)


def default_priority_level(obj: Obj) -> None:
    """SetDefaults_{Limited,Exempt}PriorityLevelConfiguration and SetDefaults_
    QueuingConfiguration."""
    spec = sub(obj, "spec")
    limited = sub(spec, "limited")
    if limited is not None:
        set_if_nil(limited, "nominalConcurrencyShares", 30)
        set_if_nil(limited, "lendablePercent", 0)
        queuing = sub(sub(limited, "limitResponse"), "queuing")
        if queuing is not None:
            set_if_zero(queuing, "handSize", 8)
            set_if_zero(queuing, "queues", 64)
            set_if_zero(queuing, "queueLengthLimit", 50)
    exempt = sub(spec, "exempt")
    if exempt is not None:
        set_if_nil(exempt, "nominalConcurrencyShares", 0)
        set_if_nil(exempt, "lendablePercent", 0)


ADMISSION = "admissionregistration.k8s.io"
DEFAULTERS: dict[Kind, Defaulter] = {
    ("autoscaling", "HorizontalPodAutoscaler"): default_hpa,
    ("rbac.authorization.k8s.io", "RoleBinding"): default_binding,
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): default_binding,
    ("storage.k8s.io", "StorageClass"): default_storage_class,
    ("storage.k8s.io", "CSIDriver"): default_csi_driver,
    ("scheduling.k8s.io", "PriorityClass"): default_priority_class,
    (ADMISSION, "ValidatingWebhookConfiguration"): default_validating_webhooks,
    (ADMISSION, "MutatingWebhookConfiguration"): default_mutating_webhooks,
    (ADMISSION, "ValidatingAdmissionPolicy"): default_validating_admission_policy,
    (ADMISSION, "ValidatingAdmissionPolicyBinding"): default_validating_admission_policy_binding,
    (ADMISSION, "MutatingAdmissionPolicy"): default_mutating_admission_policy,
    (ADMISSION, "MutatingAdmissionPolicyBinding"): default_validating_admission_policy_binding,
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): default_flow_schema,
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): default_priority_level,
}
