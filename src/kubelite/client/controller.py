"""``Controller``: informers feed keys into a :class:`~kubelite.client.workqueue.WorkQueue`; N
workers call ``reconcile(key)``.

``reconcile`` is level-based: it is told only *which* key to look at, reads the current state
(from an informer's cache, or the API) and makes the world match. Because the queue
deduplicates and serialises per key, a burst of changes to one object costs one reconcile, and
two workers never reconcile the same key at once. A reconcile that raises is retried with the
queue's exponential per-key backoff (up to ``max_retries`` if set); one that returns a number
of seconds is run again after that long (a periodic check); one that returns None is done.

``run()`` starts the informers it was given, waits for every one to sync, then runs the
workers until :meth:`Controller.stop` (or cancellation). Shutdown is graceful: the informers
stop, no new keys are accepted, keys already queued are still reconciled, and a reconcile in
progress is never interrupted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

from kubelite.client.informer import Informer
from kubelite.client.objects import Object, key_of
from kubelite.client.workqueue import QueueShutDown, RateLimiter, WorkQueue

log = logging.getLogger(__name__)

Reconcile = Callable[[str], Awaitable[float | None]]
KeyFunc = Callable[[Object], str | Iterable[str] | None]


class Controller:
    def __init__(
        self,
        reconcile: Reconcile,
        *,
        workers: int = 2,
        rate_limiter: RateLimiter | None = None,
        max_retries: int | None = None,
        name: str = "controller",
    ) -> None:
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self.reconcile = reconcile
        self.workers = workers
        self.max_retries = max_retries
        self.name = name
        self.queue = WorkQueue(rate_limiter)
        self.informers: list[Informer] = []
        self.reconciled = 0  # reconcile calls that returned, for tests and metrics
        self.failed = 0  # reconcile calls that raised
        self._stop = asyncio.Event()

    def watch(self, informer: Informer, key: KeyFunc = key_of) -> None:
        """Enqueue ``key(obj)`` (one key, several, or None for none) whenever ``informer``
        adds, updates or deletes an object. The default key is the object's
        ``namespace/name``; map to an owner's key to reconcile the owner instead."""

        def enqueue(obj: Object) -> None:
            keys = key(obj)
            for k in [keys] if isinstance(keys, str) else keys or ():
                self.queue.add(k)

        informer.add_handlers(
            on_add=enqueue,
            on_update=lambda old, new: enqueue(new),
            on_delete=enqueue,
        )
        if informer not in self.informers:
            self.informers.append(informer)

    async def run(self) -> None:
        """Sync the informers, run the workers, return after a graceful shutdown."""
        started = [informer for informer in self.informers if not informer.running]
        for informer in started:
            informer.start()
        workers: list[asyncio.Task[None]] = []
        try:
            await asyncio.gather(*(informer.wait_synced() for informer in self.informers))
            log.info("%s: caches synced; starting %d workers", self.name, self.workers)
            workers = [asyncio.ensure_future(self._work()) for _ in range(self.workers)]
            await self._stop.wait()
        finally:
            for informer in started:
                await informer.stop()
            self.queue.shutdown()
            if workers:
                # Cancelled from outside: let the workers finish what they hold, then return.
                await asyncio.shield(asyncio.gather(*workers, return_exceptions=True))

    def stop(self) -> None:
        """Ask :meth:`run` to shut down gracefully."""
        self._stop.set()

    async def _work(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self._process(key)
            finally:
                self.queue.done(key)

    async def _process(self, key: str) -> None:
        try:
            requeue_after = await self.reconcile(key)
        except Exception:
            self.failed += 1
            failures = self.queue.failures(key)
            if self.max_retries is not None and failures >= self.max_retries:
                log.exception("%s: dropping %s after %d retries", self.name, key, failures)
                self.queue.forget(key)
                return
            log.warning("%s: reconcile %s failed; retrying", self.name, key, exc_info=True)
            self.queue.add_rate_limited(key)
            return
        self.reconciled += 1
        self.queue.forget(key)
        if requeue_after is not None and requeue_after >= 0:
            self.queue.add_after(key, requeue_after)
