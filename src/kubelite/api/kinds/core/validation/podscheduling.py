"""Validation: where and how a pod is scheduled, in a pod spec (pkg/apis/core/validation).

Sources: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go``: ``validateAffinity``
(``ValidateNodeSelector``, ``ValidateNodeSelectorRequirement``,
``ValidateNodeFieldSelectorRequirement``, ``ValidatePreferredSchedulingTerms``,
``validatePodAffinityTerm``, ``validateMatchLabelKeysAndMismatchLabelKeys``),
``validateReadinessGates``, ``validateSchedulingGates``, ``validateTopologySpreadConstraints``,
``ValidateTolerations``, ``ValidatePodSpec``'s priorityClassName and runtimeClassName checks and
``ValidatePreemptionPolicy``; apimachinery's ``ValidateLabelSelector``; and the pod strategy's
``mutatePodAffinity`` (pkg/registry/core/pod/strategy.go). DNS and host names:
:mod:`poddns`."""

from __future__ import annotations

from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.core.validation import poddns
from kubelite.api.kinds.validation.fields import (
    Typed,
    as_dict,
    as_int,
    as_list,
    as_str,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    selector_causes,
    set_operator_causes,
)
from kubelite.api.machinery.metavalidation import (
    label_value_errors,
    qualified_name_errors,
    subdomain_errors,
)
from kubelite.api.machinery.names import label_errors

Obj = dict[str, Any]

_NOT_POSITIVE = "must be greater than zero"
_INVALID_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_WEIGHT = "must be in the range 1-100"
_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def _label_name(name: str, path: str) -> list[Cause]:
    """ValidateLabelName / ValidateQualifiedName."""
    return [invalid(path, name, m) for m in qualified_name_errors(name)]


# -- node affinity ---------------------------------------------------------------------------


def _node_requirement(req: Obj, path: str) -> list[Cause]:
    """ValidateNodeSelectorRequirement."""
    op, values = as_str(req.get("operator")), as_list(req.get("values"))
    causes = set_operator_causes(op, values, f"{path}.values")
    if causes is None:
        causes = []
        if op not in ("Gt", "Lt"):
            causes.append(invalid(f"{path}.operator", Typed(op), "not a valid selector operator"))
        elif len(values) != 1:
            detail = "must be specified single value when `operator` is 'Lt' or 'Gt'"
            causes.append(required(f"{path}.values", detail))
    return causes + _label_name(as_str(req.get("key")), f"{path}.key")


