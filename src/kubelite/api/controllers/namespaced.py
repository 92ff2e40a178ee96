"""The loop of the controllers that keep one named object in every namespace (the ServiceAccount
controller's ``default``, the root CA publisher's ``kube-root-ca.crt``): an informer, a work
queue of namespace names and workers, as kube-controller-manager writes them.

:class:`NamespaceSyncController` follows namespaces and the objects named ``object_name`` of one
namespaced kind (:class:`~kubelite.api.machinery.following.StoreFollower`: listed through the
registry, then watched from the list's revision, listed again when the watch ends), holding both in
memory (the controller's listers). What it enqueues:

- a namespace, whenever it is added or changes;
- the namespace of an ``object_name`` object that changes or goes;
- every namespace after each listing, and every ``resync_seconds``.

A subclass writes :meth:`NamespaceSyncController.sync` (one namespace, read from the listers;
writes through the registry). A sync that raises is retried with the queue's per-key back-off;
one that returns resets it. :meth:`start` and :meth:`close` may alternate (a leader that loses
its lease stops its controllers; it may lead again later).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from typing import Any

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.controllers.workqueue import WorkQueue
from kubelite.api.kinds.core.namespaces import namespace_info
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]
NAMESPACES = "namespaces"
#: how long :meth:`NamespaceSyncController.close` lets workers finish the key they hold
CLOSE_GRACE_SECONDS = 5.0


class _Listers(StoreFollower):
    """Namespaces by name, and the objects named ``object_name`` by namespace."""

    def __init__(self, owner: NamespaceSyncController) -> None:
        super().__init__(
            owner.registry,
            {NAMESPACES: owner.namespace_info, owner.info.plural: owner.info},
            name=owner.name,
        )
        self.owner = owner
        self.namespaces: dict[str, Obj] = {}
        self.objects: dict[str, Obj] = {}

    def replace(self, plural: str, objects: list[Obj]) -> None:
        if plural == NAMESPACES:
            self.namespaces = {o["metadata"]["name"]: o for o in objects}
        else:
            name = self.owner.object_name
            self.objects = {
                o["metadata"].get("namespace", ""): o
                for o in objects
                if o["metadata"].get("name") == name
            }
        for namespace in self.namespaces:
            self.owner.queue.add(namespace)

    def put(self, plural: str, obj: Obj) -> None:
        meta = obj["metadata"]
        if plural == NAMESPACES:
            self.namespaces[meta["name"]] = obj
            self.owner.queue.add(meta["name"])
        elif meta.get("name") == self.owner.object_name:
            self.objects[meta.get("namespace", "")] = obj
            self.owner.queue.add(meta.get("namespace", ""))

    def remove(self, plural: str, namespace: str, name: str) -> None:
        if plural == NAMESPACES:
            self.namespaces.pop(name, None)
        elif name == self.owner.object_name:
            self.objects.pop(namespace, None)
            self.owner.queue.add(namespace)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        if plural == NAMESPACES:
            return name in self.namespaces
        return name == self.owner.object_name and namespace in self.objects


class NamespaceSyncController(ABC):
    """``start()`` runs the controller as tasks on the running loop; ``close()`` stops them;
    :meth:`queue_depth` is its queue's length (``workqueue_depth``)."""

    #: names its tasks and log lines
    name = "namespace sync controller"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        info: ResourceInfo,
        object_name: str,
        *,
        workers: int = 2,
        resync_seconds: float = 300.0,
        retry_min_seconds: float = 0.05,
        retry_max_seconds: float = 30.0,
    ) -> None:
        self.registry = registry
        self.catalogue = catalogue
        self.info = info
        self.namespace_info = namespace_info(catalogue)
        self.object_name = object_name
        self.workers = workers
        self.resync_seconds = resync_seconds
        self.retry_min_seconds = retry_min_seconds
        self.retry_max_seconds = retry_max_seconds
        self.queue = self._new_queue()
        self.listers = _Listers(self)
        self._listed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    @abstractmethod
    async def sync(self, namespace: str) -> None:
        """Bring ``namespace`` to what the controller wants; raise to be retried."""

    def namespace(self, name: str) -> Obj | None:
        """The namespace as last seen."""
        return self.listers.namespaces.get(name)

    def active(self, name: str) -> bool:
        """Whether the namespace is held and its ``status.phase`` is ``Active``."""
        ns = self.namespace(name)
        return ns is not None and (ns.get("status") or {}).get("phase") == "Active"

    def held(self, namespace: str) -> Obj | None:
        """The ``object_name`` object of ``namespace`` as last seen."""
        return self.listers.objects.get(namespace)

    def queue_depth(self) -> int:
        return len(self.queue)

    async def wait_settled(self) -> None:
        """Return once the informer has listed and every namespace queued since was synced
        (or is waiting out a back-off after a failure)."""
        await self._listed.wait()
        await self.queue.wait_idle()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Run on the running loop (idempotent): list and follow, then the workers."""
        if self._tasks:
            return
        if self.queue.shutting_down:
            self.queue = self._new_queue()
            self.listers = _Listers(self)
            self._listed = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(), name=f"kubelite-{self.name}")]

    async def close(self) -> None:
        """Stop following, let the workers finish the key they hold, then end."""
        tasks, self._tasks = self._tasks, []
        self.queue.shut_down()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, CLOSE_GRACE_SECONDS)
        await self.listers.close()

    def _new_queue(self) -> WorkQueue[str]:
        return WorkQueue(
            retry_min_seconds=self.retry_min_seconds, retry_max_seconds=self.retry_max_seconds
        )

    async def _run(self) -> None:
        while not self.queue.shutting_down:  # a listing fails only while the store is away
            try:
                await self.listers.start()
                self._listed.set()
                break
            except Exception:
                log.warning("%s: listing failed; trying again", self.name, exc_info=True)
                await asyncio.sleep(self.retry_max_seconds / 10)
        resync = asyncio.get_running_loop().create_task(self._resync())
        try:
            await asyncio.gather(*(self._work() for _ in range(self.workers)))
        finally:
            resync.cancel()

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(self.resync_seconds)
            for namespace in list(self.listers.namespaces):
                self.queue.add(namespace)

    async def _work(self) -> None:
        while (namespace := await self.queue.get()) is not None:
            try:
                await self.sync(namespace)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info(
                    "%s: syncing namespace %s failed (%s); retrying", self.name, namespace, exc
                )
                self.queue.add_rate_limited(namespace)
            else:
                self.queue.forget(namespace)
            finally:
                self.queue.done(namespace)
