"""A keyed work queue with client-go's guarantees, for asyncio.

- **Deduplication.** A key added many times before a worker takes it is processed once.
- **Per-key serialisation.** A key being processed is never handed to a second worker; added
  again meanwhile, it is queued once more when the first worker calls :meth:`WorkQueue.done`.
- **Rate-limited requeue.** :meth:`WorkQueue.add_rate_limited` adds a key after the delay its
  rate limiter gives: :class:`ExponentialBackoff` doubles it on each failure of that key (5 ms,
  10 ms, 20 ms … up to 1,000 s, client-go's ``ItemExponentialFailureRateLimiter`` defaults) until
  :meth:`WorkQueue.forget` resets it after a success.
- **Shutdown.** After :meth:`WorkQueue.shutdown` adds are ignored, keys already queued are still
  handed out, and then :meth:`WorkQueue.get` raises :class:`QueueShutDown`.
"""

from __future__ import annotations

import asyncio
from typing import Protocol


class QueueShutDown(Exception):
    """The queue is shut down and empty: a worker should exit."""


class RateLimiter(Protocol):
    def when(self, key: str) -> float:
        """The delay before ``key`` may be retried (and count one more failure)."""
        ...

    def forget(self, key: str) -> None: ...

    def failures(self, key: str) -> int: ...


class ExponentialBackoff:
    """``base * 2**failures`` seconds, at most ``cap``, counted per key."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[str, int] = {}

    def when(self, key: str) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        if failures > 64:  # 2**64 * base is past any cap; keep the float finite
            return self.cap
        return min(self.base * 2.0**failures, self.cap)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)


class WorkQueue:
    def __init__(self, rate_limiter: RateLimiter | None = None) -> None:
        self.rate_limiter: RateLimiter = rate_limiter or ExponentialBackoff()
        # A key is in _ready exactly when it is dirty and not being processed.
        self._ready: asyncio.Queue[str | None] = asyncio.Queue()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._shutting_down = False

    def __len__(self) -> int:
        """Keys waiting to be handed out (not the ones being processed or delayed)."""
        return len(self._dirty - self._processing)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._ready.put_nowait(key)

    def add_after(self, key: str, delay: float) -> None:
        """Add ``key`` after ``delay`` seconds; if it is already waiting to be added, the
        earlier of the two times wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        existing = self._timers.get(key)
        if existing is not None:
            if existing.when() <= loop.time() + delay:
                return
            existing.cancel()
        self._timers[key] = loop.call_later(delay, self._fire, key)

    def _fire(self, key: str) -> None:
        self._timers.pop(key, None)
        self.add(key)

    def add_rate_limited(self, key: str) -> None:
        self.add_after(key, self.rate_limiter.when(key))

    def forget(self, key: str) -> None:
        """Stop counting ``key``'s failures (call after it was processed successfully)."""
        self.rate_limiter.forget(key)

    def failures(self, key: str) -> int:
        return self.rate_limiter.failures(key)

    async def get(self) -> str:
        """The next key; mark it done with :meth:`done`. Raises :class:`QueueShutDown`."""
        key = await self._ready.get()
        if key is None:
            self._ready.put_nowait(None)  # wake the next waiting worker too
            raise QueueShutDown
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._ready.put_nowait(key)

    def shutdown(self) -> None:
        """Ignore adds from now on, drop delayed adds, and let :meth:`get` raise
        :class:`QueueShutDown` once the keys already queued are handed out."""
        if self._shutting_down:
            return
        self._shutting_down = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._ready.put_nowait(None)
