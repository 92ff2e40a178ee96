"""Which resource serves an apiVersion and kind: legacy discovery documents, cached per
group-version and fetched again on a miss (a CRD created after the first lookup).

Only the group-version asked for is fetched (``/api/v1`` or ``/apis/<group>/<version>``), never
the whole ``/apis`` tree, so the first call on a kind costs one small GET.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

ALL_NAMESPACES = "*"


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One resource of a group-version, as discovery lists it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    verbs: frozenset[str] = frozenset()
    subresources: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path; ``namespace`` None (or ``ALL_NAMESPACES``) means across namespaces,
        which only collections of namespaced resources allow."""
        parts = [group_version_path(self.api_version)]
        if self.namespaced and namespace not in (None, ALL_NAMESPACES):
            parts.append(f"namespaces/{quote(str(namespace), safe='')}")
        elif self.namespaced and name is not None:
            raise ValueError(f"{self.kind} is namespaced: name a namespace for {name!r}")
        parts.append(self.plural)
        if name is not None:
            if not name:
                raise ValueError(f"a {self.kind} needs a name")
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


def group_version_path(api_version: str) -> str:
    return "/api/v1" if api_version == "v1" else f"/apis/{api_version}"


class Discovery:
    """The cache: ``api_version`` -> kind (and plural) -> :class:`ResourceType`."""

    def __init__(self) -> None:
        self._by_group_version: dict[str, dict[str, ResourceType]] = {}

    def lookup(self, api_version: str, kind: str) -> ResourceType | None:
        """By Kind (``Deployment``) or plural (``deployments``)."""
        resources = self._by_group_version.get(api_version)
        return resources.get(kind) if resources else None

    def load(self, api_version: str, document: dict[str, Any]) -> None:
        """Take in an APIResourceList (the answer to :func:`group_version_path`)."""
        group, _, version = api_version.rpartition("/")
        entries = [e for e in document.get("resources", []) if isinstance(e, dict)]
        subresources: dict[str, set[str]] = {}
        for entry in entries:
            parent, _, sub = str(entry.get("name", "")).partition("/")
            if sub:
                subresources.setdefault(parent, set()).add(sub)
        table: dict[str, ResourceType] = {}
        for entry in entries:
            plural = str(entry.get("name", ""))
            if not plural or "/" in plural:
                continue
            resource = ResourceType(
                group=group,
                version=version,
                kind=str(entry.get("kind", "")),
                plural=plural,
                namespaced=bool(entry.get("namespaced", False)),
                verbs=frozenset(entry.get("verbs") or ()),
                subresources=frozenset(subresources.get(plural, ())),
            )
            table[resource.kind] = resource
            table[plural] = resource
        self._by_group_version[api_version] = table

    def forget(self, api_version: str) -> None:
        self._by_group_version.pop(api_version, None)
