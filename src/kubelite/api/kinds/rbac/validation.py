"""Validation: Role, ClusterRole, RoleBinding, ClusterRoleBinding (pkg/apis/rbac/validation).

Internal rbac types carry no JSON tags, so a RoleRef in an error prints with Go's field names
(``{"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"r"}``), as kube prints it.
"""

from __future__ import annotations

from kubelite.api.errors import Cause
from kubelite.api.kinds.validation.fields import (
    Obj,
    Struct,
    as_dict,
    as_list,
    as_str,
    invalid,
    not_supported,
    required,
    selector_causes,
)
from kubelite.api.machinery.names import path_segment_errors, subdomain_errors

GROUP = "rbac.authorization.k8s.io"


def _rule_causes(rule: Obj, namespaced: bool, path: str) -> list[Cause]:
    """ValidatePolicyRule."""
    causes: list[Cause] = []
    if not as_list(rule.get("verbs")):
        causes.append(required(f"{path}.verbs", "verbs must contain at least one value"))
    urls = as_list(rule.get("nonResourceURLs"))
    if urls:
        if namespaced:
            causes.append(
                invalid(
                    f"{path}.nonResourceURLs",
                    urls,
                    "namespaced rules cannot apply to non-resource URLs",
                )
            )
        if any(as_list(rule.get(k)) for k in ("apiGroups", "resources", "resourceNames")):
            causes.append(
                invalid(
                    f"{path}.nonResourceURLs",
                    urls,
                    "rules cannot apply to both regular resources and non-resource URLs",
                )
            )
        return causes
    if not as_list(rule.get("apiGroups")):
        causes.append(
            required(f"{path}.apiGroups", "resource rules must supply at least one api group")
        )
    if not as_list(rule.get("resources")):
        causes.append(
            required(f"{path}.resources", "resource rules must supply at least one resource")
        )
    return causes


def validate_role(obj: Obj, old: Obj | None) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(as_list(obj.get("rules"))):
        causes += _rule_causes(as_dict(rule), True, f"rules[{i}]")
    return causes


def validate_cluster_role(obj: Obj, old: Obj | None) -> list[Cause]:
    causes: list[Cause] = []
    rules = as_list(obj.get("rules"))
    aggregation = obj.get("aggregationRule")
    # ValidateClusterRole (1.35+ declarative) requires rules; an aggregated role's rules are
    # filled by the controller, and kube's own aggregated roles are created with none. Keep the
    # long-standing behaviour: rules may be empty.
    for i, rule in enumerate(rules):
        causes += _rule_causes(as_dict(rule), False, f"rules[{i}]")
    if isinstance(aggregation, dict):
        selectors = as_list(aggregation.get("clusterRoleSelectors"))
        if not selectors:
            causes.append(required("aggregationRule.clusterRoleSelectors"))
        for i, selector in enumerate(selectors):
            causes += selector_causes(selector, f"aggregationRule.clusterRoleSelectors[{i}]")
    return causes


def _role_ref(binding: Obj) -> Obj:
    return as_dict(binding.get("roleRef"))


def _role_ref_value(ref: Obj) -> Struct:
    return Struct(
        APIGroup=as_str(ref.get("apiGroup")),
        Kind=as_str(ref.get("kind")),
        Name=as_str(ref.get("name")),
    )


def _subject_causes(subject: Obj, namespaced: bool, path: str) -> list[Cause]:
    """ValidateRoleBindingSubject."""
    causes: list[Cause] = []
    name, kind, group = (as_str(subject.get(k)) for k in ("name", "kind", "apiGroup"))
    if not name:
        causes.append(required(f"{path}.name"))
    if kind == "ServiceAccount":
        if name:
            causes += [invalid(f"{path}.name", name, m) for m in subdomain_errors(name)]
        if group:
            causes.append(not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not as_str(subject.get("namespace")):
            causes.append(required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        # SetDefaults_Subject fills the group of a User or Group subject given none
        if group != GROUP and "apiGroup" in subject:
            causes.append(not_supported(f"{path}.apiGroup", group, [GROUP]))
    else:
        causes.append(not_supported(f"{path}.kind", kind, ["ServiceAccount", "User", "Group"]))
    return causes


def _binding_causes(obj: Obj, old: Obj | None, kinds: list[str], namespaced: bool) -> list[Cause]:
    ref = _role_ref(obj)
    causes: list[Cause] = []
    if as_str(ref.get("apiGroup")) != GROUP:
        causes.append(not_supported("roleRef.apiGroup", as_str(ref.get("apiGroup")), [GROUP]))
    if as_str(ref.get("kind")) not in kinds:
        causes.append(not_supported("roleRef.kind", as_str(ref.get("kind")), kinds))
    name = as_str(ref.get("name"))
    if not name:
        causes.append(required("roleRef.name"))
    else:
        causes += [invalid("roleRef.name", name, m) for m in path_segment_errors(name)]
    for i, subject in enumerate(as_list(obj.get("subjects"))):
        causes += _subject_causes(as_dict(subject), namespaced, f"subjects[{i}]")
    if old is not None and _role_ref_value(_role_ref(old)) != _role_ref_value(ref):
        causes.append(invalid("roleRef", _role_ref_value(ref), "cannot change roleRef"))
    return causes


def validate_role_binding(obj: Obj, old: Obj | None) -> list[Cause]:
    return _binding_causes(obj, old, ["Role", "ClusterRole"], True)


def validate_cluster_role_binding(obj: Obj, old: Obj | None) -> list[Cause]:
    return _binding_causes(obj, old, ["ClusterRole"], False)
