"""Discovery documents generated from the catalogue and the storages serving it: /version, /api,
/apis, /api/v1, /apis/<group>[/<version>] (legacy discovery, which every client accepts). A
resource's verbs and subresources are those its storages serve
(:func:`kubelite.api.machinery.rest.verbs`).
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from typing import Any

from kubelite import __version__
from kubelite.api.catalogue import KUBERNETES_VERSION, Catalogue, GroupInfo, ResourceInfo
from kubelite.api.machinery.rest import SpeaksOwnKind, Storage, verbs

#: A resource's storages by subresource name ("" is the resource itself).
StoragesOf = Callable[[ResourceInfo], dict[str, Storage]]

# The Kubernetes version whose kinds the catalogue serves, so clients see no version skew.
KUBE_MAJOR, KUBE_MINOR = KUBERNETES_VERSION.split(".")


def version() -> dict[str, str]:
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": f"v{KUBE_MAJOR}.{KUBE_MINOR}.0+kubelite.{__version__}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "python" + platform.python_version(),
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{platform.machine()}",
    }


def _group_entry(group: GroupInfo) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group.name}/{v}", "version": v} for v in group.versions]
    return {"name": group.name, "versions": listed, "preferredVersion": listed[0]}


def _subresource_entry(info: ResourceInfo, name: str, storage: Storage) -> dict[str, Any]:
    """``deployments/status``; ``deployments/scale`` also names its own kind (autoscaling/v1
    Scale), as discovery does when a subresource's kind is not the parent's, and so does a
    subresource of kubelite's own (``configmaps/history``: kubelite.dev/v1)."""
    sub = info.subresource(name)
    if sub is None and isinstance(storage, SpeaksOwnKind):
        sub = storage.subresource_info
    entry: dict[str, Any] = {
        "name": f"{info.plural}/{name}",
        "singularName": "",
        "namespaced": info.namespaced,
        "kind": sub.kind if sub else info.kind,
        "verbs": list(verbs(storage)),
    }
    if sub is not None and (sub.group, sub.version) != (info.group, info.version):
        entry.update(group=sub.group, version=sub.version)
    return entry


def _resources(
    infos: list[ResourceInfo], group_version: str, storages_of: StoragesOf
) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for info in sorted(infos, key=lambda i: i.plural):
        storages = storages_of(info)
        entry: dict[str, Any] = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": list(verbs(storages.get(""))),
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        resources.append(entry)
        resources.extend(
            _subresource_entry(info, name, storage)
            for name, storage in sorted(storages.items())
            if name
        )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def document(catalogue: Catalogue, storages_of: StoragesOf, path: str) -> dict[str, Any] | None:
    """The discovery document at ``path`` (no trailing slash), or None if it is not one."""
    if path == "/api":
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        }
    if path == "/api/v1":
        return _resources(catalogue.resources("", "v1"), "v1", storages_of)
    if path == "/apis":
        groups = [_group_entry(g) for g in catalogue.groups() if g.name]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    parts = path.split("/")
    if len(parts) == 3 and parts[1] == "apis" and parts[2]:
        group = catalogue.group(parts[2])
        if group is None:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group)}
    if len(parts) == 4 and parts[1] == "apis":
        infos = catalogue.resources(parts[2], parts[3])
        return _resources(infos, f"{parts[2]}/{parts[3]}", storages_of) if infos else None
    return None