def _node_field_requirement(req: Obj, path: str) -> list[Cause]:
    """ValidateNodeFieldSelectorRequirement: only ``metadata.name``, In/NotIn one value."""
    causes: list[Cause] = []
    op, values = as_str(req.get("operator")), as_list(req.get("values"))
    if op in ("In", "NotIn"):
        if len(values) != 1:
            causes.append(
                required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector",
                )
            )
    else:
        causes.append(invalid(f"{path}.operator", Typed(op), "not a valid selector operator"))
    key = as_str(req.get("key"))
    if key != "metadata.name":
        causes.append(invalid(f"{path}.key", key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            if isinstance(value, str):
                causes += [
                    invalid(f"{path}.values[{i}]", value, m) for m in subdomain_errors(value)
                ]
    return causes


def _node_term(term: Obj, path: str) -> list[Cause]:
    """ValidateNodeSelectorTerm."""
    causes: list[Cause] = []
    for j, req in enumerate(as_list(term.get("matchExpressions"))):
        causes += _node_requirement(as_dict(req), f"{path}.matchExpressions[{j}]")
    for j, req in enumerate(as_list(term.get("matchFields"))):
        causes += _node_field_requirement(as_dict(req), f"{path}.matchFields[{j}]")
    return causes


def node_selector_causes(selector: Obj, path: str) -> list[Cause]:
    """ValidateNodeSelector."""
    terms = as_list(selector.get("nodeSelectorTerms"))
    at = f"{path}.nodeSelectorTerms"
    if not terms:
        return [required(at, "must have at least one node selector term")]
    causes: list[Cause] = []
    for i, term in enumerate(terms):
        causes += _node_term(as_dict(term), f"{at}[{i}]")
    return causes


def _weight(term: Obj, path: str) -> list[Cause]:
    weight = as_int(term.get("weight"))
    if weight is not None and not 1 <= weight <= 100:
        return [invalid(f"{path}.weight", weight, _WEIGHT)]
    if weight is None:  # an absent weight is Go's 0
        return [invalid(f"{path}.weight", 0, _WEIGHT)]
    return []


def _node_affinity(affinity: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    required_terms = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required_terms, dict):
        at = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
        causes += node_selector_causes(required_terms, at)
    at = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(
        as_list(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
    ):
        term = as_dict(raw)
        causes += _weight(term, f"{at}[{i}]")
        causes += _node_term(as_dict(term.get("preference")), f"{at}[{i}].preference")
    return causes


# -- pod affinity ----------------------------------------------------------------------------


def _label_keys(keys: list[Any], selector: Any, path: str) -> list[Cause]:
    """validateLabelKeys."""
    if not keys:
        return []
    if not isinstance(selector, dict):
        return [forbidden(path, "must not be specified when labelSelector is not set")]
    causes: list[Cause] = []
    for i, key in enumerate(keys):
        causes += _label_name(as_str(key), f"{path}[{i}]")
    return causes


def _match_label_keys(term: Obj, path: str) -> list[Cause]:
    """validateMatchLabelKeysAndMismatchLabelKeys (kube's path for a key in both the keys and
    the selector indexes the term itself)."""
    match = [as_str(k) for k in as_list(term.get("matchLabelKeys"))]
    mismatch = [as_str(k) for k in as_list(term.get("mismatchLabelKeys"))]
    selector = term.get("labelSelector")
    causes = _label_keys(match, selector, f"{path}.matchLabelKeys")
    causes += _label_keys(mismatch, selector, f"{path}.mismatchLabelKeys")
    if isinstance(selector, dict):
        index = {key: i for i, key in enumerate(match)}
        seen = set(as_dict(selector.get("matchLabels")))
        for expr in as_list(selector.get("matchExpressions")):
            key = as_str(as_dict(expr).get("key"))
            if key in index and key in seen:
                causes.append(
                    invalid(
                        f"{path}[{index[key]}]",
                        key,
                        "exists in both matchLabelKeys and labelSelector",
                    )
                )
            seen.add(key)
    for i, key in enumerate(match):
        if key in mismatch:
            causes.append(
                invalid(
                    f"{path}.matchLabelKeys[{i}]",
                    key,
                    "exists in both matchLabelKeys and mismatchLabelKeys",
                )
            )
    return causes


def _pod_affinity_term(term: Obj, path: str) -> list[Cause]:
    """validatePodAffinityTerm."""
    causes = selector_causes(term.get("labelSelector"), f"{path}.labelSelector")
    causes += selector_causes(term.get("namespaceSelector"), f"{path}.namespaceSelector")
    for name in as_list(term.get("namespaces")):
        if isinstance(name, str):
            causes += [invalid(f"{path}.namespace", name, m) for m in label_errors(name)]
    causes += _match_label_keys(term, path)
    key = as_str(term.get("topologyKey"))
    if not key:
        causes.append(required(f"{path}.topologyKey", "can not be empty"))
    return causes + _label_name(key, f"{path}.topologyKey")


def _pod_affinity(affinity: Obj, path: str) -> list[Cause]:
    """validatePodAffinity / validatePodAntiAffinity."""
    causes: list[Cause] = []
    at = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    for i, term in enumerate(
        as_list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
    ):
        causes += _pod_affinity_term(as_dict(term), f"{at}[{i}]")
    at = f"{path}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, raw in enumerate(
        as_list(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))
    ):
        weighted = as_dict(raw)
        causes += _weight(weighted, f"{at}[{i}]")
        causes += _pod_affinity_term(
            as_dict(weighted.get("podAffinityTerm")), f"{at}[{i}].podAffinityTerm"
        )
    return causes


def affinity_causes(affinity: Any, path: str) -> list[Cause]:
    """validateAffinity."""
    aff = as_dict(affinity)
    causes: list[Cause] = []
    if isinstance(aff.get("nodeAffinity"), dict):
        causes += _node_affinity(aff["nodeAffinity"], f"{path}.nodeAffinity")
    for key in ("podAffinity", "podAntiAffinity"):
        if isinstance(aff.get(key), dict):
            causes += _pod_affinity(aff[key], f"{path}.{key}")
    return causes


def apply_match_label_keys(pod: Obj) -> None:
    """The pod strategy's mutatePodAffinity (PrepareForCreate): each pod affinity term's
    ``matchLabelKeys`` (``mismatchLabelKeys``) the pod has a label for become ``In`` (``NotIn``)
    requirements of its labelSelector."""
    labels = as_dict(as_dict(pod.get("metadata")).get("labels"))
    affinity = as_dict(as_dict(pod.get("spec")).get("affinity"))
    for kind in ("podAffinity", "podAntiAffinity"):
        rules = as_dict(affinity.get(kind))
        terms = [as_dict(w).get("podAffinityTerm") for w in as_list(rules.get(_PREFERRED))]
        for term in terms + as_list(rules.get(_REQUIRED)):
            selector = as_dict(term).get("labelSelector")
            if not isinstance(selector, dict):
                continue
            for field_name, op in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
                for key in as_list(as_dict(term).get(field_name)):
                    if isinstance(key, str) and key in labels:
                        exprs = selector.setdefault("matchExpressions", [])
                        exprs.append({"key": key, "operator": op, "values": [labels[key]]})


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


# -- DNS, gates, spread ------------------------------------------------------------------------


def gates_causes(spec: Obj, path: str) -> list[Cause]:
    """validateReadinessGates and validateSchedulingGates."""
    causes: list[Cause] = []
    for i, gate in enumerate(as_list(spec.get("readinessGates"))):
        kind = as_str(as_dict(gate).get("conditionType"))
        causes += _label_name(kind, f"{path}.readinessGates[{i}].conditionType")
    seen: set[str] = set()
    for i, gate in enumerate(as_list(spec.get("schedulingGates"))):
        name = as_str(as_dict(gate).get("name"))
        at = f"{path}.schedulingGates[{i}]"
        causes += _label_name(name, at)
        if name in seen:
            causes.append(duplicate(at, name))
        seen.add(name)
    return causes


def spread_causes(constraints: Any, path: str) -> list[Cause]:
    """validateTopologySpreadConstraints."""
    items = [as_dict(c) for c in as_list(constraints)]
    causes: list[Cause] = []
    for i, item in enumerate(items):
        at = f"{path}[{i}]"
        skew = as_int(item.get("maxSkew")) or 0
        if skew <= 0:
            causes.append(invalid(f"{at}.maxSkew", skew, _NOT_POSITIVE))
        key, action = as_str(item.get("topologyKey")), as_str(item.get("whenUnsatisfiable"))
        if not key:
            causes.append(required(f"{at}.topologyKey", "can not be empty"))
        if action not in ("DoNotSchedule", "ScheduleAnyway"):
            causes.append(
                not_supported(
                    f"{at}.whenUnsatisfiable", Typed(action), ["DoNotSchedule", "ScheduleAnyway"]
                )
            )
        for rest in items[i + 1 :]:
            if (
                as_str(rest.get("topologyKey")) == key
                and as_str(rest.get("whenUnsatisfiable")) == action
            ):
                causes.append(
                    duplicate(f"{at}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {action}}}")
                )
                break
        domains = as_int(item.get("minDomains"))
        if domains is not None:
            if domains <= 0:
                causes.append(invalid(f"{at}.minDomains", domains, _NOT_POSITIVE))
            if action != "DoNotSchedule":
                causes.append(
                    invalid(
                        f"{at}.minDomains",
                        domains,
                        f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}",
                    )
                )
        for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            value = item.get(policy)
            if isinstance(value, str) and value not in ("Honor", "Ignore"):
                causes.append(not_supported(f"{at}.{policy}", Typed(value), ["Honor", "Ignore"]))
        causes += _spread_label_keys(item, f"{at}.matchLabelKeys")
        causes += selector_causes(item.get("labelSelector"), f"{at}.labelSelector")
    return causes


