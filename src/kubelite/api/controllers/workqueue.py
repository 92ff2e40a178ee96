"""client-go's rate-limiting work queue, on asyncio: an item added while queued is queued once;
an item added while a worker holds it is queued again once the worker is done (so no two
workers ever hold the same item); an item handed back with :meth:`WorkQueue.add_rate_limited`
returns after a per-item exponential back-off, reset by :meth:`WorkQueue.forget`.

Items are hashable; :attr:`WorkQueue.depth` (queued, not held) is what kube's
``workqueue_depth`` metric shows.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class ShutDown(Exception):
    """:meth:`WorkQueue.get` on a queue that was shut down."""


class WorkQueue(Generic[T]):
    """``base_delay`` doubles per failure of an item, up to ``max_delay`` (client-go's
    ItemExponentialFailureRateLimiter; kube's default is 5 ms to 1000 s)."""

    def __init__(self, name: str, *, base_delay: float = 0.005, max_delay: float = 30.0) -> None:
        self.name = name
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._failures: dict[T, int] = {}
        self._ready = asyncio.Event()
        self._timers: set[asyncio.TimerHandle] = set()
        self._shut = False

    @property
    def depth(self) -> int:
        return len(self._queue)

    def add(self, item: T) -> None:
        if self._shut or item in self._dirty:
            return
        self._dirty.add(item)
        if item in self._processing:
            return  # queued again by done()
        self._queue.append(item)
        self._notify()

    def add_rate_limited(self, item: T) -> None:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        delay = min(self.base_delay * 2**failures, self.max_delay)
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle | None = None

        def fire() -> None:
            assert handle is not None
            self._timers.discard(handle)
            self.add(item)

        handle = loop.call_later(delay, fire)
        self._timers.add(handle)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    async def get(self) -> T:
        while not self._queue and not self._shut:
            self._ready.clear()
            await self._ready.wait()
        if self._shut:
            raise ShutDown
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: T) -> None:
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._notify()

    def shut_down(self) -> None:
        self._shut = True
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
        self._notify()

    def _notify(self) -> None:
        self._ready.set()
