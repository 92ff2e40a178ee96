"""What changed since the version a stale write sent: the ``details.causes`` of its 409.

kube-apiserver answers a write with a stale resourceVersion with a bare 409 ("the object has
been modified..."). kubelite keeps that Status, message and reason exactly (clients match them)
and adds one cause per field that differs between the version the client sent and the current
one, with the manager that made the change and the resourceVersion it made it at::

    {"reason": "FieldValueChanged", "field": ".spec.replicas",
     "message": "changed by \"hpa-controller\" at resourceVersion 812"}

The versions in between are read from the store's history (``get`` at a revision), newest
first, only as far back as needed to place every changed field; the manager is the one that
owns the field in the version that changed it (managedFields), else the one whose entry that
write changed. Nothing is explained when the sent version is gone (compacted), belongs to an
earlier incarnation of the name, or lies in the future: the 409 is then kube's, bare.

This runs only on the conflict path, after the write was refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from kubelite.api import managedfields
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import APIError, Cause
from kubelite.api.fieldpath import FieldSet, Path, path_string
from kubelite.api.shapes import Shape, shape_of
from kubelite.api.stored import Codec
from kubelite.api.typed import Comparison, TypedError, compare
from kubelite.storage import StorageError, Store

Obj = dict[str, Any]

REASON: Final = "FieldValueChanged"
#: Fields the server sets on every write: they change with any change and say nothing of it.
_SKIPPED: Final = FieldSet.of(("f:metadata", "f:generation"))
#: Versions read back at most, and causes given at most (a summary cause says how many more).
MAX_VERSIONS: Final = 32
MAX_CAUSES: Final = 20


async def explain(
    store: Store, codec: Codec, info: ResourceInfo, key: str, sent: int, current: int
) -> list[Cause]:
    """The causes of a 409 for a write that sent resourceVersion ``sent`` of ``key`` when the
    stored version is ``current``; [] when the sent version cannot be read."""
    if not 0 < sent < current:
        return []
    try:
        versions = await _versions_since(store, codec, key, sent, current)
        if versions is None:
            return []
        return _causes(versions, shape_of(info), sent)
    except (APIError, StorageError, ValueError, TypedError):
        return []  # compacted, a converter failing: kube's bare 409


async def _versions_since(
    store: Store, codec: Codec, key: str, sent: int, current: int
) -> list[tuple[int, Obj]] | None:
    """The versions from ``current`` back to the one the client read, newest first, each one
    write apart, except that after MAX_VERSIONS the sent one is read directly. None when the
    sent revision names no version of this incarnation of the object."""
    out: list[tuple[int, Obj]] = []
    revision, incarnation = current, 0
    while True:
        if len(out) == MAX_VERSIONS:
            revision = sent
        kv = await store.get(key, revision)
        if kv is None or incarnation not in (0, kv.create_revision):
            return None
        incarnation = kv.create_revision
        out.append((kv.mod_revision, await codec.decode(kv)))
        if kv.mod_revision <= sent:
            return out
        revision = kv.mod_revision - 1


def _causes(versions: list[tuple[int, Obj]], shape: Shape, sent: int) -> list[Cause]:
    """A cause per field that differs from the oldest version to the newest, placed at the
    newest write that touched it."""
    pairs = list(itertools.pairwise(versions))
    if len(versions) > MAX_VERSIONS:
        pairs.pop()  # the last pair is many writes apart: no one write to name
    fields: dict[int, FieldSet] = {}  # each managedFields entry parsed once
    writes: list[_Write] = []  # made only as far back as a field still needs placing

    def placed(verb: str, path: Path) -> str:
        for i, ((revision, newer), (_, older)) in enumerate(pairs):
            if i == len(writes):
                writes.append(_Write.between(revision, older, newer, shape, fields))
            write = writes[i]
            if write.touches(path):
                manager = write.manager(path)
                by = f' by "{manager}"' if manager else ""
                return f"{verb}{by} at resourceVersion {revision}"
        return f"{verb} since resourceVersion {sent}"

    changes = list(_changes(_compare(versions[-1][1], versions[0][1], shape)))
    shown = changes[:MAX_CAUSES]
    causes = [Cause(REASON, placed(verb, path), path_string(path)) for verb, path in shown]
    if len(changes) > len(shown):
        causes.append(Cause(REASON, f"and {len(changes) - len(shown)} more fields changed"))
    return causes


@dataclass(frozen=True, slots=True)
class _Write:
    """One write, from the version before it to the one it made: the fields it changed, and
    the managedFields entries after it (manager, fields owned, whether this write made or moved
    the entry: :func:`managedfields.entries_written`)."""

    revision: int
    diff: Comparison
    entries: list[tuple[str, FieldSet, bool]]

    @classmethod
    def between(
        cls, revision: int, older: Obj, newer: Obj, shape: Shape, fields: dict[int, FieldSet]
    ) -> _Write:
        now = _entries(newer)
        moved = managedfields.entries_written(now, _entries(older))
        entries = [
            (str(e.get("manager") or ""), _fields(e, fields), any(e is m for m in moved))
            for e in now
        ]
        return cls(revision, _compare(older, newer, shape), entries)

    def touches(self, path: Path) -> bool:
        diff = self.diff
        return any(_touches(f, path) for f in (diff.added, diff.modified, diff.removed))

    def manager(self, path: Path) -> str:
        """Who made this write change ``path``: of the managers whose entry it made or moved,
        the one that owns the field now (an update takes the fields it changes); else the one
        such manager, when there is exactly one (a removed field is owned by nobody); else the
        field's owner (a write within the second of its manager's last one, of fields it
        owned, leaves the entry as it was). "" when the entries do not tell."""
        owners = [(m, moved) for m, owned, moved in self.entries if _touches(owned, path, False)]
        writers = [m for m, _, moved in self.entries if moved]
        chosen = [m for m, moved in owners if moved] or (
            writers if len(writers) == 1 else [m for m, _ in owners]
        )
        return chosen[0] if chosen else ""


def _compare(old: Obj, new: Obj, shape: Shape) -> Comparison:
    diff = compare(managedfields.comparable(old), managedfields.comparable(new), shape)
    return diff.without(_SKIPPED)


def _changes(diff: Comparison) -> Iterator[tuple[str, Path]]:
    """("changed", leaf) for each modified field; ("added"/"removed", path) for the topmost of
    each added or removed subtree."""
    for verb, fields in (
        ("changed", diff.modified),
        ("added", diff.added),
        ("removed", diff.removed),
    ):
        for path in fields.paths():
            if verb == "changed" or len(path) == 1 or not fields.has(path[:-1]):
                yield verb, path


def _touches(fields: FieldSet, path: Path, ancestors: bool = True) -> bool:
    """Whether ``fields`` holds ``path``, one of its descendants or (``ancestors``) one of its
    ancestors. A manager that owns a map's node (FieldsV1's ``.``) does not own its keys."""
    node = fields
    for depth, element in enumerate(path, 1):
        if element in node.members and (ancestors or depth == len(path)):
            return True
        child = node.children.get(element)
        if child is None:
            return False
        node = child
    return not node.empty()


def _entries(obj: Obj) -> list[dict[str, Any]]:
    return managedfields.stored_entries((obj.get("metadata") or {}).get("managedFields"))


def _fields(entry: dict[str, Any], parsed: dict[int, FieldSet]) -> FieldSet:
    found = parsed.get(id(entry))
    if found is None:
        try:
            found = FieldSet.from_fields_v1(entry.get("fieldsV1") or {})
        except ValueError:
            found = FieldSet()
        parsed[id(entry)] = found
    return found
