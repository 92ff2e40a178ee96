"""Retrying on 409 Conflict with client-go's backoff semantics.

``Backoff(steps, duration, factor, jitter, cap)`` means what client-go's ``wait.Backoff`` means
under ``retry.OnError``: at most ``steps`` attempts, so ``steps - 1`` sleeps; the first sleep is
``duration`` plus up to ``jitter * duration`` at random, each next one ``factor`` times longer
(at most ``cap``). :data:`DEFAULT_RETRY` (5 steps, 10 ms, factor 1.0, jitter 0.1) is for several
clients changing one object; :data:`DEFAULT_BACKOFF` (4 steps, 10 ms, factor 5.0, jitter 0.1) for
a change to an object under a controller's management. When the attempts run out the last
:class:`~kubelite.client.errors.Conflict` is raised. Only Conflict is retried, never
AlreadyExists or anything else.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from kubelite.client.errors import Conflict

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Backoff:
    steps: int = 5
    duration: float = 0.010
    factor: float = 1.0
    jitter: float = 0.1
    cap: float | None = None

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError("a Backoff needs at least one step")

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        """The ``steps - 1`` sleeps between attempts."""
        uniform = (rng or random).random
        duration = self.duration
        for _ in range(self.steps - 1):
            yield duration + uniform() * self.jitter * duration if self.jitter > 0 else duration
            if self.factor:
                duration *= self.factor
                if self.cap is not None:
                    duration = min(duration, self.cap)


DEFAULT_RETRY = Backoff(steps=5, duration=0.010, factor=1.0, jitter=0.1)
DEFAULT_BACKOFF = Backoff(steps=4, duration=0.010, factor=5.0, jitter=0.1)


def retry_on_conflict(fn: Callable[[], T], backoff: Backoff = DEFAULT_RETRY) -> T:
    """Call ``fn`` until it returns without raising Conflict, at most ``backoff.steps`` times.
    ``fn`` must re-read the object each time: retrying a write with a stale copy fails again."""
    delays = backoff.delays()
    while True:
        try:
            return fn()
        except Conflict:
            delay = next(delays, None)
            if delay is None:
                raise
        time.sleep(delay)


async def retry_on_conflict_async(
    fn: Callable[[], Awaitable[T]], backoff: Backoff = DEFAULT_RETRY
) -> T:
    """:func:`retry_on_conflict` for coroutines."""
    delays = backoff.delays()
    while True:
        try:
            return await fn()
        except Conflict:
            delay = next(delays, None)
            if delay is None:
                raise
        await asyncio.sleep(delay)
