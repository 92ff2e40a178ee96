"""Discovery documents generated from the catalogue: /version, /api, /apis, /api/v1,
/apis/<group>[/<version>] (legacy discovery, which every client accepts)."""

from __future__ import annotations

import platform
import re
from collections.abc import Iterable
from typing import Any

from kubelite import __version__
from kubelite.api.catalogue import Catalogue, ResourceInfo

# kubectl dispatchers pick their binary from "minor"; 31 selects a JSON-only kubectl
# (shared/spec/client-requirements.md §0).
KUBE_MAJOR, KUBE_MINOR = "1", "31"

SUBRESOURCE_KINDS = {"scale": ("autoscaling", "v1", "Scale")}


def version() -> dict[str, str]:
    return {
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": f"v{KUBE_MAJOR}.{KUBE_MINOR}.0-kubelite.{__version__}",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "python" + platform.python_version(),
        "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{platform.machine()}",
    }


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes' version order: GA before beta before alpha, then higher numbers first."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (3, 0, 0)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0))


def _groups(catalogue: Catalogue) -> dict[str, list[str]]:
    groups: dict[str, set[str]] = {}
    for info in catalogue:
        groups.setdefault(info.group, set()).add(info.version)
    return {g: sorted(vs, key=_version_priority) for g, vs in sorted(groups.items())}


def _group_entry(name: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": listed, "preferredVersion": listed[0]}


def _resources(infos: Iterable[ResourceInfo], group_version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for info in sorted(infos, key=lambda i: i.plural):
        entry: dict[str, Any] = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": list(info.verbs),
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        resources.append(entry)
        for sub in info.subresources:
            sub_entry: dict[str, Any] = {
                "name": f"{info.plural}/{sub}",
                "singularName": "",
                "namespaced": info.namespaced,
                "kind": info.kind,
                "verbs": ["get", "patch", "update"],
            }
            if sub in SUBRESOURCE_KINDS:
                group, version, kind = SUBRESOURCE_KINDS[sub]
                sub_entry.update(group=group, version=version, kind=kind)
            resources.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def document(catalogue: Catalogue, path: str) -> dict[str, Any] | None:
    """The discovery document at ``path`` (no trailing slash), or None if it is not one."""
    if path == "/api":
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        }
    if path == "/api/v1":
        return _resources([i for i in catalogue if i.group == "" and i.version == "v1"], "v1")
    if path == "/apis":
        groups = _groups(catalogue)
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [_group_entry(g, vs) for g, vs in groups.items() if g],
        }
    parts = path.split("/")
    if len(parts) == 3 and parts[1] == "apis":
        versions = _groups(catalogue).get(parts[2])
        if not versions or not parts[2]:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(parts[2], versions)}
    if len(parts) == 4 and parts[1] == "apis":
        group, version = parts[2], parts[3]
        infos = [i for i in catalogue if i.group == group and i.version == version]
        if not infos:
            return None
        return _resources(infos, f"{group}/{version}")
    return None