def _spread_label_keys(item: Obj, path: str) -> list[Cause]:
    """validateMatchLabelKeysInTopologySpread."""
    keys = [as_str(k) for k in as_list(item.get("matchLabelKeys"))]
    if not keys:
        return []
    selector = item.get("labelSelector")
    causes: list[Cause] = []
    if not isinstance(selector, dict):
        causes.append(forbidden(path, "must not be specified when labelSelector is not set"))
    sel = as_dict(selector)
    taken = set(as_dict(sel.get("matchLabels")))
    taken |= {as_str(as_dict(e).get("key")) for e in as_list(sel.get("matchExpressions"))}
    for i, key in enumerate(keys):
        causes += _label_name(key, f"{path}[{i}]")
        if key in taken:
            causes.append(
                invalid(f"{path}[{i}]", key, "exists in both matchLabelKeys and labelSelector")
            )
    return causes


def placement_causes(spec: Obj, path: str) -> list[Cause]:
    """What ValidatePodSpec checks from ``affinity`` to ``topologySpreadConstraints``."""
    causes = affinity_causes(spec.get("affinity"), f"{path}.affinity")
    causes += poddns.dns_config_causes(spec, path)
    causes += gates_causes(spec, path)
    return causes + spread_causes(
        spec.get("topologySpreadConstraints"), f"{path}.topologySpreadConstraints"
    )


