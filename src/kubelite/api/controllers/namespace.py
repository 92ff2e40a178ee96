"""The namespace controller: empties a terminating namespace, then lets it go (what
kube-controller-manager's namespace controller does).

A namespace whose DELETE set ``deletionTimestamp`` (:mod:`kubelite.api.kinds.core.namespaces`) is
emptied: every object of every namespaced kind in the catalogue stored under it is deleted
through the registry, so objects with ``metadata.finalizers`` are only marked and are waited for.
Once nothing is left the controller removes ``kubernetes`` from ``spec.finalizers`` through the
``finalize`` subresource; the write that leaves both finalizer lists empty deletes the namespace.

It is a controller like any client's: it learns of deletions from a watch on namespaces (the
watch cache), writes only through the registry's storages (conflict-checked), and keeps no state
of its own, so it is crash-safe: on start the watch's initial events show every terminating
namespace again. Namespaces held by finalizers are re-checked with exponential back-off, and
every namespace is looked at again every ``resync_seconds`` (the loop of
:mod:`kubelite.api.controllers.passes`). Work is done in pages of
``page_size`` objects, yielding the event loop between pages.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.controllers.passes import PassController
from kubelite.api.encoding.stored import storage_prefix
from kubelite.api.errors import APIError
from kubelite.api.kinds.core.namespaces import KUBERNETES_FINALIZER, namespace_info
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import (
    BACKGROUND,
    Context,
    DeleteOptions,
    Lister,
)
from kubelite.api.machinery.watchevents import WatchEvent

#: The manager its writes are recorded under (kube runs this controller in kube-controller-manager).
MANAGER = "kube-controller-manager"

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class NamespaceController(PassController):
    """``start()`` runs the controller as tasks on the running loop; ``close()`` stops them.
    ``wait_idle()`` (for tests) returns once a pass that began after the call found nothing it
    could do (every terminating namespace gone or waiting on finalizers)."""

    name = "namespace controller"
    idle_while_waiting = True

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        page_size: int = 256,
        retry_min_seconds: float = 0.05,
        retry_max_seconds: float = 2.0,
        resync_seconds: float = 60.0,
    ) -> None:
        super().__init__(
            registry,
            namespace_info(catalogue),
            retry_min_seconds=retry_min_seconds,
            retry_max_seconds=retry_max_seconds,
            resync_seconds=resync_seconds,
        )
        self.catalogue = catalogue
        self.page_size = page_size

    def wakes(self, event: WatchEvent) -> bool:
        """A namespace is (or is seen) terminating."""
        return bool((event.object.get("metadata") or {}).get("deletionTimestamp"))

    # -- one pass --------------------------------------------------------------------------------

    async def run_pass(self) -> tuple[bool, bool]:
        """One look at every terminating namespace: (wrote anything, some are still waiting)."""
        progressed = pending = False
        listing = await self.registry.list(self.info, None)
        for ns in listing["items"]:
            if not ns["metadata"].get("deletionTimestamp"):
                continue
            wrote, done = await self._sync(ns)
            progressed |= wrote
            pending |= not done
        return progressed, pending

    async def _sync(self, ns: Obj) -> tuple[bool, bool]:
        """Advance one terminating namespace: (wrote anything, finished with it)."""
        name = ns["metadata"]["name"]
        finalizers = (ns.get("spec") or {}).get("finalizers") or []
        if finalizers and KUBERNETES_FINALIZER not in finalizers:
            return False, True  # finalized by us already; other finalizers' owners act next
        wrote, remaining = await self._delete_content(name)
        if remaining:
            return wrote, False
        try:
            changed = await self._finalize(name, ns["metadata"].get("uid", ""))
        except APIError as exc:
            if exc.code in (404, 409):
                return wrote, True
            raise
        return wrote or changed, True

    async def _finalize(self, name: str, uid: str) -> bool:
        """Remove ``kubernetes`` from the namespace's ``spec.finalizers`` through ``finalize``
        (a write that leaves the namespace purgeable deletes it)."""
        changed = False

        def drop_ours(ns: Obj) -> None:
            nonlocal changed
            info = self.info
            if uid and ns["metadata"].get("uid") != uid:
                raise errors.conflict(info.plural, info.group, name)  # a new one: not ours
            spec = ns.get("spec")
            before = spec.get("finalizers") if isinstance(spec, dict) else None
            if isinstance(spec, dict) and isinstance(before, list):
                rest = [f for f in before if f != KUBERNETES_FINALIZER]
                changed = rest != before
                if rest:
                    spec["finalizers"] = rest
                else:
                    spec.pop("finalizers")

        await self.registry.mutate(
            self.info, None, name, drop_ours, subresource="finalize", field_manager=MANAGER
        )
        return changed

    def _content_kinds(self) -> list[ResourceInfo]:
        """One kind per storage prefix (HPA v1 and v2 share one)."""
        out: dict[str, ResourceInfo] = {}
        for info in self.catalogue:
            if info.namespaced:
                out.setdefault(storage_prefix(info, None), info)
        return list(out.values())

    async def _delete_content(self, namespace: str) -> tuple[bool, int]:
        """Delete (or mark, when finalizers hold them) everything stored in ``namespace``:
        (wrote anything, objects still present)."""
        wrote = False
        remaining = 0
        for info in self._content_kinds():
            async for obj in self._objects(info, namespace):
                meta = obj["metadata"]
                if meta.get("deletionTimestamp") and meta.get("finalizers"):
                    remaining += 1
                    continue
                try:
                    _, gone = await self.registry.delete(
                        info,
                        namespace,
                        meta["name"],
                        # Background, as kube's namespace deleter: a kind that orphans by
                        # default (Job) would otherwise wait on an ``orphan`` finalizer
                        DeleteOptions(
                            precondition_uid=str(meta.get("uid") or ""),
                            propagation_policy=BACKGROUND,
                        ),
                    )
                except APIError as exc:
                    if exc.code == 404:
                        continue
                    if exc.code == 409:  # replaced meanwhile: look again next pass
                        remaining += 1
                        continue
                    raise
                wrote = True
                if not gone:
                    remaining += 1
        return wrote, remaining

    async def _objects(self, info: ResourceInfo, namespace: str) -> AsyncIterator[Obj]:
        """Every object of ``info`` in ``namespace``, read a page at a time."""
        lister = self.registry.storage(info)
        if not isinstance(lister, Lister):
            return
        token = ""
        while True:
            scan = lister.list(
                Context(namespace), ListOptions(limit=self.page_size, continue_token=token)
            )
            async for page in scan.pages():
                for obj in page:
                    yield obj
            token = scan.metadata.get("continue", "")
            if not token:
                return
            await asyncio.sleep(0)
