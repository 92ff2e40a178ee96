"""The work queue of the controllers keyed by object (client-go's ``util/workqueue`` rate-limiting
queue) on one event loop.

- A key added while queued is queued once; a key added while a worker processes it is processed
  again after :meth:`WorkQueue.done` (never by two workers at once).
- :meth:`WorkQueue.add_rate_limited` adds a key after its exponential back-off (from
  ``retry_min_seconds``, doubling per failure, to ``retry_max_seconds``); :meth:`WorkQueue.forget`
  resets it once the key succeeded.
- :meth:`WorkQueue.shut_down` refuses new keys, drops queued and delayed ones and wakes the
  workers, whose :meth:`WorkQueue.get` then returns None (a controller that stops leading must
  not work off its queue, unlike client-go's ``ShutDown``, which drains it).

``len()`` is the number of keys waiting (kube's ``workqueue_depth``); :meth:`WorkQueue.wait_idle`
returns once no key waits or is being processed (keys waiting out a back-off do not count).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    """Keys are hashable: object keys (``namespace/name``) or the garbage collector's nodes."""

    def __init__(self, *, retry_min_seconds: float = 0.05, retry_max_seconds: float = 30.0) -> None:
        self.retry_min_seconds = retry_min_seconds
        self.retry_max_seconds = retry_max_seconds
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._failures: dict[K, int] = {}
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._signal = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._shut = False

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shut

    def add(self, key: K) -> None:
        if self._shut or key in self._dirty:
            return
        self._dirty.add(key)
        self._idle.clear()
        if key not in self._processing:
            self._queue.append(key)
            self._signal.set()

    def add_after(self, key: K, delay: float) -> None:
        """Add ``key`` after ``delay`` seconds (the earliest of several pending adds wins)."""
        if self._shut:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        pending = self._timers.get(key)
        if pending is not None and pending.when() <= loop.time() + delay:
            return
        if pending is not None:
            pending.cancel()
        self._timers[key] = loop.call_later(delay, self._fire, key)

    def add_rate_limited(self, key: K) -> None:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay = self.retry_min_seconds * 2.0 ** min(failures, 32)
        self.add_after(key, min(delay, self.retry_max_seconds))

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    async def get(self) -> K | None:
        """The next key, marked as being processed; None once shut down and empty."""
        while not self._queue or self._shut:
            if self._shut:
                return None
            self._signal.clear()
            await self._signal.wait()
        key = self._queue.popleft()
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        """The worker finished ``key``: queue it again if it was added meanwhile."""
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.append(key)
            self._signal.set()
        elif not self._queue and not self._processing:
            self._idle.set()

    async def wait_idle(self) -> None:
        await self._idle.wait()

    def shut_down(self) -> None:
        self._shut = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._signal.set()
        self._idle.set()

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)
