"""``kubelite history KIND/NAME``: an object's past versions (the ``history`` subresource a
kubelite server serves for the resources it keeps history of) as a timeline, and the field
changes between consecutive versions.

KIND is resolved as kubectl resolves it: a plural, singular, kind or short name, optionally
qualified by its group (``deployments.apps``), through discovery (core group first, then each
group's preferred version). The diff leaves out what changes on every write and tells nothing
(``metadata.resourceVersion``, ``metadata.managedFields``, ``metadata.generation`` and kubectl's
last-applied annotation).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubelite.client.errors import ApiError
from kubelite.client.sync_client import Client

HISTORY = "history"
#: Changed on every write without telling anything: left out of diffs.
NOISE = (
    ("metadata", "resourceVersion"),
    ("metadata", "managedFields"),
    ("metadata", "generation"),
    ("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"),
)
MAX_VALUE = 60  # characters of a value shown in a diff line
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class HistoryError(Exception):
    """What ``kubelite history`` reports in one line."""


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource as discovery lists it, with its path and whether it serves ``history``."""

    group_version: str
    plural: str
    kind: str
    namespaced: bool
    has_history: bool

    def history_path(self, namespace: str, name: str) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        scope = f"/namespaces/{namespace}" if self.namespaced else ""
        return f"{base}{scope}/{self.plural}/{name}/{HISTORY}"


def _group_versions(client: Client) -> Iterator[str]:
    yield "v1"
    groups = client.request("GET", "/apis").get("groups") or []
    for group in groups:
        preferred = (group.get("preferredVersion") or {}).get("groupVersion")
        if preferred:
            yield str(preferred)


def _names(entry: dict[str, Any]) -> set[str]:
    names = {entry.get("name"), entry.get("singularName"), str(entry.get("kind", "")).lower()}
    names.update(entry.get("shortNames") or ())
    return {str(n) for n in names if n}


def resolve(client: Client, kind: str) -> Resource:
    """The resource ``kind`` names (HistoryError when none does)."""
    resource, _, group = kind.lower().partition(".")
    for group_version in _group_versions(client):
        if group and group_version.rpartition("/")[0] != group:
            continue
        path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        document = client.request("GET", path)
        entries = [e for e in document.get("resources") or () if isinstance(e, dict)]
        served = {str(e.get("name")) for e in entries}
        for entry in entries:
            name = str(entry.get("name", ""))
            if "/" not in name and resource in _names(entry):
                return Resource(
                    group_version,
                    name,
                    str(entry.get("kind", "")),
                    bool(entry.get("namespaced")),
                    f"{name}/{HISTORY}" in served,
                )
    raise HistoryError(f'the server doesn\'t have a resource type "{kind}"')


def fetch(client: Client, kind: str, name: str, namespace: str | None) -> list[dict[str, Any]]:
    """The object's past versions, oldest first."""
    resource = resolve(client, kind)
    if not resource.has_history:
        raise HistoryError(
            f"the server keeps no history of {resource.plural} "
            f"(start it with --history-retention {resource.plural}=...)"
        )
    path = resource.history_path(namespace or client.namespace, name)
    try:
        listing = client.request("GET", path)
    except ApiError as exc:
        raise HistoryError(exc.message or str(exc)) from None
    items = listing.get("items") if isinstance(listing, dict) else None
    return [i for i in items or () if isinstance(i, dict)]


def timeline(items: list[dict[str, Any]], *, diff: bool = False) -> str:
    """REVISION, TIME, MANAGER, OPERATION per version; with ``diff``, each version's field
    changes from the one before under its row."""
    rows = [("REVISION", "TIME", "MANAGER", "OPERATION")]
    rows += [
        (
            str(i.get("resourceVersion", "")),
            str(i.get("time", "")),
            _manager(i),
            str(i.get("operation", "")),
        )
        for i in items
    ]
    widths = [max(len(r[c]) for r in rows) for c in range(3)]
    lines = []
    before: Any = None
    for n, row in enumerate(rows):
        lines.append("   ".join([*(row[c].ljust(widths[c]) for c in range(3)), row[3]]))
        if diff and n > 0:
            item = items[n - 1]
            obj = item.get("object")
            if before is not None and item.get("operation") != "Delete":
                lines += [f"    {change}" for change in changes(before, obj)]
            before = obj
    return "\n".join(line.rstrip() for line in lines)


def _manager(item: dict[str, Any]) -> str:
    manager = str(item.get("manager") or "-")
    sub = item.get("subresource")
    return f"{manager} ({sub})" if sub else manager


def changes(before: Any, after: Any) -> list[str]:
    """Field changes from ``before`` to ``after``: ``~ .data.k: "a" -> "b"``, ``+ .x: 1``,
    ``- .y: 2``, in field order; the noise fields left out."""
    found: list[str] = []
    _diff(before, after, (), found)
    return found


def _diff(a: Any, b: Any, path: tuple[Any, ...], out: list[str]) -> None:
    if path in NOISE:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            sub = (*path, key)
            if key not in b:
                _removed(a[key], sub, out)
            elif key not in a:
                _added(b[key], sub, out)
            else:
                _diff(a[key], b[key], sub, out)
        return
    if isinstance(a, list) and isinstance(b, list):
        for index in range(max(len(a), len(b))):
            sub = (*path, index)
            if index >= len(b):
                _removed(a[index], sub, out)
            elif index >= len(a):
                _added(b[index], sub, out)
            else:
                _diff(a[index], b[index], sub, out)
        return
    if a != b or type(a) is not type(b):
        out.append(f"~ {_path(path)}: {_value(a)} -> {_value(b)}")


def _added(value: Any, path: tuple[Any, ...], out: list[str], sign: str = "+") -> None:
    """A field that appeared (or, with sign ``-``, went): a map's fields one a line."""
    if path in NOISE:
        return
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            _added(sub, (*path, key), out, sign)
        return
    out.append(f"{sign} {_path(path)}: {_value(value)}")


def _removed(value: Any, path: tuple[Any, ...], out: list[str]) -> None:
    _added(value, path, out, "-")


def _path(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}"
        else:
            text += f"[{json.dumps(part)}]"
    return text or "."


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"
