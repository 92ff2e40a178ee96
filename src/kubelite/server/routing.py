"""The Kubernetes path grammar: which resource, namespace, name and subresource a path names.

    /api/v1[/watch][/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]
    /apis/{group}/{version}[/watch][/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]

``/api/v1/namespaces/{name}`` is the namespace itself, and ``/api/v1/namespaces/{name}/status``
or ``/finalize`` its subresources, as in kube-apiserver's RequestInfoFactory.
"""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True)
class ResourcePath:
    group: str
    version: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    subresource: str = ""
    legacy_watch: bool = False


def parse_resource_path(path: str) -> ResourcePath | None:
    """The resource a path names, or None if it names none (discovery, unknown paths)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch = bool(rest) and rest[0] == "watch"
    if watch:
        rest = rest[1:]
    if not rest:
        return None
    namespace: str | None = None
    if rest[0] == "namespaces" and len(rest) >= 2:
        if len(rest) == 2 or (len(rest) == 3 and rest[2] in NAMESPACE_SUBRESOURCES):
            sub = rest[2] if len(rest) == 3 else ""
            return ResourcePath(group, version, "namespaces", None, rest[1], sub, watch)
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    plural = rest[0]
    name = rest[1] if len(rest) >= 2 else None
    subresource = rest[2] if len(rest) == 3 else ""
    return ResourcePath(group, version, plural, namespace, name, subresource, watch)
