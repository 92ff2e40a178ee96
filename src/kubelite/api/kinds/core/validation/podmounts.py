"""Validation: a container's ``volumeMounts``.

Source: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go`` (``ValidateVolumeMounts``,
``validateMountPropagation``, ``validateMountRecursiveReadOnly``).
"""

from __future__ import annotations

from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.core.validation.podcommon import local_descending_path, not_found
from kubelite.api.kinds.validation.fields import (
    Typed,
    as_dict,
    as_list,
    as_str,
    forbidden,
    invalid,
    not_supported,
    required,
)

Obj = dict[str, Any]

_PROPAGATIONS = ["Bidirectional", "HostToContainer", "None"]
_RECURSIVE_READ_ONLY = ["Disabled", "Enabled", "IfPossible"]


def mount_causes(mounts: Any, volumes: dict[str, Obj], container: Obj, path: str) -> list[Cause]:
    """ValidateVolumeMounts: each mount names a volume, has a unique mount path, sub-paths that
    stay inside the volume, a propagation and recursive read-only mode that fit. (Kube names
    ``subPath``, ``mountPropagation`` and ``recursiveReadOnly`` errors on the list's path.)"""
    causes: list[Cause] = []
    seen: set[str] = set()
    privileged = as_dict(container.get("securityContext")).get("privileged") is True
    for index, raw in enumerate(as_list(mounts)):
        mnt = as_dict(raw)
        where = f"{path}[{index}]"
        name, mount_path = as_str(mnt.get("name")), as_str(mnt.get("mountPath"))
        sub_path, sub_expr = as_str(mnt.get("subPath")), as_str(mnt.get("subPathExpr"))
        if not name:
            causes.append(required(f"{where}.name"))
        if name not in volumes:
            causes.append(not_found(f"{where}.name", name))
        if not mount_path:
            causes.append(required(f"{where}.mountPath"))
        if mount_path in seen:
            causes.append(invalid(f"{where}.mountPath", mount_path, "must be unique"))
        seen.add(mount_path)
        if volumes.get(name, {}).get("image") is not None:
            detail = "not allowed in image volume sources"
            if sub_path:
                causes.append(invalid(f"{where}.subPath", sub_path, detail))
            if sub_expr:
                causes.append(invalid(f"{where}.subPathExpr", sub_expr, detail))
        if sub_path:
            causes += local_descending_path(sub_path, f"{path}.subPath")
        if sub_expr:
            if sub_path:
                detail = "subPathExpr and subPath are mutually exclusive"
                causes.append(invalid(f"{where}.subPathExpr", sub_expr, detail))
            causes += local_descending_path(sub_expr, f"{path}.subPathExpr")
        propagation = mnt.get("mountPropagation")
        if isinstance(propagation, str):
            at = f"{path}.mountPropagation"
            if propagation not in _PROPAGATIONS:
                causes.append(not_supported(at, Typed(propagation), _PROPAGATIONS))
            if propagation == "Bidirectional" and not privileged:
                detail = "Bidirectional mount propagation is available only to privileged"
                causes.append(forbidden(at, f"{detail} containers"))
        causes += _recursive_read_only_causes(mnt, f"{path}.recursiveReadOnly")
    return causes


def _recursive_read_only_causes(mnt: Obj, path: str) -> list[Cause]:
    """validateMountRecursiveReadOnly."""
    mode = mnt.get("recursiveReadOnly")
    if not isinstance(mode, str) or mode == "Disabled":
        return []
    if mode not in _RECURSIVE_READ_ONLY:
        return [not_supported(path, Typed(mode), _RECURSIVE_READ_ONLY)]
    causes: list[Cause] = []
    if mnt.get("readOnly") is not True:
        causes.append(forbidden(path, "may only be specified when readOnly is true"))
    propagation = mnt.get("mountPropagation")
    if propagation is not None and propagation != "None":
        detail = "may only be specified when mountPropagation is None or not specified"
        causes.append(forbidden(path, detail))
    return causes
