"""Defaults: core/v1 kinds other than pods and services: PersistentVolumeClaim, PersistentVolume,
Secret (stringData), Namespace, Endpoints, Node, LimitRange (pkg/apis/core/v1/defaults.go and
zz_generated.defaults.go; Secret's ``stringData`` is folded into ``data`` by
Convert_v1_Secret_To_core_Secret, so it is never stored).

Every ResourceList (PV capacity, PVC status, Node capacity and allocatable, LimitRange items,
ResourceQuota hard and used) is rounded up to milli, as the generated SetDefaults_ResourceList
calls do. Not here, with the reason: ConfigMap (SetDefaults_ConfigMap makes ``data`` an empty
map, which is never serialized), Secret's ``type`` (SecretStrategy owns it, with its rule on
update)."""

from __future__ import annotations

import base64
import copy

from kubelite.api.kinds.core.poddefaults import (
    default_azure_disk,
    default_claim_spec,
    default_host_path,
    default_iscsi,
    default_rbd,
    default_resource_list,
    default_scale_io,
    ensure,
    items,
    set_if_empty,
    set_if_nil,
    sub,
)
from kubelite.api.kinds.rules import Obj

METADATA_NAME_LABEL = "kubernetes.io/metadata.name"


def default_claim(obj: Obj) -> None:
    """SetDefaults_PersistentVolumeClaim(Spec): volumeMode Filesystem, status.phase Pending."""
    default_claim_spec(ensure(obj, "spec"))
    status = ensure(obj, "status")
    if status is not None:
        set_if_empty(status, "phase", "Pending")
        default_resource_list(sub(status, "capacity"))
        default_resource_list(sub(status, "allocatedResources"))


def default_volume(obj: Obj) -> None:
    """SetDefaults_PersistentVolume and its sources' defaults."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    default_resource_list(sub(spec, "capacity"))
    set_if_empty(spec, "persistentVolumeReclaimPolicy", "Retain")
    set_if_nil(spec, "volumeMode", "Filesystem")
    default_host_path(sub(spec, "hostPath"))
    default_rbd(sub(spec, "rbd"))
    default_iscsi(sub(spec, "iscsi"))
    default_azure_disk(sub(spec, "azureDisk"))
    default_scale_io(sub(spec, "scaleIO"))
    status = ensure(obj, "status")
    if status is not None:
        set_if_empty(status, "phase", "Pending")


def fold_string_data(obj: Obj) -> None:
    """A Secret's ``stringData`` written into ``data`` (base64 of its UTF-8, over the same keys
    of ``data``), and dropped."""
    string_data = obj.get("stringData")
    if string_data is None:
        obj.pop("stringData", None)
        return
    if not isinstance(string_data, dict) or not all(
        isinstance(v, str) for v in string_data.values()
    ):
        return  # not a map of strings: decoding refuses it
    data = obj.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return
    for key, value in string_data.items():
        data[key] = base64.b64encode(value.encode()).decode()
    if data:
        obj["data"] = data
    del obj["stringData"]


def default_namespace(obj: Obj) -> None:
    """SetDefaults_Namespace: the ``kubernetes.io/metadata.name`` label (when the name is known;
    the Namespace strategy sets it again once it is), status.phase Active."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        name = meta.get("name")
        labels = ensure(meta, "labels")
        if isinstance(name, str) and name and labels is not None:
            labels[METADATA_NAME_LABEL] = name
    status = ensure(obj, "status")
    if status is not None:
        set_if_empty(status, "phase", "Active")


def default_endpoints(obj: Obj) -> None:
    """SetDefaults_Endpoints: every port's protocol TCP."""
    for subset in items(obj, "subsets"):
        for port in items(subset, "ports"):
            set_if_empty(port, "protocol", "TCP")


def default_node(obj: Obj) -> None:
    """The v1 <-> internal conversion of NodeSpec (pkg/apis/core/v1/conversion.go): ``podCIDRs``
    is ``[podCIDR]`` when only that is given, and ``podCIDR`` is always ``podCIDRs[0]``;
    SetDefaults_NodeStatus: allocatable is the capacity when unset; then both rounded to
    milli (SetDefaults_ResourceList)."""
    spec = sub(obj, "spec")
    if spec is not None:
        cidrs = spec.get("podCIDRs")
        if not cidrs and isinstance(spec.get("podCIDR"), str) and spec["podCIDR"]:
            spec["podCIDRs"] = [spec["podCIDR"]]
        elif isinstance(cidrs, list) and cidrs and isinstance(cidrs[0], str):
            spec["podCIDR"] = cidrs[0]
    status = sub(obj, "status")
    if status is None:
        return
    if status.get("allocatable") is None:
        capacity = sub(status, "capacity")
        if capacity is not None:
            status["allocatable"] = copy.deepcopy(capacity)
    default_resource_list(sub(status, "capacity"))
    default_resource_list(sub(status, "allocatable"))


def default_limit_range(obj: Obj) -> None:
    """SetDefaults_LimitRangeItem: a Container item's default limit from max, default request
    from the default limit, then from min."""
    for item in items(sub(obj, "spec"), "limits"):
        if item.get("type") != "Container":
            continue
        default = ensure(item, "default")
        request = ensure(item, "defaultRequest")
        if default is None or request is None:
            continue
        for key, value in (sub(item, "max") or {}).items():
            default.setdefault(key, value)
        for key, value in default.items():
            request.setdefault(key, value)
        for key, value in (sub(item, "min") or {}).items():
            request.setdefault(key, value)
        if not default:
            del item["default"]
        if not request:
            del item["defaultRequest"]
    for item in items(sub(obj, "spec"), "limits"):
        for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            default_resource_list(sub(item, key))


def default_resource_quota(obj: Obj) -> None:
    """SetObjectDefaults_ResourceQuota: SetDefaults_ResourceList of spec.hard, status.hard and
    status.used."""
    default_resource_list(sub(sub(obj, "spec"), "hard"))
    status = sub(obj, "status")
    default_resource_list(sub(status, "hard"))
    default_resource_list(sub(status, "used"))
