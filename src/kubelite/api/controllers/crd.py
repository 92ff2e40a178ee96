"""CRDs at work: the controller that turns stored CRDs into served kinds (and deletes a CRD's
objects before the CRD itself). The CRD kind's strategy is
:mod:`kubelite.api.kinds.apiextensions.customresourcedefinitions`.

:class:`CRDController` follows the stored CRDs with a store watch, as every kubelite server over
the same store must: its catalogue serves each established CRD's served versions
(:func:`kubelite.api.kinds.apiextensions.crdvalidation.infos`), and stops serving them when the
CRD is gone (its watch caches closed, so open watch streams of those kinds end). A CRD write
does not answer before this server's controller has seen it (:meth:`CRDController.caught_up`),
so a client that creates a CRD can use its kind at once.

Deleting a CRD: its ``customresourcecleanup.apiextensions.k8s.io`` finalizer holds it while the
controller deletes every object of the kind (through the registry, so the objects' own
finalizers are honoured and waited for; creates are refused meanwhile); then the finalizer is
removed and the CRD is purged. State lives in storage, so a restarted server resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import decode, storage_prefix
from kubelite.api.kinds.apiextensions import crdvalidation as crds
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.watchcache import WatchCacheSet
from kubelite.storage import Compacted, EventType, WatchOverflow

log = logging.getLogger(__name__)

Obj = dict[str, Any]

CAUGHT_UP_TIMEOUT = 10.0


class CRDController:
    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        caches: WatchCacheSet,
        terminating: set[tuple[str, str]],
        *,
        retry_seconds: float = 0.2,
    ) -> None:
        info = catalogue.require(crds.GROUP, "v1", crds.PLURAL)
        self.info = info
        self.registry = registry
        self.catalogue = catalogue
        self.caches = caches
        #: (group, plural) of custom kinds whose CRD is being deleted (their creates get 405);
        #: shared with the custom resource strategy
        self.terminating = terminating
        self.retry_seconds = retry_seconds
        self.revision = 0
        self._served: dict[str, list[ResourceInfo]] = {}
        self._cleanups: dict[str, asyncio.Task[None]] = {}
        self._seen = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Serve every stored CRD, then follow changes in the background."""
        await self._relist()
        self._task = asyncio.get_running_loop().create_task(self._follow())

    async def close(self) -> None:
        tasks = [t for t in (self._task, *self._cleanups.values()) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def following(self) -> bool:
        """Started (every stored CRD served) and following changes: kube's informer-sync."""
        return self._task is not None and not self._task.done()

    async def caught_up(self, revision: int) -> None:
        """Return once the controller has applied every CRD change up to ``revision``."""
        async with self._seen:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._seen.wait_for(lambda: self.revision >= revision), CAUGHT_UP_TIMEOUT
                )

    # -- following the store ------------------------------------------------------------------

    async def _relist(self) -> None:
        listing = await self.registry.list(self.info, None, ListOptions())
        names = set()
        for crd in listing["items"]:
            names.add(crd["metadata"]["name"])
            self._sync(crd)
        for gone in set(self._served) - names:
            self._forget(gone, int(listing["metadata"]["resourceVersion"]))
        await self._advance(int(listing["metadata"]["resourceVersion"]))

    async def _follow(self) -> None:
        prefix = storage_prefix(self.info, None)
        while True:
            try:
                async with self.registry.store.watch(prefix, self.revision + 1) as watch:
                    async for event in watch:
                        if event.type is EventType.DELETE:
                            name = event.kv.key.rsplit("/", 1)[-1]
                            self._forget(name, event.revision)
                        else:
                            self._sync(decode(event.kv, self.info))
                        await self._advance(event.revision)
            except (Compacted, WatchOverflow):
                await self._relist()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("CRD controller: following CRDs failed; relisting")
                await asyncio.sleep(self.retry_seconds)
                await self._relist()

    async def _advance(self, revision: int) -> None:
        async with self._seen:
            self.revision = max(self.revision, revision)
            self._seen.notify_all()

    # -- serving and forgetting kinds -----------------------------------------------------------

    def _sync(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        new = crds.infos(crd)
        keys = {(i.group, i.version, i.plural) for i in new}
        for info in self._served.get(name, []):
            if (info.group, info.version, info.plural) not in keys:
                self._unserve(info, 0)
        for info in new:
            existing = self.catalogue.lookup(info.group, info.version, info.plural)
            if existing is not None and existing.builtin:
                continue  # never shadow a built-in kind (NamesAccepted says so)
            if existing != info:
                self.catalogue.add(info, replace=True)
        self._served[name] = new
        kind = (crd["spec"]["group"], crd["spec"]["names"]["plural"])
        if crd["metadata"].get("deletionTimestamp"):
            self.terminating.add(kind)
            held = crds.CLEANUP_FINALIZER in (crd["metadata"].get("finalizers") or [])
            running = name in self._cleanups and not self._cleanups[name].done()
            if held and not running:
                self._cleanups[name] = asyncio.get_running_loop().create_task(self._cleanup(crd))
        else:
            self.terminating.discard(kind)

    def _forget(self, name: str, revision: int) -> None:
        for info in self._served.pop(name, []):
            self.terminating.discard((info.group, info.plural))
            self._unserve(info, revision)

    def _unserve(self, info: ResourceInfo, revision: int) -> None:
        current = self.catalogue.lookup(info.group, info.version, info.plural)
        if current is not None and not current.builtin:
            self.catalogue.remove(info.group, info.version, info.plural)
        self.caches.drop(info, after_revision=revision)

    # -- deleting a CRD's objects ------------------------------------------------------------

    async def _cleanup(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        info = crds.storage_info(crd)
        try:
            while True:
                listing = await self.registry.list(info, None, ListOptions())
                items: list[dict[str, Any]] = listing["items"]
                for obj in items:
                    meta = obj["metadata"]
                    if meta.get("deletionTimestamp"):
                        continue
                    with contextlib.suppress(errors.APIError):
                        await self.registry.delete(info, meta.get("namespace"), meta["name"])
                if not items:
                    break
                await asyncio.sleep(self.retry_seconds)  # objects held by their finalizers
            await self._remove_cleanup_finalizer(name)
        except errors.APIError as exc:
            if exc.code != 404:
                log.exception("CRD controller: cleaning up %s failed", name)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("CRD controller: cleaning up %s failed", name)

    async def _remove_cleanup_finalizer(self, name: str) -> None:
        """The CRD's last step: without the cleanup finalizer the deleting CRD is purged. Written
        through ``status``, as kube's finalizer controller does, so a CRD stored before today's
        validation rules can still go."""

        def drop(crd: Obj) -> None:
            meta = crd["metadata"]
            rest = [f for f in meta.get("finalizers") or [] if f != crds.CLEANUP_FINALIZER]
            if rest:
                meta["finalizers"] = rest
            else:
                meta.pop("finalizers", None)

        await self.registry.mutate(self.info, None, name, drop, subresource="status")
