"""Validation: ephemeral containers. They are added to a running Pod through
``pods/<name>/ephemeralcontainers`` only: not on create, never in a template; each is checked as
a container with fewer fields allowed, and those already there may not be removed or changed.

Source: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go`` (``ValidatePodCreate``,
``ValidatePodTemplateSpec``, ``validateEphemeralContainers``,
``ValidatePodEphemeralContainersUpdate``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubelite.api.errors import Cause, go_quote
from kubelite.api.kinds.core.validation import podtypes
from kubelite.api.kinds.core.validation.podcommon import not_found
from kubelite.api.kinds.validation import godiff
from kubelite.api.kinds.validation.fields import as_dict, as_list, duplicate, forbidden

Obj = dict[str, Any]


def on_create_causes(spec: Any, path: str) -> list[Cause]:
    """ValidatePodCreate: a new Pod has none."""
    if as_list(as_dict(spec).get("ephemeralContainers")):
        return [forbidden(f"{path}.ephemeralContainers", "cannot be set on create")]
    return []


def in_template_causes(spec: Any, path: str) -> list[Cause]:
    """ValidatePodTemplateSpec: a pod template has none."""
    if as_list(as_dict(spec).get("ephemeralContainers")):
        detail = "ephemeral containers not allowed in pod template"
        return [forbidden(f"{path}.ephemeralContainers", detail)]
    return []


# -- the ephemeralcontainers subresource ----------------------------------------------------------

#: EphemeralContainerCommon's fields in Go order (json names), and those an ephemeral container
#: may not set (kube lists the allowed ones: allowedEphemeralContainerFields)
_COMMON_FIELDS = (
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
)
_NOT_ALLOWED = frozenset(
    {
        "ports",
        "resources",
        "resizePolicy",
        "restartPolicy",
        "restartPolicyRules",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
    }
)
_SET_ONLY_AS_POD = "cannot be set for an Ephemeral Container"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"

ContainerCheck = Callable[[Obj, str], list[Cause]]


def _is_set(value: Any) -> bool:
    """Not Go's zero value: a list is set even when empty (a non-nil slice), an object only
    when it has a set field."""
    if isinstance(value, dict):
        return any(_is_set(v) for v in value.values())
    if isinstance(value, list):
        return True
    return value not in (None, "", 0, False)


def containers_causes(spec: Any, path: str, common: ContainerCheck) -> list[Cause]:
    """validateEphemeralContainers: each as a container (``common``), names unique across every
    container, the target an existing (non-ephemeral) container, only the allowed fields, and no
    subPath mounts."""
    spec = as_dict(spec)
    ephemeral = as_list(spec.get("ephemeralContainers"))
    if not ephemeral:
        return []
    others = {
        as_dict(c).get("name")
        for key in ("containers", "initContainers")
        for c in as_list(spec.get(key))
    }
    names = set(others)
    causes: list[Cause] = []
    for index, raw in enumerate(ephemeral):
        ctr, where = as_dict(raw), f"{path}[{index}]"
        causes += common(ctr, where)
        name = ctr.get("name")
        if name in names:
            causes.append(duplicate(f"{where}.name", name))
        else:
            names.add(name)
        target = ctr.get("targetContainerName")
        if target and target not in others:
            causes.append(not_found(f"{where}.targetContainerName", target))
        causes += [
            forbidden(f"{where}.{key}", _SET_ONLY_AS_POD)
            for key in _COMMON_FIELDS
            if key in _NOT_ALLOWED and _is_set(ctr.get(key))
        ]
        for m, mount in enumerate(as_list(ctr.get("volumeMounts"))):
            for key in ("subPath", "subPathExpr"):
                if as_dict(mount).get(key):
                    causes.append(forbidden(f"{where}.volumeMounts[{m}].{key}", _SET_ONLY_AS_POD))
    return causes


def update_causes(new: Obj, old: Obj) -> list[Cause]:
    """ValidatePodEphemeralContainersUpdate's own part: no static pod, and the ephemeral
    containers already there neither removed nor changed (with kube's diff of the change)."""
    annotations = as_dict(as_dict(old.get("metadata")).get("annotations"))
    if MIRROR_POD_ANNOTATION in annotations:
        return [forbidden("", "static pods do not support ephemeral containers")]
    path = "spec.ephemeralContainers"
    new_by_name = {
        as_dict(c).get("name"): as_dict(c)
        for c in as_list(as_dict(new.get("spec")).get("ephemeralContainers"))
    }
    causes: list[Cause] = []
    for previous in as_list(as_dict(old.get("spec")).get("ephemeralContainers")):
        previous = as_dict(previous)
        name = previous.get("name")
        current = new_by_name.get(name)
        if current is None:
            causes.append(
                forbidden(
                    path,
                    f"existing ephemeral containers {go_quote(str(name))} may not be removed\n",
                )
            )
            continue
        x, y = podtypes.internal_ephemeral(previous), podtypes.internal_ephemeral(current)
        t = podtypes.resolve(podtypes.EPHEMERAL_CONTAINER, [x, y])
        xv, yv = podtypes.value(t, x), podtypes.value(t, y)
        if not godiff.semantic_equal(t, xv, yv):
            detail = (
                f"existing ephemeral containers {go_quote(str(name))} may not be changed\n"
                f"{godiff.diff(t, xv, yv)}"
            )
            causes.append(forbidden(f"{path}[{name}]", detail))
    return causes
