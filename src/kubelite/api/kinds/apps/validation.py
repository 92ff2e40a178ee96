"""Validation: apps/v1 workloads: selector required and matching the template, immutable selector,
replicas, update strategies (pkg/apis/apps/validation; the selector's immutability is
pkg/registry/apps/*/strategy.go ``ValidateUpdate`` for apps/v1).

An absent field that kube's defaulting always fills (``SetDefaults_*`` runs before validation) is
validated as its default, so these rules hold whether or not the defaulters ran first.
"""

from __future__ import annotations

import re
from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.core.validation import pods
from kubelite.api.kinds.validation.fields import (
    IMMUTABLE,
    Obj,
    Struct,
    Typed,
    as_dict,
    forbidden,
    invalid,
    label_causes,
    mismatch,
    nonnegative,
    not_supported,
    required,
    selector_causes,
    selector_empty,
    selector_matches,
    selector_mismatch,
    selector_parses,
    selector_value,
)

_PERCENT = re.compile(r"[0-9]+%")
PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


def int_or_percent_value(value: Any) -> int:
    """getIntOrPercentValue: a percent's number, an int's value, 0 for anything else."""
    if isinstance(value, str):
        return int(value[:-1]) if _PERCENT.fullmatch(value) else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _int_or_string(value: Any) -> Any:
    return value if value is not None else 0


# -- workloads --------------------------------------------------------------------------------


def _template_causes(
    spec: Obj, selector_ok: bool, kind_word: str, *, check_pod_spec: bool = True
) -> list[Cause]:
    """ValidatePodTemplateSpecForReplicaSet and the template checks every apps kind shares."""
    template = as_dict(spec.get("template"))
    meta = as_dict(template.get("metadata"))
    causes: list[Cause] = []
    selector = spec.get("selector")
    if selector_ok and mismatch(selector, meta.get("labels")):
        causes.append(selector_mismatch(meta.get("labels")))
    if check_pod_spec:
        causes += label_causes(meta.get("labels"), "spec.template.labels")
        causes += pods.pod_spec_causes(template.get("spec") or {}, "spec.template.spec")
    causes += _restart_always(template, kind_word)
    return causes


def _restart_always(template: Obj, kind_word: str) -> list[Cause]:
    pod = as_dict(template.get("spec"))
    causes: list[Cause] = []
    policy = pod.get("restartPolicy") or "Always"
    if policy != "Always":
        causes.append(not_supported("spec.template.spec.restartPolicy", Typed(policy), ["Always"]))
    if pod.get("activeDeadlineSeconds") is not None:
        causes.append(
            forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind_word} is not Supported",
            )
        )
    return causes


def _selector_block(spec: Obj, word: str) -> tuple[list[Cause], bool]:
    """The selector rules of Deployment, ReplicaSet and StatefulSet: required, valid, not empty;
    and whether LabelSelectorAsSelector succeeds."""
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        return [required("spec.selector")], True  # a nil selector converts to Nothing()
    causes = selector_causes(selector, "spec.selector")
    if selector_empty(selector):
        causes.append(invalid("spec.selector", selector_value(selector), word))
    return causes, selector_parses(selector)


def _immutable_selector(new: Obj, old: Obj | None) -> list[Cause]:
    if old is None:
        return []
    a, b = as_dict(new.get("spec")).get("selector"), as_dict(old.get("spec")).get("selector")
    if selector_value(a) != selector_value(b) or (a is None) != (b is None):
        value = selector_value(a) if isinstance(a, dict) else None
        return [invalid("spec.selector", value, IMMUTABLE)]
    return []


