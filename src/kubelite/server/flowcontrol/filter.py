"""The API Priority and Fairness filter: kube-apiserver's ``WithPriorityAndFairness``
(``pkg/server/filters/priority-and-fairness.go``), in the slot of the max-in-flight filter
(after impersonation, before authorization).

Each request is classified (:meth:`FlowControl.classify`: the first matching FlowSchema gives
its priority level and flow), then served on a seat of that level, queued until one is free, or
refused with 429 ``Too many requests, please try again later.`` and a ``Retry-After`` that grows
while the level keeps refusing (:class:`Dropped`). Every answer, served or refused, carries
``X-Kubernetes-PF-PriorityLevel-UID`` and ``X-Kubernetes-PF-FlowSchema-UID``. Requests of the
exempt level (``system:masters``, the probes) are only counted.

- A queued request waits at most a quarter of the request timeout (15 s), never more than a
  minute (kube's ``getRequestWaitContext``), then gets 429.
- A watch holds its seat only until its stream begins (its 200 is sent), as kube releases it
  once the watch is initialized; kube waits for the initial events to be queued, kubelite for
  the stream's start, before which a watch has done its reads.
- A write (any verb but get, list and watch) below the exempt level has its body read before it
  takes a seat, so that a body that arrives slowly or never holds only a place in its flow's
  queue (:mod:`.queueset` says why and how this deviates from kube). Its errors (413, a client
  that goes) are answered as the handler would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kubelite.server.flowcontrol.config import FlowControl, Schema
from kubelite.server.flowcontrol.queueset import EXECUTING, WAITING, Seats, Ticket
from kubelite.server.messages import Request, Send
from kubelite.server.overload import READ_ONLY_VERBS, long_running, too_many_requests

Handler = Callable[[Request, Send], Awaitable[None]]

#: maxRetryAfter (seconds)
MAX_RETRY_AFTER = 32
#: the most a request waits in its queue (getRequestWaitContext's hard limit)
MAX_WAIT = 60.0


class Dropped:
    """kube's ``DroppedRequestsTracker``, per priority level: Retry-After starts at 1 s, doubles
    (to 32 s at most, once per Retry-After) while a level refuses at least 3 x Retry-After
    requests per Retry-After seconds, and comes down by one each second it refuses fewer than
    Retry-After."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._levels: dict[str, _DroppedStats] = {}

    def record(self, level: str) -> None:
        stats = self._levels.get(level)
        if stats is None:
            stats = self._levels[level] = _DroppedStats()
        stats.record(int(self.clock()))

    def retry_after(self, level: str) -> int:
        stats = self._levels.get(level)
        return 1 if stats is None else stats.retry_after


class _DroppedStats:
    def __init__(self) -> None:
        self.history: list[tuple[int, int]] = []
        self.second = 0
        self.count = 0
        self.retry_after = 1
        self.raised_at = 0

    def record(self, second: int) -> None:
        if second == self.second:
            self.count += 1
            return
        self.history.append((self.second, self.count))
        self.history = [(t, n) for t, n in self.history if second - t <= MAX_RETRY_AFTER]
        self.second, self.count = second, 1
        # updateRetryAfterIfNeededLocked, over [second - retry_after, second)
        retry = self.retry_after
        dropped = sum(n for t, n in self.history if second - t <= retry and t < second)
        if second - self.raised_at >= retry and dropped >= 3 * retry:
            self.retry_after = min(retry * 2, MAX_RETRY_AFTER)
            self.raised_at = second
        elif dropped < retry and retry > 1:
            self.retry_after = retry - 1


def with_priority_and_fairness(
    inner: Handler, control: FlowControl, request_timeout: float
) -> Handler:
    wait_limit = min(request_timeout / 4 if request_timeout > 0 else 15.0, MAX_WAIT)
    dropped = Dropped()

    async def refuse(send: Send, schema: Schema, reason: str) -> None:
        level = schema.level.name
        key = (level, schema.name, reason)
        control.rejected[key] = control.rejected.get(key, 0) + 1
        dropped.record(level)
        await too_many_requests(send, str(dropped.retry_after(level)).encode())

    clock = control.clock

    async def apf(request: Request, send: Send) -> None:
        now = clock()
        if now >= control.next_sample:
            control.sample(now)
        info = request.info
        if info.verb != "watch" and long_running(info):  # kube does not track these
            await inner(request, send)
            return
        schema, flow = control.classify(request.user, info)
        request.extra_headers = schema.headers
        level = schema.level
        seats = level.seats
        ticket: Ticket | None
        if level.exempt:
            # only counted, as Seats.admit and finish would, inline: most requests are the
            # admin's, and this is all they pay
            assert isinstance(seats, Seats)
            seats.x = x = seats.x + 1
            if x > seats.high:
                seats.high = x
            if info.verb != "watch":
                try:
                    await inner(request, send)
                finally:
                    seats.x -= 1
                return
            ticket = Ticket(None, EXECUTING)
        elif info.verb in READ_ONLY_VERBS:
            ticket = seats.arrive(flow, False)
        else:
            ticket = seats.arrive(flow, True)
            if ticket is not None:
                try:
                    await request.body()
                finally:
                    if not request.read:  # the body failed: its place is given up
                        seats.finish(ticket)
                ticket = seats.admit(ticket)
        if ticket is None:
            await refuse(send, schema, "queue-full" if level.queuing else "concurrency-limit")
            return
        if ticket.state == WAITING and not await _wait(seats, ticket, wait_limit):
            await refuse(send, schema, "time-out")
            return
        try:
            if info.verb == "watch":
                await inner(request, _releasing(send, seats, ticket))
            else:
                await inner(request, send)
        finally:
            seats.finish(ticket)

    return apf


async def _wait(seats: Any, ticket: Ticket, limit: float) -> bool:
    """Wait in the queue for a seat: True once the request has one; False when its wait limit
    passed first (it has left its queue)."""
    future = ticket.future
    assert future is not None
    loop = asyncio.get_running_loop()

    def expire() -> None:
        if seats.withdraw(ticket) and not future.done():
            future.set_result(False)

    timer = loop.call_later(limit, expire)
    try:
        return await future
    except asyncio.CancelledError:
        seats.finish(ticket)  # still waiting: it leaves its queue; just dispatched: the seat
        raise
    finally:
        timer.cancel()


def _releasing(send: Send, seats: Any, ticket: Ticket) -> Send:
    """A watch's ``send``: its seat is released as its response begins."""

    async def releasing(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            seats.finish(ticket)
        await send(message)

    return releasing
