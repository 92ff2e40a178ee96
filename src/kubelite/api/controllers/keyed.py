"""The loop of a controller keyed by object name, as kube-controller-manager writes one: shared
informers (:class:`Informer`: every object of the kinds followed, in memory, listed through the
registry and then watched), a work queue of keys (:mod:`kubelite.api.controllers.workqueue`) and
workers.

A subclass of :class:`KeyedController` says which kinds it follows (``infos``), which keys a change
enqueues (:meth:`KeyedController.enqueue`, called with the object before and after each change,
and for every object after each listing), and what one key's sync does
(:meth:`KeyedController.sync`: read from the informer, write through the registry; raise to be
retried with the queue's per-key back-off). A sync may ask to run again later
(``self.queue.add_after(key, seconds)``): the node controllers' periodic heartbeats and checks.
:meth:`KeyedController.started` runs once after the first listing, before the workers (the
simulated kubelets register their Nodes there). :meth:`start` and :meth:`close` may alternate (a
leader that loses its lease stops its controllers; it may lead again later).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator
from typing import Any, Generic, TypeVar

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.controllers.workqueue import WorkQueue
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]
K = TypeVar("K", bound=Hashable)
#: how long :meth:`KeyedController.close` lets workers finish the key they hold
CLOSE_GRACE_SECONDS = 5.0


class Informer(StoreFollower):
    """Every object of each kind followed, by plural and ``(namespace, name)``; each change is
    handed to ``owner.enqueue(plural, old, new)`` (``old`` None: added; ``new`` None: gone)."""

    def __init__(
        self, registry: Registry, infos: dict[str, ResourceInfo], owner: KeyedController[Any]
    ) -> None:
        super().__init__(registry, infos, name=owner.name)
        self.owner = owner
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {plural: {} for plural in infos}

    def get(self, plural: str, namespace: str, name: str) -> Obj | None:
        return self.objects[plural].get((namespace, name))

    def all(self, plural: str) -> Iterator[Obj]:
        return iter(list(self.objects[plural].values()))

    def replace(self, plural: str, objects: list[Obj]) -> None:
        old = self.objects[plural]
        new = {_key(o): o for o in objects}
        self.objects[plural] = new
        for key, gone in old.items():
            if key not in new:
                self.owner.enqueue(plural, gone, None)
        for key, obj in new.items():
            self.owner.enqueue(plural, old.get(key), obj)

    def put(self, plural: str, obj: Obj) -> None:
        key = _key(obj)
        old = self.objects[plural].get(key)
        self.objects[plural][key] = obj
        self.owner.enqueue(plural, old, obj)

    def remove(self, plural: str, namespace: str, name: str) -> None:
        old = self.objects[plural].pop((namespace, name), None)
        if old is not None:
            self.owner.enqueue(plural, old, None)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        return (namespace, name) in self.objects[plural]


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class KeyedController(ABC, Generic[K]):
    """``start()`` runs the controller as tasks on the running loop; ``close()`` stops them;
    :meth:`queue_depth` is its queue's length (``workqueue_depth``)."""

    #: names its tasks and log lines
    name = "keyed controller"

    def __init__(
        self,
        registry: Registry,
        infos: dict[str, ResourceInfo],
        *,
        workers: int = 2,
        retry_min_seconds: float = 0.05,
        retry_max_seconds: float = 30.0,
    ) -> None:
        self.registry = registry
        self.infos = infos
        self.workers = workers
        self.retry_min_seconds = retry_min_seconds
        self.retry_max_seconds = retry_max_seconds
        self.queue: WorkQueue[K] = self._new_queue()
        self.informer = Informer(registry, infos, self)
        self._listed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    @abstractmethod
    def enqueue(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        """Queue the keys a change of one object concerns (``self.queue.add``)."""

    @abstractmethod
    async def sync(self, key: K) -> None:
        """Bring ``key`` to what the controller wants; raise to be retried."""

    async def started(self) -> None:
        """Once the informer listed, before the workers run (override)."""

    def reset(self) -> None:
        """Forget what a previous run kept in memory (override; called on each start)."""

    def queue_depth(self) -> int:
        return len(self.queue)

    async def wait_settled(self) -> None:
        """Return once the informer has listed and every key queued since was synced."""
        await self._listed.wait()
        await self.queue.wait_idle()

    def start(self) -> None:
        """Run on the running loop (idempotent): list and follow, then the workers."""
        if self._tasks:
            return
        if self.queue.shutting_down:
            self.queue = self._new_queue()
            self.informer = Informer(self.registry, self.infos, self)
            self._listed = asyncio.Event()
        self.reset()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(), name=f"kubelite-{self.name}")]

    async def close(self) -> None:
        """Stop following, let the workers finish the key they hold, then end."""
        tasks, self._tasks = self._tasks, []
        self.queue.shut_down()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, CLOSE_GRACE_SECONDS)
        await self.informer.close()

    def _new_queue(self) -> WorkQueue[K]:
        return WorkQueue(
            retry_min_seconds=self.retry_min_seconds, retry_max_seconds=self.retry_max_seconds
        )

    async def _run(self) -> None:
        while not self.queue.shutting_down:  # a listing fails only while the store is away
            try:
                await self.informer.start()
                break
            except Exception:
                log.warning("%s: listing failed; trying again", self.name, exc_info=True)
                await asyncio.sleep(self.retry_max_seconds / 10)
        try:
            await self.started()
        except Exception:
            log.exception("%s: starting failed", self.name)
        self._listed.set()
        await asyncio.gather(*(self._work() for _ in range(self.workers)))

    async def _work(self) -> None:
        while (key := await self.queue.get()) is not None:
            await asyncio.sleep(0)  # a queue that always has a key must not starve the informer
            try:
                await self.sync(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("%s: syncing %s failed (%s); retrying", self.name, key, exc)
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)
