"""Server-side apply (``PATCH`` with ``application/apply-patch+yaml``): structured-merge-diff's
``Updater.Apply`` (sigs.k8s.io/structured-merge-diff ``merge/update.go``) as apimachinery's field
manager runs it (k8s.io/apimachinery ``pkg/util/managedfields/internal/structuredmerge.go``).

:func:`apply` takes the stored object (None when there is none yet) and the applied
configuration: the configuration is merged into the live object by the kind's shape; the
applier owns exactly the fields of its configuration; fields it owned before and no longer sets
are removed unless someone else owns them; a changed field another manager owns is a 409
conflict with one cause per field, unless ``force``. An object without managedFields is first
recorded as a whole by ``before-first-apply``. The manager ``kubectl`` gets kubectl's rules
for its client-side apply annotation (lastappliedmanager.go, lastappliedupdater.go).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding.stored import clone, now, same_content
from kubelite.api.errors import APIError, Cause
from kubelite.api.fieldmanager.fieldpath import FieldSet, Path, path_string
from kubelite.api.fieldmanager.managedfields import (
    APPLY,
    STRIPPED,
    BadManagedFields,
    Entry,
    Managed,
    capped,
    comparable,
    decode,
    store,
    updated,
    with_fields,
    zero,
)
from kubelite.api.fieldmanager.shapes import Shape, shape_of
from kubelite.api.fieldmanager.typed import (
    MISSING,
    TypedError,
    compare,
    ensure_named_fields,
    merge,
    remove_items,
    to_set,
)

__all__ = ["BadConfiguration", "apply"]

BEFORE_FIRST_APPLY: Final = "before-first-apply"
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"


class BadConfiguration(ValueError):
    """An applied configuration that does not fit the kind's schema (an undeclared field, a
    wrong type, a duplicate or keyless list item): apiserver's "failed to create typed patch
    object"."""


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
    not exist yet), with its managedFields; neither argument is changed, and the result shares
    nothing with them. Raises the 409 of the conflicts (unless ``force``), the 400s of a
    configuration of another type or with managedFields, :class:`BadConfiguration`, and
    ValueError for a live object the shape cannot walk. Entries of the live object that do not
    decode are dropped (it was stored before fields were tracked)."""
    shape = shape_of(info)
    _check_config(info, config)
    try:
        config_set = to_set(config, shape)
    except TypedError as exc:
        raise BadConfiguration(str(exc)) from None
    if reset is not None:
        config_set = config_set.recursive_difference(reset)
    base = live if live is not None else {}
    try:
        managed = decode((base.get("metadata") or {}).get("managedFields"))
    except BadManagedFields:
        managed = {}  # stored before fields were tracked, as a client sent them: start over
    if not managed and live is not None:
        managed = updated({}, zero(info, shape), comparable(live), shape, info.group_version,
                          BEFORE_FIRST_APPLY, subresource, reset)  # fmt: skip
    applier = Entry(manager, APPLY, info.group_version, subresource, None, FieldSet())
    try:
        merged, managed = _applied(base, config, config_set, managed, applier, shape, force, reset)
    except _Conflicts as conflicts:
        allowed = _allowed_by_last_applied(manager, base, shape) if manager == "kubectl" else None
        remaining = [c for c in conflicts.found if allowed is None or not allowed.has(c.path)]
        if remaining:
            raise _conflict_error(remaining) from None
        merged, managed = _applied(base, config, config_set, managed, applier, shape, True, reset)
    merged = clone(merged)  # nothing shared with the live object or the configuration
    if manager == "kubectl":
        _update_last_applied(merged, config)
    store(merged, capped(managed))
    return merged


class _Conflicts(Exception):
    def __init__(self, found: list[Conflict]) -> None:
        super().__init__(f"{len(found)} conflicts")
        self.found = found


def _check_config(info: ResourceInfo, config: dict[str, Any]) -> None:
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
    config_set: FieldSet,
    managed: Managed,
    applier: Entry,
    shape: Shape,
    force: bool,
    reset: FieldSet | None,
) -> tuple[dict[str, Any], Managed]:
    """structured-merge-diff's ``Updater.Apply``: merge, prune, then the conflicts;
    ``config_set`` is what the configuration sets, reset fields left out."""
    merged = merge(live, config, shape)
    merged = {} if merged is MISSING else merged
    last = managed.get(applier.identity)
    managers = dict(managed)
    mine = Entry(applier.manager, APPLY, applier.api_version, applier.subresource,
                 last.time if last else None, config_set)  # fmt: skip
    managers[mine.identity] = mine
    if last is not None and not last.fields.empty():
        merged = _pruned(merged, managers, last.fields, shape)
    diff = compare(comparable(live), comparable(merged), shape)
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
            out[identity] = with_fields(entry, rest)
    if found and not force:
        raise _Conflicts(found)
    mine.fields = mine.fields.difference(STRIPPED)
    if not mine.fields.empty():
        if not same_content(comparable(merged), comparable(live)):
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


# -- kubectl's last-applied annotation -------------------------------------------------------


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
        diff = compare(last_applied, comparable(live), shape)
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
    for char, escaped in _GO_JSON_ESCAPES:
        text = text.replace(char, escaped)
    annotations[LAST_APPLIED] = text + "\n"  # Go's json.Encoder ends with a newline


#: What Go's encoding/json escapes that Python's json.dumps does not.
_GO_JSON_ESCAPES: Final = (
    ("&", "\\u0026"),
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)
