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

import asyncio
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding.stored import Codec
from kubelite.api.errors import APIError, Cause
from kubelite.api.fieldmanager import managedfields
from kubelite.api.fieldmanager.fieldpath import FieldSet, Path, path_string
from kubelite.api.fieldmanager.shapes import Shape, shape_of
from kubelite.api.fieldmanager.typed import Comparison, TypedError, compare
from kubelite.storage import StorageError, Store

Obj = dict[str, Any]

REASON: Final = "FieldValueChanged"
#: Fields the server sets on every write: they change with any change and say nothing of it.
_SKIPPED: Final = FieldSet.of(("f:metadata", "f:generation"))
#: Writes read back at most, and causes given at most (a summary cause says how many more).
MAX_VERSIONS: Final = 32
MAX_CAUSES: Final = 20
#: explanations remembered per resource
REMEMBERED: Final = 64
#: the longest an explanation may add to a 409 (its reads are the store's, which may be slow)
BUDGET_SECONDS: Final = 0.25


class Explainer:
    """The explanations of one resource's 409s. The last few are kept: a client that repeats a
    stale write (a retry loop that does not read again) is answered from memory."""

    def __init__(self, store: Store, codec: Codec, info: ResourceInfo) -> None:
        self.store = store
        self.codec = codec
        self.info = info
        self._recent: OrderedDict[tuple[str, int, int], list[Cause]] = OrderedDict()

    async def explain(self, key: str, sent: int, current: int) -> list[Cause]:
        """The causes of a 409 for a write that sent resourceVersion ``sent`` of ``key`` when
        the stored version is ``current``; [] when the sent version cannot be read."""
        if not 0 < sent < current:
            return []
        memo = (key, sent, current)
        causes = self._recent.get(memo)
        if causes is None:
            causes = await self._explain(key, sent, current)
            self._recent[memo] = causes
            if len(self._recent) > REMEMBERED:
                self._recent.popitem(last=False)
        return causes

    async def _explain(self, key: str, sent: int, current: int) -> list[Cause]:
        try:
            async with asyncio.timeout(BUDGET_SECONDS):
                return await self._read_and_explain(key, sent, current)
        except TimeoutError:
            return []  # a store slow to answer (an etcd election): kube's bare 409, not later

    async def _read_and_explain(self, key: str, sent: int, current: int) -> list[Cause]:
        store, codec = self.store, self.codec
        try:
            base = await store.get(key, sent)  # first: nothing else is read when it is gone
            newest = await store.get(key, current)
            if base is None or newest is None or base.create_revision != newest.create_revision:
                return []  # the sent version is of another incarnation of the name
            history = _History(
                store,
                codec,
                key,
                (newest.mod_revision, await codec.decode(newest)),
                (base.mod_revision, await codec.decode(base)),
                newest.version - base.version,
                shape_of(self.info),
            )
            return await history.causes(sent)
        except (APIError, StorageError, ValueError, TypedError):
            return []  # compacted, a converter failing: kube's bare 409


class _History:
    """The versions from the stored one back to the sent one, read (and compared pairwise)
    only as far back as a changed field still needs placing, at most MAX_VERSIONS writes."""

    def __init__(
        self,
        store: Store,
        codec: Codec,
        key: str,
        newest: tuple[int, Obj],
        base: tuple[int, Obj],
        writes: int,
        shape: Shape,
    ) -> None:
        self.store, self.codec, self.key, self.shape = store, codec, key, shape
        self.newest, self.base = newest, base
        self.unread = writes - 1  # versions between the two (``version`` counts the writes)
        self.oldest_read = newest
        self.writes: list[_Write] = []
        self.reached_base = False

    async def causes(self, sent: int) -> list[Cause]:
        """A cause per field that differs from the sent version to the stored one, placed at
        the newest write that touched it."""
        changes = list(_changes(_compare(self.base[1], self.newest[1], self.shape)))
        shown = changes[:MAX_CAUSES]
        causes = [
            Cause(REASON, await self._placed(verb, path, sent), path_string(path))
            for verb, path in shown
        ]
        if len(changes) > len(shown):
            causes.append(Cause(REASON, f"and {len(changes) - len(shown)} more fields changed"))
        return causes

    async def _placed(self, verb: str, path: Path, sent: int) -> str:
        """``changed by "m" at resourceVersion N``: the newest write that touched ``path``."""
        i = 0
        while (write := await self._write(i)) is not None:
            if write.touches(path):
                manager = write.manager(path)
                by = f' by "{manager}"' if manager else ""
                return f"{verb}{by} at resourceVersion {write.revision}"
            i += 1
        return f"{verb} since resourceVersion {sent}"

    async def _write(self, i: int) -> _Write | None:
        """The ``i``-th write back from the stored version; None past the sent version, or
        past MAX_VERSIONS (no one write to name any more)."""
        while len(self.writes) <= i:
            if self.reached_base or len(self.writes) == MAX_VERSIONS:
                return None
            newer = self.oldest_read
            kv = await self.store.get(self.key, newer[0] - 1) if self.unread > 0 else None
            if kv is None or kv.mod_revision <= self.base[0]:
                older, self.reached_base = self.base, True
            else:
                older = (kv.mod_revision, await self.codec.decode(kv))
                self.unread -= 1
            write = _Write.between(newer[0], older[1], newer[1], self.shape)
            self.writes.append(write)
            self.oldest_read = older
        return self.writes[i]


@dataclass(frozen=True, slots=True)
class _Write:
    """One write, from the version before it to the one it made: the fields it changed, and
    the managedFields entries after it (manager, fields owned, whether this write made or moved
    the entry: :func:`managedfields.entries_written`)."""

    revision: int
    diff: Comparison
    entries: list[tuple[str, dict[str, Any], bool]]  # (manager, its FieldsV1, made or moved)

    @classmethod
    def between(cls, revision: int, older: Obj, newer: Obj, shape: Shape) -> _Write:
        now = _entries(newer)
        moved = managedfields.entries_written(now, _entries(older))
        entries = [
            (str(e.get("manager") or ""), e["fieldsV1"], any(e is m for m in moved)) for e in now
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
        owners = [(m, moved) for m, owned, moved in self.entries if _owns(owned, path)]
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


def _owns(fields_v1: dict[str, Any], path: Path) -> bool:
    """Whether a FieldsV1 document (a stored entry's: canonical, so its elements compare as
    written) holds ``path`` or one of its descendants. A manager that owns a map's node (its
    ``.``) does not own its keys."""
    node: Any = fields_v1
    for element in path:
        node = node.get(element)
        if not isinstance(node, dict):
            return False
    return True


def _touches(fields: FieldSet, path: Path) -> bool:
    """Whether ``fields`` holds ``path``, one of its ancestors or one of its descendants."""
    node = fields
    for element in path:
        if element in node.members:
            return True
        child = node.children.get(element)
        if child is None:
            return False
        node = child
    return not node.empty()


def _entries(obj: Obj) -> list[dict[str, Any]]:
    return managedfields.stored_entries((obj.get("metadata") or {}).get("managedFields"))
