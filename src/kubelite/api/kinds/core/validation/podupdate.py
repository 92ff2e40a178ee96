"""Validation: what an update of a Pod may change (pkg/apis/core/validation
``ValidatePodUpdate``).

Source: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go``: ``ValidatePodUpdate``
(containers neither added nor removed, their images set and unpadded; ``activeDeadlineSeconds``
set from nil or lowered, never unset; tolerations only added, ``validateOnlyAddedTolerations``;
scheduling gates only removed, ``validateOnlyDeletedSchedulingGates``; a gated pod's
``nodeSelector`` only added to, ``validateNodeSelectorMutation``; ``terminationGracePeriodSeconds``
from a negative value to 1), then the spec with those fields taken from the stored pod must equal
the stored spec, or the 403-worded 422 lists the updatable fields and ``cmp.Diff`` of the two
internal specs (:mod:`godiff`, :mod:`podtypes`). The spec itself was validated as on create.

Not reproduced: a gated pod's node affinity mutations (``validateNodeAffinityMutation``: any
change of a gated pod's node affinity is refused here with the diff).
"""

from __future__ import annotations

from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.core.validation import podtypes
from kubelite.api.kinds.core.validation.podscheduling import tolerations_causes
from kubelite.api.kinds.rules import Obj
from kubelite.api.kinds.validation import godiff
from kubelite.api.kinds.validation.fields import (
    as_dict,
    as_int,
    as_list,
    as_str,
    forbidden,
    invalid,
    required,
)

_MAX_INT32 = 2**31 - 1
UPDATABLE = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)


def _container_updates(new: list[Any], old: list[Any], path: str) -> tuple[list[Cause], bool]:
    """ValidateContainerUpdates: (causes, stop)."""
    if len(new) != len(old):
        return [forbidden(path, "pod updates may not add or remove containers")], True
    causes: list[Cause] = []
    for i, ctr in enumerate(new):
        image = as_str(as_dict(ctr).get("image"))
        if not image:
            causes.append(required(f"{path}[{i}].image"))
        if image.strip() != image:
            causes.append(
                invalid(f"{path}[{i}].image", image, "must not have leading or trailing whitespace")
            )
    return causes, False


def _deadline_causes(new: Any, old: Any) -> list[Cause]:
    path = "spec.activeDeadlineSeconds"
    new_value, old_value = as_int(new), as_int(old)
    if new_value is not None:
        if not 0 <= new_value <= _MAX_INT32:
            return [invalid(path, new_value, f"must be between 0 and {_MAX_INT32}, inclusive")]
        if old_value is not None and old_value < new_value:
            return [invalid(path, new_value, "must be less than or equal to previous value")]
    elif old_value is not None:
        return [invalid(path, None, "must not update from a positive integer to nil value")]
    return []


def _toleration_key(tol: Any) -> tuple[str, str, str, str]:
    t = as_dict(tol)
    return (
        as_str(t.get("key")),
        as_str(t.get("operator")),
        as_str(t.get("value")),
        as_str(t.get("effect")),
    )


def _toleration_causes(new: list[Any], old: list[Any]) -> list[Cause]:
    """validateOnlyAddedTolerations: every stored toleration is still there, but for its
    tolerationSeconds; then the tolerations are validated (again)."""
    kept = {_toleration_key(t) for t in new}
    for tol in old:
        if _toleration_key(tol) not in kept:
            return [
                forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            ]
    return tolerations_causes(new, "spec.tolerations")


def _gate_causes(new: list[Any], old: list[Any]) -> list[Cause]:
    """validateOnlyDeletedSchedulingGates (kube ranges over a map: reported by index here)."""
    added = {as_str(as_dict(g).get("name")): i for i, g in enumerate(new)}
    for gate in old:
        added.pop(as_str(as_dict(gate).get("name")), None)
    return [
        forbidden(
            f"spec.schedulingGates[{i}].name",
            f"only deletion is allowed, but found new scheduling gate '{name}'",
        )
        for name, i in sorted(added.items(), key=lambda item: item[1])
    ]


def _munged(new: Obj, old: Obj) -> tuple[Obj, list[Cause]]:
    """The new spec with its updatable fields taken from the stored one."""
    munged = dict(new)
    for key in ("containers", "initContainers"):
        olds = as_list(old.get(key))
        if isinstance(new.get(key), list):
            munged[key] = [
                {**as_dict(c), "image": as_dict(olds[i]).get("image")}
                for i, c in enumerate(new[key])
            ]
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged.pop(key, None)
        if key in old:
            munged[key] = old[key]
    old_grace, new_grace = (
        as_int(old.get("terminationGracePeriodSeconds")),
        as_int(new.get("terminationGracePeriodSeconds")),
    )
    if old_grace is not None and old_grace < 0 and new_grace == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    causes: list[Cause] = []
    if as_list(old.get("schedulingGates")):
        new_sel, old_sel = as_dict(new.get("nodeSelector")), as_dict(old.get("nodeSelector"))
        if any(new_sel.get(k) != v for k, v in old_sel.items()):
            causes.append(
                invalid(
                    "spec.nodeSelector",
                    new.get("nodeSelector"),
                    "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                )
            )
        munged.pop("nodeSelector", None)
        if "nodeSelector" in old:
            munged["nodeSelector"] = old["nodeSelector"]
    return munged, causes


def spec_change_causes(new: Obj, old: Obj) -> list[Cause]:
    """The 422 for a change outside the updatable fields, with kube's diff of the specs."""
    munged, causes = _munged(new, old)
    x, y = podtypes.internal_spec(old), podtypes.internal_spec(munged)
    t = podtypes.resolve(podtypes.POD_SPEC, [x, y])
    xv, yv = podtypes.value(t, x), podtypes.value(t, y)
    if godiff.semantic_equal(t, xv, yv):
        return causes
    text = godiff.diff(t, xv, yv)
    detail = f"pod updates may not change fields other than {','.join(UPDATABLE)}\n{text}"
    return [*causes, forbidden("spec", detail)]


def validate_pod_update(obj: Obj, old: Obj | None) -> list[Cause]:
    """ValidatePodUpdate's spec rules (the spec itself was validated as on create)."""
    if old is None:
        return []
    new_spec, old_spec = as_dict(obj.get("spec")), as_dict(old.get("spec"))
    causes: list[Cause] = []
    for key in ("containers", "initContainers"):
        errs, stop = _container_updates(
            as_list(new_spec.get(key)), as_list(old_spec.get(key)), f"spec.{key}"
        )
        causes += errs
        if stop:
            return causes
    causes += _deadline_causes(
        new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    )
    if causes and causes[-1].field == "spec.activeDeadlineSeconds":
        return causes
    causes += _toleration_causes(
        as_list(new_spec.get("tolerations")), as_list(old_spec.get("tolerations"))
    )
    causes += _gate_causes(
        as_list(new_spec.get("schedulingGates")), as_list(old_spec.get("schedulingGates"))
    )
    return causes + spec_change_causes(new_spec, old_spec)


__all__ = ["UPDATABLE", "spec_change_causes", "validate_pod_update"]
