"""The scheduler's queue of pending pods (pkg/scheduler/backend/queue/scheduling_queue.go,
simplified): each pod key is active (to be tried now, in order), backing off (1 s doubling per
attempt up to 10 s since its last attempt), or unschedulable (until an event may help, and at the
latest after ``podMaxInUnschedulablePodsDuration``, 5 minutes); never in two places at once."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque

BACKOFF_INITIAL, BACKOFF_MAX = 1.0, 10.0
#: podMaxInUnschedulablePodsDuration
UNSCHEDULABLE_MAX_SECONDS = 300.0


class SchedulingQueue:
    """Pending pods by key: active (to schedule now, in order), backing off, or unschedulable
    (waiting for an event), each key in one place at a time."""

    def __init__(self) -> None:
        self.active: deque[str] = deque()
        self.waiting: dict[str, asyncio.TimerHandle] = {}
        self.unschedulable: dict[str, asyncio.TimerHandle] = {}
        self.attempts: dict[str, int] = {}
        self.last_attempt: dict[str, float] = {}
        self.in_flight: str | None = None
        self.moves = 0
        self._signal = asyncio.Event()

    def __len__(self) -> int:
        return len(self.active)

    def holds(self, key: str) -> bool:
        return (
            key in self.active or key in self.waiting or key in self.unschedulable
            or key == self.in_flight
        )  # fmt: skip

    def add(self, key: str) -> None:
        """A pod to schedule now (a new one), unless it is queued already."""
        if key in self.active or key in self.waiting:
            return
        self._cancel(self.unschedulable.pop(key, None))
        self.active.append(key)
        self._signal.set()

    def _backoff_left(self, key: str) -> float:
        attempts = self.attempts.get(key, 0)
        if not attempts:
            return 0.0
        duration = min(BACKOFF_INITIAL * float(1 << min(attempts - 1, 16)), BACKOFF_MAX)
        started: float = self.last_attempt.get(key, 0.0)
        return started + duration - time.monotonic()

    def requeue(self, key: str) -> None:
        """To the active queue once the pod's back-off is over."""
        if key in self.active or key in self.waiting:
            return
        self._cancel(self.unschedulable.pop(key, None))
        left = self._backoff_left(key)
        if left <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        self.waiting[key] = loop.call_later(left, self._backed_off, key)

    def park(self, key: str) -> None:
        """Unschedulable: wait for an event, at most UNSCHEDULABLE_MAX_SECONDS."""
        if self.holds(key) and key != self.in_flight:
            return
        loop = asyncio.get_running_loop()
        self.unschedulable[key] = loop.call_later(UNSCHEDULABLE_MAX_SECONDS, self.requeue, key)

    def move(self, keys: list[str] | None = None) -> None:
        """An event that may make unschedulable pods schedulable (kube's
        ``MoveAllToActiveOrBackoffQueue``)."""
        self.moves += 1
        for key in list(self.unschedulable) if keys is None else keys:
            if key in self.unschedulable:
                self.requeue(key)

    def drop(self, key: str) -> None:
        """Out of the queue (the pod is being bound), its attempts remembered for a retry."""
        with contextlib.suppress(ValueError):
            self.active.remove(key)
        self._cancel(self.waiting.pop(key, None))
        self._cancel(self.unschedulable.pop(key, None))

    def forget(self, key: str) -> None:
        """The pod is no longer pending."""
        self.drop(key)
        self.attempts.pop(key, None)
        self.last_attempt.pop(key, None)

    async def pop(self) -> str:
        while not self.active:
            self._signal.clear()
            await self._signal.wait()
        key = self.active.popleft()
        self.in_flight = key
        self.attempts[key] = self.attempts.get(key, 0) + 1
        self.last_attempt[key] = time.monotonic()
        return key

    def close(self) -> None:
        for handle in [*self.waiting.values(), *self.unschedulable.values()]:
            handle.cancel()
        self.waiting.clear()
        self.unschedulable.clear()
        self.active.clear()

    def _backed_off(self, key: str) -> None:
        self.waiting.pop(key, None)
        self.add(key)

    @staticmethod
    def _cancel(handle: asyncio.TimerHandle | None) -> None:
        if handle is not None:
            handle.cancel()
