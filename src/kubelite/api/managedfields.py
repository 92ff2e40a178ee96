"""``metadata.managedFields``: who owns which field, updated on every write and enforced by
server-side apply (apimachinery's ``managedfields/internal`` over structured-merge-diff's
``merge.Updater``; shared/spec/server-side-apply.md is the specification).

Two operations, each given the stored object (None when there is none) and the kind's
:class:`~kubelite.api.shapes.Shape`:

- :func:`track_update` (create, update, non-apply patch, their subresources): the writer owns
  what its write added or changed and takes it from every other manager; what it removed leaves
  every manager. No conflicts: an update always wins.
- :func:`apply` (server-side apply): the applied configuration is merged into the live object;
  the applier owns exactly the fields of its configuration; fields it owned before and no
  longer sets are removed unless someone else owns them; a changed field that another manager
  owns is a 409 conflict unless ``force``.

Entries are keyed by their *identity*: the manager, the operation, the apiVersion (Update entries
only) and the subresource, written as apimachinery writes it (a JSON object), which is also the
order conflicts are reported in. ``reset`` paths (the fields a strategy resets for the endpoint:
``status`` for the main resource, ``spec`` for ``/status``) are nobody's, on either side.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import orjson

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import APIError, Cause
from kubelite.api.fieldpath import FieldSet, FieldsV1Error, Path, path_string
from kubelite.api.shapes import Shape, shape_of
from kubelite.api.stored import clone, now
from kubelite.api.typed import (
    MISSING,
    Comparison,
    TypedError,
    compare,
    ensure_named_fields,
    merge,
    remove_items,
    to_set,
)

__all__ = [
    "APPLY",
    "UPDATE",
    "BadManagedFields",
    "apply",
    "reset_set",
    "track_update",
]

APPLY: Final = "Apply"
UPDATE: Final = "Update"
FIELDS_V1: Final = "FieldsV1"
BEFORE_FIRST_APPLY: Final = "before-first-apply"
ANCIENT_CHANGES: Final = "ancient-changes"
MAX_UPDATE_MANAGERS: Final = 10
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"

#: Paths never recorded (apimachinery's stripmeta.go): exact paths, not what is below them.
_STRIPPED: Final = FieldSet.of(
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
        text = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource, ensure_ascii=False)}"
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
        entry = Entry(
            manager,
            operation,
            version,
            subresource,
            time if isinstance(time, str) else None,
            fields,
        )
        out[entry.identity] = entry
    return out


@functools.lru_cache(maxsize=1024)
def _seconds(time: str | None) -> float:
    if not time:
        return 0.0
    try:
        return datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def encode(managed: Managed) -> list[dict[str, Any]]:
    """The managedFields value, in apimachinery's order: Apply before Update, then by time,
    manager, apiVersion, subresource."""
    entries = sorted(
        (e for e in managed.values() if not e.fields.empty()),
        key=lambda e: (e.operation, _seconds(e.time), e.manager, e.api_version, e.subresource),
    )
    return [e.encoded() for e in entries]


def _store(obj: dict[str, Any], managed: Managed) -> None:
    meta = obj.setdefault("metadata", {})
    entries = encode(managed)
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


@functools.lru_cache(maxsize=256)
def reset_set(paths: tuple[str, ...]) -> FieldSet:
    """The FieldSet of dotted reset paths (``status``, ``metadata.labels``); shared, never
    change it."""
    return FieldSet.of(*(tuple("f:" + part for part in p.split(".")) for p in paths))


def _comparable(obj: dict[str, Any] | None) -> dict[str, Any]:
    """``obj`` without what a comparison skips (its managedFields and resourceVersion)."""
    if obj is None:
        return {}
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not any(k in meta for k in _NOT_COMPARED):
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k not in _NOT_COMPARED}}


def _zero(info: ResourceInfo, shape: Shape) -> dict[str, Any]:
    """What a create is compared with: the Go zero value of a built-in kind, the bare type of a
    custom resource (apiserver's ``Creater.New``)."""
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
    entries: list[dict[str, Any]] | None
    if subresource or sent is None or sent == live_raw:
        entries = _stored_entries(live_raw)
    elif isinstance(sent, list) and (not sent or sent == [{}]):
        entries = []
    else:
        entries = _sent_entries(sent)
        if not entries:
            entries = _stored_entries(live_raw)
    if not entries and live is not None:
        return
    shape = shape_of(info)
    old = _comparable(live) if live is not None else _zero(info, shape)
    try:
        diff = compare(old, _comparable(new), shape)
    except (ValueError, TypedError):
        return  # apiserver drops managedFields it cannot compute ("should not happen")
    if reset is not None:
        diff = diff.without(reset)
    writer = Entry(manager or "unknown", UPDATE, info.group_version, subresource, None, FieldSet())
    updated = _updated_entries(entries or [], diff, writer)
    if updated:
        meta["managedFields"] = updated


def _stored_entries(raw: Any) -> list[dict[str, Any]]:
    """The stored object's entries, as stored (their fields were checked when written); []
    when they are not a list of entries at all."""
    if not isinstance(raw, list) or not all(_entry_like(item) for item in raw):
        return []
    return raw


def _sent_entries(raw: Any) -> list[dict[str, Any]]:
    """Entries a client sent, when every one decodes (else []); one per identity, the last."""
    if not isinstance(raw, list) or not all(_entry_like(item) for item in raw):
        return []
    try:
        for item in raw:
            FieldSet.check_fields_v1(item["fieldsV1"])
    except FieldsV1Error:
        return []
    return list({_raw_identity(item): item for item in raw}.values())


def _entry_like(item: Any) -> bool:
    return (
        isinstance(item, dict)
        and item.get("operation") in (APPLY, UPDATE)
        and item.get("fieldsType") == FIELDS_V1
        and isinstance(item.get("fieldsV1"), dict)
        and all(isinstance(item.get(k, ""), str) for k in ("manager", "apiVersion", "subresource"))
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
    owned = changed.difference(diff.removed).difference(_STRIPPED)
    out: list[dict[str, Any]] = []
    prior: dict[str, Any] | None = None
    for raw in entries:
        if _is_entry_of(raw, writer):
            prior = raw
            continue
        if _touches(raw["fieldsV1"], taken):
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
        out.sort(key=_raw_order)
    if len(out) > MAX_UPDATE_MANAGERS and (
        sum(1 for raw in out if raw["operation"] == UPDATE) > MAX_UPDATE_MANAGERS
    ):
        return encode(_capped(decode(out)))
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


def _raw_identity(raw: dict[str, Any]) -> str:
    return _identity(
        raw.get("manager") or "",
        raw["operation"],
        raw.get("apiVersion") or "",
        raw.get("subresource") or "",
    )


def _raw_order(raw: dict[str, Any]) -> tuple[Any, ...]:
    return (
        raw["operation"],
        _seconds(raw.get("time")),
        raw.get("manager") or "",
        raw.get("apiVersion") or "",
        raw.get("subresource") or "",
    )


def _is_member(node: Any) -> bool:
    return isinstance(node, dict) and (not node or "." in node)


def _touches(trie: dict[str, Any], paths: FieldSet) -> bool:
    """Whether the FieldsV1 ``trie`` holds any path of ``paths``."""
    for element in paths.members:
        if _is_member(trie.get(element)):
            return True
    for element, below in paths.children.items():
        node = trie.get(element)
        if isinstance(node, dict) and node and _touches(node, below):
            return True
    return False


def _holds(trie: dict[str, Any], paths: FieldSet) -> bool:
    """Whether the FieldsV1 ``trie`` holds every path of ``paths``."""
    for element in paths.members:
        if not _is_member(trie.get(element)):
            return False
    for element, below in paths.children.items():
        node = trie.get(element)
        if not isinstance(node, dict) or not _holds(node, below):
            return False
    return True


def _updated(
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


def _with(entry: Entry, fields: FieldSet) -> Entry:
    return Entry(
        entry.manager, entry.operation, entry.api_version, entry.subresource, entry.time, fields
    )


def _capped(managed: Managed) -> Managed:
    """At most 10 Update entries: the oldest merged, per apiVersion, into ``ancient-changes``."""
    updaters = [i for i, e in managed.items() if e.operation == UPDATE]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return managed
    updaters.sort(key=lambda i: (_seconds(managed[i].time), i))
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


# -- Apply -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Conflict:
    manager: Entry
    path: Path


def apply(
    info: ResourceInfo,
    live: dict[str, Any] | None,
    config: dict[str, Any],
    manager: str,
    *,
    force: bool = False,
    subresource: str = "",
    reset: FieldSet | None = None,
) -> dict[str, Any]:
    """The object ``manager`` makes by applying ``config`` to ``live`` (None: the object does
    not exist yet), with its managedFields. Raises the 409 of the conflicts, unless ``force``."""
    shape = shape_of(info)
    _check_config(info, config, shape)
    config = clone(config)  # the merge shares the configuration's values: keep the caller's
    base = live if live is not None else {}
    try:
        managed = decode((base.get("metadata") or {}).get("managedFields"))
    except BadManagedFields as exc:
        raise errors.internal(f"failed to decode managed fields: {exc}") from None
    if not managed and live is not None:
        managed = _updated({}, _zero(info, shape), _comparable(live), shape, info.group_version,
                           BEFORE_FIRST_APPLY, subresource, reset)  # fmt: skip
    applier = Entry(manager, APPLY, info.group_version, subresource, None, FieldSet())
    try:
        merged, managed = _applied(base, config, managed, applier, shape, force, reset)
    except _Conflicts as conflicts:
        allowed = _allowed_by_last_applied(manager, base, shape) if manager == "kubectl" else None
        remaining = [c for c in conflicts.found if allowed is None or not allowed.has(c.path)]
        if remaining:
            raise _conflict_error(remaining) from None
        merged, managed = _applied(base, config, managed, applier, shape, True, reset)
    merged = clone(merged)  # nothing shared with the live object, which later steps compare
    if manager == "kubectl":
        _update_last_applied(merged, config)
    _store(merged, _capped(managed))
    return merged


class _Conflicts(Exception):
    def __init__(self, found: list[Conflict]) -> None:
        super().__init__(f"{len(found)} conflicts")
        self.found = found


def _check_config(info: ResourceInfo, config: dict[str, Any], shape: Shape) -> None:
    version, kind = config.get("apiVersion") or "", config.get("kind") or ""
    if version != info.group_version or kind != info.kind:
        group, _, ver = str(version).rpartition("/")
        raise errors.bad_request(f"invalid object type: {group}/{ver}, Kind={kind}")
    meta = config.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        raise errors.bad_request("metadata.managedFields must be nil")


def _applied(
    live: dict[str, Any],
    config: dict[str, Any],
    managed: Managed,
    applier: Entry,
    shape: Shape,
    force: bool,
    reset: FieldSet | None,
) -> tuple[dict[str, Any], Managed]:
    """structured-merge-diff's ``Updater.Apply``: merge, prune, then the conflicts."""
    config_set = to_set(config, shape)
    if reset is not None:
        config_set = config_set.recursive_difference(reset)
    merged = merge(live, config, shape)
    merged = {} if merged is MISSING else merged
    last = managed.get(applier.identity)
    managers = dict(managed)
    mine = Entry(applier.manager, APPLY, applier.api_version, applier.subresource,
                 last.time if last else None, config_set)  # fmt: skip
    managers[mine.identity] = mine
    if last is not None and not last.fields.empty():
        merged = _pruned(merged, managers, last.fields, shape)
    diff = compare(_comparable(live), _comparable(merged), shape)
    if reset is not None:
        diff = diff.without(reset)
    changed = diff.changed()
    found: list[Conflict] = []
    out: Managed = {}
    for identity, entry in sorted(managers.items()):
        if identity == mine.identity:
            continue
        clash = entry.fields.intersection(changed)
        found.extend(Conflict(entry, path) for path in clash.paths())
        rest = entry.fields.difference(clash).difference(diff.removed)
        if not rest.empty():
            out[identity] = _with(entry, rest)
    if found and not force:
        raise _Conflicts(found)
    mine.fields = mine.fields.difference(_STRIPPED)
    if not mine.fields.empty():
        if _comparable(merged) != _comparable(live):
            mine.time = now()
        out[mine.identity] = mine
    return merged, out


def _pruned(merged: Any, managers: Managed, last: FieldSet, shape: Shape) -> Any:
    """What the applier owned last time and no longer applies, removed from ``merged`` unless
    another manager owns it (structured-merge-diff's prune, addBackOwnedItems and
    addBackDanglingItems)."""
    last = ensure_named_fields(last, shape)
    pruned = _or_empty(remove_items(merged, last, shape))
    owned = FieldSet()
    for entry in managers.values():
        owned = owned.union(entry.fields)
    merged_set = ensure_named_fields(to_set(merged, shape, strict=False), shape)
    pruned_set = ensure_named_fields(to_set(pruned, shape, strict=False), shape)
    dropped = merged_set.difference(pruned_set.union(ensure_named_fields(owned, shape)))
    pruned = _or_empty(remove_items(merged, dropped, shape))
    pruned_set = ensure_named_fields(to_set(pruned, shape, strict=False), shape)
    return _or_empty(
        remove_items(merged, merged_set.difference(pruned_set).intersection(last), shape)
    )


def _or_empty(value: Any) -> Any:
    return {} if value is MISSING else value


def _conflict_error(found: list[Conflict]) -> APIError:
    causes = [
        Cause("FieldManagerConflict", f"conflict with {c.manager.printed()}", path_string(c.path))
        for c in found
    ]
    if len(found) == 1:
        only = found[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {only.manager.printed()}: "
            f"{path_string(only.path)}"
        )
    else:
        lines: list[str] = []
        by_manager: dict[str, list[Conflict]] = {}
        for c in found:
            by_manager.setdefault(c.manager.identity, []).append(c)
        for identity in sorted(by_manager):
            group = by_manager[identity]
            lines.append(f"conflicts with {group[0].manager.printed()}:")
            lines.extend(f"- {path_string(c.path)}" for c in group)
        message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    return APIError(409, "Conflict", message, {"causes": [c.as_dict() for c in causes]})


def restore_after_admission(obj: dict[str, Any], tracked: Any) -> str:
    """Put back the managedFields ``tracked`` before mutating admission when admission left
    ones that do not decode; the warning to send then ("" when nothing was wrong)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or meta.get("managedFields") is tracked:
        return ""
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


# -- the Scale view ----------------------------------------------------------------------------

_SCALE_REPLICAS: Final = ("f:spec", "f:replicas")
SCALE_VERSION: Final = "autoscaling/v1"


def dotted_path(path: str) -> Path:
    """``.spec.replicas`` as path elements."""
    return tuple("f:" + part for part in path.strip(".").split("."))


def _node_at(trie: dict[str, Any], path: Path) -> Any:
    node: Any = trie
    for element in path:
        node = node.get(element) if isinstance(node, dict) else None
    return node


def _trie(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for element in reversed(path):
        out = {element: out}
    return out


def to_scale_entries(parent: Any, replicas: Path) -> list[dict[str, Any]]:
    """A Scale view's managedFields: every entry of the parent that owns its replica count,
    owning the Scale's ``spec.replicas`` (apimachinery's ScaleHandler.ToSubresource)."""
    return [
        {**raw, "apiVersion": SCALE_VERSION, "fieldsV1": _trie(_SCALE_REPLICAS)}
        for raw in _stored_entries(parent)
        if _is_member(_node_at(raw["fieldsV1"], replicas))
    ]


def from_scale_entries(
    parent: Any, scale: Any, replicas: Path, api_version: str
) -> list[dict[str, Any]]:
    """The parent's managedFields after a write through its Scale view: the replica count is
    owned by the Scale's owners of ``spec.replicas``, nobody else (ScaleHandler.ToParent)."""
    path = FieldSet.of(replicas)
    out: dict[str, dict[str, Any]] = {}
    for raw in _stored_entries(parent):
        if _touches(raw["fieldsV1"], path):
            rest = FieldSet.from_fields_v1(raw["fieldsV1"]).difference(path)
            if rest.empty():
                continue
            raw = {**raw, "fieldsV1": rest.to_fields_v1()}
        out[_raw_identity(raw)] = raw
    for raw in _stored_entries(scale):
        if _is_member(_node_at(raw["fieldsV1"], _SCALE_REPLICAS)):
            mapped = {**raw, "apiVersion": api_version, "fieldsV1": _trie(replicas)}
            out[_raw_identity(mapped)] = mapped
    return sorted(out.values(), key=_raw_order)


# -- kubectl's last-applied annotation ---------------------------------------------------------


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    found = meta.get("annotations") if isinstance(meta, dict) else None
    return found if isinstance(found, dict) else {}


def _allowed_by_last_applied(manager: str, live: dict[str, Any], shape: Shape) -> FieldSet | None:
    """The conflicts kubectl may override: fields of its last client-side apply whose live
    value is still the one it applied (apimachinery's lastappliedmanager.go)."""
    text = _annotations(live).get(LAST_APPLIED)
    if not isinstance(text, str) or not text:
        return None
    try:
        last_applied = json.loads(text)
        applied_set = to_set(last_applied, shape)
        diff = compare(last_applied, _comparable(live), shape)
    except (ValueError, TypedError):
        return None
    return applied_set.difference(diff.modified).difference(diff.added).difference(diff.removed)


def _update_last_applied(merged: dict[str, Any], config: dict[str, Any]) -> None:
    """After a server-side apply by ``kubectl``, its client-side annotation (when the object
    has one) becomes the applied configuration (apimachinery's lastappliedupdater.go)."""
    annotations = _annotations(merged)
    if not annotations.get(LAST_APPLIED):
        return
    body = json.loads(json.dumps(config))
    body_annotations = _annotations(body)
    body_annotations.pop(LAST_APPLIED, None)
    if isinstance(body.get("metadata"), dict) and "annotations" in body["metadata"]:
        body["metadata"]["annotations"] = body_annotations
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, escaped)
    annotations[LAST_APPLIED] = text + "\n"