# -- tolerations, host aliases, priority -------------------------------------------------------


def tolerations_causes(tolerations: Any, path: str) -> list[Cause]:
    """ValidateTolerations."""
    causes: list[Cause] = []
    for i, raw in enumerate(as_list(tolerations)):
        tol, at = as_dict(raw), f"{path}[{i}]"
        key, op = as_str(tol.get("key")), as_str(tol.get("operator"))
        value, effect = as_str(tol.get("value")), as_str(tol.get("effect"))
        if key:
            causes += _label_name(key, f"{at}.key")
        if not key and op != "Exists":
            causes.append(
                invalid(
                    f"{at}.operator",
                    Typed(op),
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            causes.append(
                invalid(
                    f"{at}.effect",
                    Typed(effect),
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        if op in ("Equal", ""):
            errs = label_value_errors(value)
            if errs:
                causes.append(invalid(f"{at}.operator", value, ";".join(errs)))
        elif op == "Exists":
            if value:
                causes.append(
                    invalid(
                        f"{at}.operator", value, "value must be empty when `operator` is 'Exists'"
                    )
                )
        else:
            causes.append(not_supported(f"{at}.operator", Typed(op), ["Equal", "Exists"]))
        if effect and effect not in _EFFECTS:
            causes.append(not_supported(f"{at}.effect", Typed(effect), _EFFECTS))
    return causes


def tail_causes(spec: Obj, path: str) -> list[Cause]:
    """What ValidatePodSpec checks from ``tolerations`` to ``preemptionPolicy``."""
    causes = tolerations_causes(spec.get("tolerations"), f"{path}.tolerations")
    causes += poddns.host_aliases_causes(spec.get("hostAliases"), f"{path}.hostAliases")
    name = as_str(spec.get("priorityClassName"))
    if name:
        at = f"{path}.priorityClassName"
        causes += [invalid(at, name, m) for m in subdomain_errors(name)]
    runtime = spec.get("runtimeClassName")
    if isinstance(runtime, str):
        at = f"{path}.runtimeClassName"
        causes += [invalid(at, runtime, m) for m in subdomain_errors(runtime)]
    policy = spec.get("preemptionPolicy")
    if isinstance(policy, str):
        at = f"{path}.preemptionPolicy"
        if not policy:
            causes.append(required(at))
        elif policy not in ("PreemptLowerPriority", "Never"):
            causes.append(not_supported(at, Typed(policy), ["PreemptLowerPriority", "Never"]))
    return causes


__all__ = [
    "affinity_causes",
    "apply_match_label_keys",
    "node_selector_causes",
    "placement_causes",
    "tail_causes",
    "tolerations_causes",
]
