"""``metadata.managedFields``: who owns which field (apimachinery's ``managedfields/internal``
over sigs.k8s.io/structured-merge-diff's ``merge.Updater``, ``merge/update.go``). This module
holds the entries and what every write does to them:

- :func:`track_update` (create, update, non-apply patch, their subresources): the writer owns
  what its write added or changed and takes it from every other manager; what it removed leaves
  every manager. No conflicts: an update always wins.
- :func:`keep_stored_times`: a write whose only change is entries' times is no change;
- :func:`restore_after_admission`: entries that mutating admission broke are put back.

Server-side apply itself is :mod:`kubelite.api.fieldmanager.apply`. Entries are keyed by their
*identity*: the manager, the operation, the apiVersion (Update entries only) and the subresource,
written as apimachinery writes it (a JSON object), which is also the order conflicts are reported
in. ``reset`` paths (the fields a strategy resets for the endpoint: ``status`` for the main
resource, ``spec`` for ``/status``) are nobody's. Stored entries are always canonical (decoded
and encoded again when a client sends its own), so a write walks them as stored JSON and decodes
only the ones it takes fields from.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import orjson

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import jsoncodec
from kubelite.api.encoding.stored import now, same_content
from kubelite.api.errors import go_quote
from kubelite.api.fieldmanager.fieldpath import FieldSet, FieldsV1Error, Path
from kubelite.api.fieldmanager.shapes import Shape, shape_of
from kubelite.api.fieldmanager.typed import Comparison, TypedError, compare

__all__ = [
    "APPLY",
    "UPDATE",
    "Entry",
    "keep_stored_times",
    "reset_set",
    "restore_after_admission",
    "track_update",
]

APPLY: Final = "Apply"
UPDATE: Final = "Update"
FIELDS_V1: Final = "FieldsV1"
BEFORE_FIRST_APPLY: Final = "before-first-apply"
ANCIENT_CHANGES: Final = "ancient-changes"
MAX_UPDATE_MANAGERS: Final = 10

#: Paths never recorded (apimachinery's stripmeta.go): exact paths, not what is below them.
STRIPPED: Final = FieldSet.of(
    ("f:apiVersion",),
    ("f:kind",),
    ("f:metadata",),
    *(
        ("f:metadata", "f:" + name)
        for name in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        )
    ),
)
_NOT_COMPARED: Final = ("managedFields", "resourceVersion")


class BadManagedFields(ValueError):
    """managedFields that do not decode."""


@dataclass(slots=True)
class Entry:
    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str | None
    fields: FieldSet

    @property
    def identity(self) -> str:
        """apimachinery's manager identifier (``BuildManagerIdentifier``)."""
        return _identity(self.manager, self.operation, self.api_version, self.subresource)

    def printed(self) -> str:
        """The manager as a conflict message names it."""
        text = go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {go_quote(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text

    def encoded(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = FIELDS_V1
        out["fieldsV1"] = self.fields.to_fields_v1()
        if self.subresource:
            out["subresource"] = self.subresource
        return out


Managed = dict[str, Entry]


def decode(raw: Any) -> Managed:
    """The entries of a managedFields value, by identity (BadManagedFields if it is not one)."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise BadManagedFields("managedFields must be a list")
    out: Managed = {}
    for item in raw:
        if not isinstance(item, dict):
            raise BadManagedFields("a managedFields entry must be an object")
        operation = item.get("operation")
        if operation not in (APPLY, UPDATE):
            raise BadManagedFields(f"unsupported operation {operation}")
        if item.get("fieldsType") != FIELDS_V1:
            raise BadManagedFields(f"field type not supported: {item.get('fieldsType')!r}")
        try:
            fields = FieldSet.from_fields_v1(item.get("fieldsV1"))
        except FieldsV1Error as exc:
            raise BadManagedFields(f"error decoding fields: {exc}") from None
        manager, version = item.get("manager") or "", item.get("apiVersion") or ""
        subresource, time = item.get("subresource") or "", item.get("time")
        if not all(isinstance(v, str) for v in (manager, version, subresource)):
            raise BadManagedFields("manager, apiVersion and subresource must be strings")
        if not _valid_time(time):
            raise BadManagedFields(f"invalid time {time!r}")
        entry = Entry(manager, operation, version, subresource, time, fields)
        out[entry.identity] = entry
    return out


def _valid_time(time: Any) -> bool:
    """Absent, or an RFC 3339 time (what metav1.Time decodes)."""
    if time is None:
        return True
    return isinstance(time, str) and _seconds(time) is not None


@functools.lru_cache(maxsize=1024)
def _seconds(time: str) -> float | None:
    """An RFC 3339 time as seconds since the epoch; None when it is not one."""
    try:
        return datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _order(
    operation: str, time: str | None, manager: str, version: str, sub: str
) -> tuple[Any, ...]:
    """apimachinery's order of entries: Apply before Update, then by time (none first),
    manager, apiVersion, subresource."""
    return (operation, (_seconds(time) or 0.0) if time else 0.0, manager, version, sub)


def encode(managed: Managed) -> list[dict[str, Any]]:
    """The managedFields value, in apimachinery's order, without empty entries."""
    entries = sorted(
        (e for e in managed.values() if not e.fields.empty()),
        key=lambda e: _order(e.operation, e.time, e.manager, e.api_version, e.subresource),
    )
    return [e.encoded() for e in entries]


def store(obj: dict[str, Any], managed: Managed) -> None:
    """``managed`` written into ``obj``'s metadata (removed when there is none)."""
    meta = obj.setdefault("metadata", {})
    entries = encode(managed)
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


def dotted_path(path: str) -> Path:
    """``.spec.replicas`` (or ``spec.replicas``) as path elements."""
    return tuple("f:" + part for part in path.strip(".").split("."))


@functools.lru_cache(maxsize=256)
def reset_set(paths: tuple[str, ...]) -> FieldSet:
    """The FieldSet of dotted reset paths (``status``, ``metadata.labels``); shared, never
    change it."""
    return FieldSet.of(*(dotted_path(p) for p in paths))


def comparable(obj: dict[str, Any] | None) -> dict[str, Any]:
    """``obj`` without what a comparison skips (its managedFields and resourceVersion)."""
    if obj is None:
        return {}
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not any(k in meta for k in _NOT_COMPARED):
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k not in _NOT_COMPARED}}


def zero(info: ResourceInfo, shape: Shape) -> dict[str, Any]:
    """What a create is compared with: the Go zero value of a built-in kind, the bare type of a
    custom resource (apiserver's ``Creater.New``). Shared: never change it."""
    if info.builtin:
        return shape.zero()
    return {"apiVersion": info.group_version, "kind": info.kind}


# -- Update ----------------------------------------------------------------------------------


def track_update(
    info: ResourceInfo,
    live: dict[str, Any] | None,
    new: dict[str, Any],
    manager: str,
    *,
    subresource: str = "",
    reset: FieldSet | None = None,
) -> None:
    """Record a create (``live`` None) or an update by ``manager`` in ``new``'s managedFields
    (in place). The entries start from the body's managedFields when it has decodable ones (a
    client may edit them; ``[]`` or ``[{}]`` clears them), else from the stored object's; a
    subresource write always starts from the stored ones. A stored object without
    managedFields stays without them until its first apply.

    Entries are kept as the JSON they are stored as, and only those the write touches are
    decoded: most writes change a few fields that other managers do not own, so they cost a
    comparison of the two objects and a walk of the changed paths."""
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        return
    live_raw = (live.get("metadata") or {}).get("managedFields") if live is not None else None
    sent = meta.pop("managedFields", None)
    entries: list[dict[str, Any]]
    if subresource or sent is None or sent == live_raw:
        entries = stored_entries(live_raw)
    elif isinstance(sent, list) and (not sent or sent == [{}]):
        entries = []
    else:
        entries = _sent_entries(sent)
        if not entries:
            entries = stored_entries(live_raw)
    if not entries and live is not None:
        return
    shape = shape_of(info)
    old = comparable(live) if live is not None else zero(info, shape)
    try:
        diff = jsoncodec.deeply(lambda: compare(old, comparable(new), shape))
    except (ValueError, TypedError):
        return  # apiserver drops managedFields it cannot compute ("should not happen")
    if reset is not None:
        diff = diff.without(reset)
    writer = Entry(manager or "unknown", UPDATE, info.group_version, subresource, None, FieldSet())
    updated = jsoncodec.deeply(lambda: _updated_entries(entries, diff, writer))
    if updated:
        meta["managedFields"] = list(updated)  # never the stored object's own list


def stored_entries(raw: Any) -> list[dict[str, Any]]:
    """A stored object's entries, as stored (canonical, since every write stores them so); []
    when they are not a list of entries at all (an object stored before managedFields were
    tracked, with whatever a client sent)."""
    if not isinstance(raw, list) or not all(_entry_like(item) for item in raw):
        return []
    return raw


def _sent_entries(raw: Any) -> list[dict[str, Any]]:
    """Entries a client sent, decoded and encoded again (canonical, one per identity); [] when
    any does not decode."""
    try:
        return encode(decode(raw))
    except BadManagedFields:
        return []


def _entry_like(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("operation") in (APPLY, UPDATE)
        and item.get("fieldsType") == FIELDS_V1
        and isinstance(item.get("fieldsV1"), dict)
        and all(isinstance(item.get(k, ""), str) for k in ("manager", "apiVersion", "subresource"))
        and _valid_time(item.get("time"))
    )


def _updated_entries(
    entries: list[dict[str, Any]], diff: Comparison, writer: Entry
) -> list[dict[str, Any]]:
    """structured-merge-diff's Update over stored entries: what the write changed or removed
    leaves every other entry; what it changed (not removed) joins the writer's, whose time is
    then now."""
    changed = diff.changed()
    taken = changed.union(diff.removed)
    if taken.empty():
        return entries
    owned = changed.difference(diff.removed).difference(STRIPPED)
    out: list[dict[str, Any]] = []
    prior: dict[str, Any] | None = None
    for raw in entries:
        if _is_entry_of(raw, writer):
            prior = raw
            continue
        if touches(raw["fieldsV1"], taken):
            rest = FieldSet.from_fields_v1(raw["fieldsV1"]).difference(taken)
            if rest.empty():
                continue
            raw = {**raw, "fieldsV1": rest.to_fields_v1()}
        out.append(raw)
    if prior is not None and diff.removed.empty() and _holds(prior["fieldsV1"], owned):
        out.append({**prior, "time": now()} if not owned.empty() else prior)
    elif prior is not None or not owned.empty():
        fields = owned
        if prior is not None:
            fields = FieldSet.from_fields_v1(prior["fieldsV1"]).difference(taken).union(owned)
            writer.time = prior.get("time")
        if not owned.empty():
            writer.time = now()
        if not fields.empty():
            writer.fields = fields
            out.append(writer.encoded())
    if len(out) > 1:
        out.sort(key=raw_order)
    if len(out) > MAX_UPDATE_MANAGERS and (
        sum(1 for raw in out if raw["operation"] == UPDATE) > MAX_UPDATE_MANAGERS
    ):
        return encode(capped(decode(out)))
    return out


def _identity(manager: str, operation: str, api_version: str, subresource: str) -> str:
    out: dict[str, str] = {"manager": manager} if manager else {}
    out["operation"] = operation
    if operation == UPDATE and api_version:
        out["apiVersion"] = api_version
    if subresource:
        out["subresource"] = subresource
    return orjson.dumps(out).decode()


def _is_entry_of(raw: dict[str, Any], writer: Entry) -> bool:
    """Whether the stored entry ``raw`` is ``writer``'s (an Update entry: same identity)."""
    return (
        raw["operation"] == UPDATE
        and (raw.get("manager") or "") == writer.manager
        and (raw.get("apiVersion") or "") == writer.api_version
        and (raw.get("subresource") or "") == writer.subresource
    )


def raw_identity(raw: dict[str, Any]) -> str:
    return _identity(
        raw.get("manager") or "",
        raw["operation"],
        raw.get("apiVersion") or "",
        raw.get("subresource") or "",
    )


def entries_written(
    entries: list[dict[str, Any]], before: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Of a stored version's entries, those the write that made it made or moved, given the
    version before's (both as :func:`stored_entries` gives them): a new entry, a new time, or
    fields the entry did not hold. An entry that only lost fields to the write is not its
    writer's. What history and conflict explanations name as a write's manager."""
    earlier = {raw_identity(e): e for e in before}
    out = []
    for entry in entries:
        old = earlier.get(raw_identity(entry))
        if old is None or old.get("time") != entry.get("time") or _gained(entry, old):
            out.append(entry)
    return out


def _gained(entry: dict[str, Any], old: dict[str, Any]) -> bool:
    return entry["fieldsV1"] != old["fieldsV1"] and _holds_more(entry["fieldsV1"], old["fieldsV1"])


def _holds_more(fields: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether the FieldsV1 document ``fields`` has a path (or a ``.`` member) ``other`` has
    not. Stored entries are canonical, so their elements compare as written."""
    for element, below in fields.items():
        theirs = other.get(element)
        if theirs is None or not isinstance(theirs, dict):
            return True
        if below and isinstance(below, dict) and _holds_more(below, theirs):
            return True
    return False


def raw_order(raw: dict[str, Any]) -> tuple[Any, ...]:
    return _order(
        raw["operation"],
        raw.get("time"),
        raw.get("manager") or "",
        raw.get("apiVersion") or "",
        raw.get("subresource") or "",
    )


def is_member(node: Any) -> bool:
    """Whether a FieldsV1 node stands for an owned path (``{}`` or one with ``"."``)."""
    return isinstance(node, dict) and (not node or "." in node)


def touches(trie: dict[str, Any], paths: FieldSet) -> bool:
    """Whether the FieldsV1 ``trie`` holds any path of ``paths``."""
    for element in paths.members:
        if is_member(trie.get(element)):
            return True
    for element, below in paths.children.items():
        node = trie.get(element)
        if isinstance(node, dict) and node and touches(node, below):
            return True
    return False


def _holds(trie: dict[str, Any], paths: FieldSet) -> bool:
    """Whether the FieldsV1 ``trie`` holds every path of ``paths``."""
    for element in paths.members:
        if not is_member(trie.get(element)):
            return False
    for element, below in paths.children.items():
        node = trie.get(element)
        if not isinstance(node, dict) or not _holds(node, below):
            return False
    return True


def updated(
    managed: Managed,
    old: Any,
    new: Any,
    shape: Shape,
    api_version: str,
    manager: str,
    subresource: str,
    reset: FieldSet | None,
) -> Managed:
    """:func:`_updated_entries` over decoded entries (for the first apply's
    ``before-first-apply``)."""
    diff = compare(old, new, shape)
    if reset is not None:
        diff = diff.without(reset)
    writer = Entry(manager or "unknown", UPDATE, api_version, subresource, None, FieldSet())
    return decode(_updated_entries(encode(managed), diff, writer))


def with_fields(entry: Entry, fields: FieldSet) -> Entry:
    return Entry(
        entry.manager, entry.operation, entry.api_version, entry.subresource, entry.time, fields
    )


def capped(managed: Managed) -> Managed:
    """At most 10 Update entries: the oldest merged, per apiVersion, into ``ancient-changes``."""
    updaters = [i for i, e in managed.items() if e.operation == UPDATE]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    updaters.sort(key=lambda i: (_order(UPDATE, managed[i].time, "", "", "")[1], i))
    first_of_version: dict[str, str] = {}
    count = len(updaters)
    for identity in updaters:
        if count <= MAX_UPDATE_MANAGERS:
            break
        entry = managed[identity]
        version = entry.api_version
        if version not in first_of_version:
            first_of_version[version] = identity
            continue
        bucket = Entry(ANCIENT_CHANGES, UPDATE, version, "", entry.time, FieldSet())
        if bucket.identity not in managed:
            first = managed.pop(first_of_version[version])
            bucket.fields = first.fields
        else:
            bucket.fields = managed[bucket.identity].fields
        bucket.fields = entry.fields.union(bucket.fields)
        managed[bucket.identity] = bucket
        del managed[identity]
        count -= 1
    return managed


def restore_after_admission(obj: dict[str, Any], tracked: Any) -> str:
    """Put back ``tracked`` (a copy of the managedFields before mutating admission) when
    admission left ones that do not decode; the warning to send then ("" when nothing was
    wrong)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or meta.get("managedFields") == tracked:
        return ""  # untouched (the common case: one comparison)
    try:
        decode(meta.get("managedFields"))
        return ""
    except BadManagedFields as exc:
        if tracked is None:
            meta.pop("managedFields", None)
        else:
            meta["managedFields"] = tracked
        return (
            ".metadata.managedFields was in an invalid state after admission; this could be "
            "caused by an outdated mutating admission controller; please fix your requests: "
            f"{exc}"
        )


def keep_stored_times(new: dict[str, Any], current: dict[str, Any]) -> None:
    """A write whose only change is the times of managedFields entries keeps the stored ones,
    so it is no change at all (apimachinery's IgnoreManagedFieldsTimestampsTransformer)."""
    meta, stored = new.get("metadata"), current.get("metadata")
    if not isinstance(meta, dict) or not isinstance(stored, dict):
        return
    mine, theirs = meta.get("managedFields"), stored.get("managedFields")
    if (
        mine is theirs
        or not isinstance(mine, list)
        or not isinstance(theirs, list)
        or len(mine) != len(theirs)
        or mine == theirs
    ):
        return
    for a, b in zip(mine, theirs, strict=True):
        if not isinstance(a, dict) or not isinstance(b, dict):
            return
        if {**a, "time": None} != {**b, "time": None}:
            return
    meta["managedFields"] = theirs
    if not same_content(new, current):
        meta["managedFields"] = mine