def _rolling_deployment(strategy: Obj) -> list[Cause]:
    path = "spec.strategy"
    stype = strategy.get("type") or "RollingUpdate"
    rolling = strategy.get("rollingUpdate")
    if stype == "Recreate":
        if rolling is not None:
            return [
                forbidden(
                    f"{path}.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            ]
        return []
    if stype == "RollingUpdate":
        ru = as_dict(rolling)
        unavailable = ru.get("maxUnavailable", "25%")
        surge = ru.get("maxSurge", "25%")
        at = f"{path}.rollingUpdate"
        causes = _positive_int_or_percent(unavailable, f"{at}.maxUnavailable")
        causes += _positive_int_or_percent(surge, f"{at}.maxSurge")
        if int_or_percent_value(unavailable) == 0 and int_or_percent_value(surge) == 0:
            causes.append(
                invalid(
                    f"{at}.maxUnavailable",
                    _int_or_string(unavailable),
                    "may not be 0 when `maxSurge` is 0",
                )
            )
        causes += _not_over_100(unavailable, f"{at}.maxUnavailable")
        return causes
    value = Struct(Type=stype, RollingUpdate=_go_rolling(rolling))
    return [not_supported(path, value, ["Recreate", "RollingUpdate"])]


def _go_rolling(rolling: Any) -> Any:
    if not isinstance(rolling, dict):
        return None
    return Struct(
        MaxUnavailable=_int_or_string(rolling.get("maxUnavailable")),
        MaxSurge=_int_or_string(rolling.get("maxSurge")),
    )


def _positive_int_or_percent(value: Any, path: str) -> list[Cause]:
    """ValidatePositiveIntOrPercent (the format and sign, not the 100% bound)."""
    if isinstance(value, str):
        if not _PERCENT.fullmatch(value):
            return [invalid(path, Typed(value), PERCENT_MESSAGE)]
        return []
    return nonnegative(value, path)


def _not_over_100(value: Any, path: str) -> list[Cause]:
    if isinstance(value, str) and _PERCENT.fullmatch(value) and int(value[:-1]) > 100:
        return [invalid(path, Typed(value), "must not be greater than 100%")]
    return []


def validate_deployment(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes = nonnegative(spec.get("replicas"), "spec.replicas")
    block, ok = _selector_block(spec, "empty selector is invalid for deployment")
    causes += block
    if not ok:
        causes.append(
            invalid("spec.selector", selector_value(spec.get("selector")), "invalid label selector")
        )
    else:
        causes += _template_causes(spec, True, "ReplicaSet")
    causes += _rolling_deployment(as_dict(spec.get("strategy")))
    min_ready = spec.get("minReadySeconds")
    causes += nonnegative(min_ready, "spec.minReadySeconds")
    causes += nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    deadline = spec.get("progressDeadlineSeconds")
    if isinstance(deadline, int) and not isinstance(deadline, bool):
        causes += nonnegative(deadline, "spec.progressDeadlineSeconds")
        ready = min_ready if isinstance(min_ready, int) else 0
        if deadline <= ready:
            causes.append(
                invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
    return causes + _immutable_selector(obj, old)


def validate_replicaset(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes = nonnegative(spec.get("replicas"), "spec.replicas")
    causes += nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    # kube's text says "deployment" for ReplicaSets too (ValidateReplicaSetSpec)
    block, ok = _selector_block(spec, "empty selector is invalid for deployment")
    causes += block
    if not ok:
        causes.append(
            invalid("spec.selector", selector_value(spec.get("selector")), "invalid label selector")
        )
    else:
        causes += _template_causes(spec, True, "ReplicaSet")
    return causes + _immutable_selector(obj, old)


def _daemonset_strategy(strategy: Obj) -> list[Cause]:
    path = "spec.updateStrategy"
    stype = strategy.get("type") or "RollingUpdate"
    if stype == "OnDelete":
        return []
    if stype == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        ru = as_dict(rolling) if rolling is not None else {"maxUnavailable": 1, "maxSurge": 0}
        at = f"{path}.rollingUpdate"
        unavailable = ru.get("maxUnavailable", 1)
        surge = ru.get("maxSurge", 0)
        causes = _positive_int_or_percent(unavailable, f"{at}.maxUnavailable")
        causes += _positive_int_or_percent(surge, f"{at}.maxSurge")
        causes += _not_over_100(unavailable, f"{at}.maxUnavailable")
        causes += _not_over_100(surge, f"{at}.maxSurge")
        has_unavailable = int_or_percent_value(unavailable) != 0
        has_surge = int_or_percent_value(surge) != 0
        if has_unavailable and has_surge:
            causes.append(
                invalid(
                    f"{at}.maxSurge",
                    _int_or_string(surge),
                    "may not be set when maxUnavailable is non-zero",
                )
            )
        elif not has_unavailable and not has_surge:
            causes.append(required(f"{at}.maxUnavailable", "cannot be 0 when maxSurge is 0"))
        return causes
    value = Struct(Type=stype, RollingUpdate=_go_rolling(strategy.get("rollingUpdate")))
    return [not_supported(path, value, ["RollingUpdate", "OnDelete"])]


def validate_daemonset(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    selector = spec.get("selector")
    causes = selector_causes(selector, "spec.selector") if isinstance(selector, dict) else []
    template = as_dict(spec.get("template"))
    labels = as_dict(template.get("metadata")).get("labels")
    # a nil selector converts to Nothing(), which matches no labels
    if not isinstance(selector, dict) or (
        selector_parses(selector) and not selector_matches(selector, labels)
    ):
        causes.append(selector_mismatch(labels))
    if isinstance(selector, dict) and selector_empty(selector):
        causes.append(
            invalid(
                "spec.selector", selector_value(selector), "empty selector is invalid for daemonset"
            )
        )
    causes += label_causes(labels, "spec.template.labels")
    causes += pods.pod_spec_causes(template.get("spec") or {}, "spec.template.spec")
    causes += _restart_always(template, "DaemonSet")
    causes += nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    causes += nonnegative(spec.get("templateGeneration"), "spec.templateGeneration")
    causes += _daemonset_strategy(as_dict(spec.get("updateStrategy")))
    causes += nonnegative(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit")
    return causes + _immutable_selector(obj, old)


_STATEFULSET_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)


def _statefulset_strategy(strategy: Obj) -> list[Cause]:
    path = "spec.updateStrategy"
    stype = strategy.get("type") or "RollingUpdate"
    rolling = strategy.get("rollingUpdate")
    if stype == "OnDelete":
        if rolling is not None:
            value = Struct(
                Partition=as_dict(rolling).get("partition", 0),
                MaxUnavailable=as_dict(rolling).get("maxUnavailable"),
            )
            return [
                invalid(
                    f"{path}.rollingUpdate",
                    value,
                    "only allowed for updateStrategy 'RollingUpdate'",
                )
            ]
        return []
    if stype == "RollingUpdate":
        if rolling is None:
            return []
        ru, at = as_dict(rolling), f"{path}.rollingUpdate"
        causes = nonnegative(ru.get("partition", 0), f"{at}.partition")
        unavailable = ru.get("maxUnavailable")
        if unavailable is not None:
            causes += _positive_int_or_percent(unavailable, f"{at}.maxUnavailable")
            if int_or_percent_value(unavailable) == 0:
                causes.append(invalid(f"{at}.maxUnavailable", unavailable, "cannot be 0"))
            causes += _not_over_100(unavailable, f"{at}.maxUnavailable")
        return causes
    value = Struct(
        Type=stype,
        RollingUpdate=None
        if rolling is None
        else Struct(
            Partition=as_dict(rolling).get("partition", 0),
            MaxUnavailable=as_dict(rolling).get("maxUnavailable"),
        ),
    )
    return [invalid(path, value, "must be 'RollingUpdate' or 'OnDelete'")]


def _retention(policy: Any) -> list[Cause]:
    causes: list[Cause] = []
    if not isinstance(policy, dict):
        return causes
    for key in ("whenDeleted", "whenScaled"):
        value = policy.get(key) or "Retain"
        if value not in ("Retain", "Delete"):
            causes.append(
                not_supported(
                    f"spec.persistentVolumeClaimRetentionPolicy.{key}",
                    Typed(value),
                    ["Retain", "Delete"],
                )
            )
    return causes


def validate_statefulset(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes: list[Cause] = []
    policy = spec.get("podManagementPolicy") or "OrderedReady"
    if policy not in ("OrderedReady", "Parallel"):
        causes.append(
            invalid(
                "spec.podManagementPolicy", Typed(policy), "must be 'OrderedReady' or 'Parallel'"
            )
        )
    causes += _statefulset_strategy(as_dict(spec.get("updateStrategy")))
    causes += _retention(spec.get("persistentVolumeClaimRetentionPolicy"))
    causes += nonnegative(spec.get("replicas"), "spec.replicas")
    causes += nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, dict):
        causes += nonnegative(ordinals.get("start"), "spec.ordinals.start")
    block, ok = _selector_block(spec, "empty selector is invalid for statefulset")
    causes += block
    if not ok:
        causes.append(invalid("spec.selector", selector_value(spec.get("selector"))))
    else:
        # ValidatePodTemplateSpecForStatefulSet: the selector match and the template's labels
        # and annotations, not the pod spec (kube's TODO), then restartPolicy.
        template = as_dict(spec.get("template"))
        meta = as_dict(template.get("metadata"))
        selector = spec.get("selector")
        if mismatch(selector, meta.get("labels")):
            causes.append(selector_mismatch(meta.get("labels")))
        causes += label_causes(meta.get("labels"), "spec.template.labels")
    causes += _restart_always(as_dict(spec.get("template")), "StatefulSet")
    if old is not None:
        new_rest = {k: v for k, v in spec.items() if k not in _STATEFULSET_MUTABLE}
        old_spec = as_dict(old.get("spec"))
        old_rest = {k: v for k, v in old_spec.items() if k not in _STATEFULSET_MUTABLE}
        if new_rest != old_rest:
            causes.append(
                forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                    "'minReadySeconds' are forbidden",
                )
            )
    return causes


_READ_ONLY_PD = (
    "must be true for replicated pods > 1; GCE PD can only be mounted on multiple machines if "
    "it is read-only"
)


def validate_replication_controller(obj: Obj, old: Obj | None) -> list[Cause]:
    """ValidateReplicationControllerSpec (core validation.go) with ValidatePodTemplateSpecForRC:
    the selector (a plain map) required, the template matching it, read-only GCE disks when
    replicated, restartPolicy Always and no activeDeadlineSeconds. The template's own checks
    (ValidatePodTemplateSpec) are :func:`pods.validate_replication_controller`'s."""
    spec = as_dict(obj.get("spec"))
    causes = nonnegative(spec.get("minReadySeconds"), "spec.minReadySeconds")
    selector = as_dict(spec.get("selector"))
    if not selector:
        causes.append(required("spec.selector"))
    causes += nonnegative(spec.get("replicas"), "spec.replicas")
    template = spec.get("template")
    labels = as_dict(as_dict(template).get("metadata")).get("labels")
    if template is not None and selector and mismatch({"matchLabels": selector}, labels):
        causes.append(selector_mismatch(labels))
    causes += pods.validate_replication_controller(obj, old)
    if template is None:
        return causes
    replicas = spec.get("replicas")
    if isinstance(replicas, int) and replicas > 1:
        volumes = as_dict(as_dict(template).get("spec")).get("volumes")
        for index, volume in enumerate(volumes if isinstance(volumes, list) else []):
            disk = as_dict(volume).get("gcePersistentDisk")
            if isinstance(disk, dict) and not disk.get("readOnly"):
                causes.append(
                    invalid(
                        f"spec.template.spec.volumes[{index}].gcePersistentDisk.readOnly",
                        False,
                        _READ_ONLY_PD,
                    )
                )
    return causes + _restart_always(as_dict(template), "ReplicationController")
