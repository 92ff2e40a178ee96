"""``<resource>/<name>/history``: an object's past versions, kept beyond compaction by the
history retention policy (:mod:`kubelite.api.machinery.retention`), as a kubelite.dev/v1
``ObjectRevisionList``, oldest first::

    {"apiVersion": "kubelite.dev/v1", "kind": "ObjectRevisionList", "metadata": {},
     "items": [{"resourceVersion": "812", "time": "2026-12-01T10:00:00Z",
                "manager": "kubectl-client-side-apply", "operation": "Update",
                "object": {... the object as it was, at the version asked for ...}}, ...]}

Each item is one write: ``operation`` is ``Create`` for the first version of an object,
``Delete`` for its deletion (``object``: what was deleted, stamped with the deletion's
resourceVersion, as a watch's DELETED event is), else the operation (``Update`` or ``Apply``) of
the managedFields entry the write changed, and ``manager`` that entry's manager
(``subresource`` too when it was a subresource's write). kube records no manager for a
deletion: it is left empty. A write that changed no entry (one manager writing twice in one
second with the same fields) is put down to the entry written last.

The store keeps the versions (SQLite, in each write's own transaction); a store that keeps none
(etcd) makes the subresource answer 405 MethodNotAllowed saying so. Authorized as any
subresource: ``get`` on ``<resource>/history``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo, Subresource
from kubelite.api.encoding import resourceversion as rv
from kubelite.api.encoding.stored import Codec, storage_key
from kubelite.api.fieldmanager import managedfields
from kubelite.api.machinery.rest import Context, GetOptions
from kubelite.storage import HistoryEntry, Store, Unsupported

Obj = dict[str, Any]

NAME = "history"
API_VERSION = "kubelite.dev/v1"
LIST_KIND = "ObjectRevisionList"
CREATE, DELETE = "Create", "Delete"


class HistoryREST:
    """The ``history`` subresource of one resource: GET only."""

    object_info = None  # a view: no Table, no field validation
    #: what discovery lists: ``configmaps/history``, kubelite.dev/v1 ObjectRevisionList
    subresource_info = Subresource(NAME, "kubelite.dev", "v1", LIST_KIND, ("get",))

    def __init__(self, info: ResourceInfo, store: Store, codec: Codec) -> None:
        self.info = info
        self.store = store
        self.codec = codec

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Obj:
        info = self.info
        key = storage_key(info, ctx.namespace if info.namespaced else None, name)
        try:
            kept = await self.store.history(key)
        except Unsupported as exc:
            raise errors.APIError(
                405,
                "MethodNotAllowed",
                f"{info.plural}/{NAME} is not available on this server's storage: {exc}",
                {},
            ) from None
        if not kept and await self.store.get(key) is None:
            raise errors.not_found(info.plural, info.group, name)
        items = []
        before: Obj | None = None  # the version before, of the same object
        for entry in kept:
            obj = await self.codec.read(entry.value, entry.revision)
            items.append(_item(entry, obj, before))
            before = None if entry.deleted else obj
        return {"apiVersion": API_VERSION, "kind": LIST_KIND, "metadata": {}, "items": items}


def _item(entry: HistoryEntry, obj: Obj, before: Obj | None) -> Obj:
    """One revision; ``before`` is the version just before it of the same object, if kept."""
    item: Obj = {
        "resourceVersion": rv.format_rv(entry.revision),
        "time": datetime.fromtimestamp(int(entry.time), UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    entries = managedfields.stored_entries((obj.get("metadata") or {}).get("managedFields"))
    if entry.deleted:
        item.update(manager="", operation=DELETE)
    elif entry.revision == entry.create_revision:
        first = entries[0] if entries else {}
        item.update(manager=first.get("manager") or "", operation=CREATE)
    else:
        writer = _writer(entries, before)
        item.update(
            manager=writer.get("manager") or "", operation=writer.get("operation") or "Update"
        )
        if writer.get("subresource"):
            item["subresource"] = writer["subresource"]
    item["object"] = obj
    return item


def _writer(entries: list[Obj], before: Obj | None) -> Obj:
    """The managedFields entry a write made: of those it made or moved since the version
    before (:func:`managedfields.entries_written`), else (nothing told, or the version before
    is not kept) of all, the newest. Ties go to the last listed."""
    old: list[Obj] = []
    if before is not None:
        old = managedfields.stored_entries((before.get("metadata") or {}).get("managedFields"))
    candidates = managedfields.entries_written(entries, old) or entries
    if not candidates:
        return {}
    # RFC 3339 in seconds, UTC: the text orders as the time does
    return max(reversed(candidates), key=lambda e: str(e.get("time") or ""))
