"""The filters that keep one client from holding the server: kube-apiserver's limits
(``--max-requests-inflight``, ``--max-mutating-requests-inflight``, 400 and 200 by default,
pkg/server/config.go) and its timeout for requests that are not long-running
(pkg/server/filters/timeout.go).

With API Priority and Fairness (kube's default since 1.20, ``--enable-priority-and-fairness``)
the two limits are summed into the server's concurrency limit, which :mod:`.flowcontrol` shares
among the priority levels. Without it (or in an app built without a flow controller):

- **max in flight** (pkg/server/filters/maxinflight.go): at most ``max_requests_inflight``
  read-only requests (get, list) and ``max_mutating_requests_inflight`` others are served at
  once (0 turns a limit off). Long-running requests (watches) are not counted. A request over its
  limit is answered 429 ``Too many requests, please try again later.`` (text/plain, as Go's
  ``http.Error``) with ``Retry-After: 1``; except that a ``system:masters`` user is always
  served (kube: "a super-admin or a loopback connection"), though it does take a slot.
- **timeout**: a request that is not long-running has ``request_timeout`` seconds (kube's
  ``--request-timeout``, 1m0s) to be answered, reading its body included: a client that stops
  sending its body is answered 504 ``Timeout: request did not complete within the allotted
  timeout`` and dropped, rather than holding a slot for ever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kubelite.api import errors
from kubelite.api.machinery.request import RequestInfo
from kubelite.server.messages import Request, Send

log = logging.getLogger(__name__)

Handler = Callable[[Request, Send], Awaitable[None]]

#: kube's nonMutatingRequestVerbs
READ_ONLY_VERBS = frozenset({"get", "list", "watch"})
#: kube-apiserver's BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"),
#: sets.NewString("attach", "exec", "proxy", "log", "portforward")) (cmd/kube-apiserver/app/
#: server.go): no request timeout, no in-flight seat; priority and fairness skips all but watches
LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})
SYSTEM_MASTERS = "system:masters"
RETRY_AFTER = b"1"
TOO_MANY = b"Too many requests, please try again later.\n"


@dataclass(frozen=True, slots=True)
class Limits:
    """kube-apiserver's ``--max-requests-inflight``, ``--max-mutating-requests-inflight``,
    ``--request-timeout`` (seconds; 0 turns it off) and ``--enable-priority-and-fairness``."""

    max_requests_inflight: int = 400
    max_mutating_requests_inflight: int = 200
    request_timeout: float = 60.0
    priority_and_fairness: bool = True

    @property
    def server_concurrency(self) -> int:
        """The concurrency limit API Priority and Fairness shares among its levels."""
        return self.max_requests_inflight + self.max_mutating_requests_inflight


def long_running(info: RequestInfo) -> bool:
    return info.verb in LONG_RUNNING_VERBS or info.subresource in LONG_RUNNING_SUBRESOURCES


class _Counter:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.inflight = 0


def with_max_in_flight(inner: Handler, limits: Limits) -> Handler:
    if not limits.max_requests_inflight and not limits.max_mutating_requests_inflight:
        return inner
    read_only = _Counter(limits.max_requests_inflight)
    mutating = _Counter(limits.max_mutating_requests_inflight)

    async def limit(request: Request, send: Send) -> None:
        info = request.info
        if long_running(info):
            await inner(request, send)
            return
        counter = read_only if info.verb in READ_ONLY_VERBS else mutating
        if not counter.limit:
            await inner(request, send)
            return
        if counter.inflight >= counter.limit:
            if SYSTEM_MASTERS in request.user.groups:
                await inner(request, send)
                return
            await too_many_requests(send)
            return
        counter.inflight += 1
        try:
            await inner(request, send)
        finally:
            counter.inflight -= 1

    return limit


async def too_many_requests(send: Send, retry_after: bytes = RETRY_AFTER) -> None:
    """kube's ``tooManyRequests``: ``Retry-After`` then Go's ``http.Error``."""
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(TOO_MANY)).encode()),
                (b"retry-after", retry_after),
                (b"x-content-type-options", b"nosniff"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": TOO_MANY})


def with_timeout(inner: Handler, limits: Limits) -> Handler:
    seconds = limits.request_timeout
    if seconds <= 0:
        return inner
    deadlines = _Deadlines(seconds)

    async def bounded(request: Request, send: Send) -> None:
        if long_running(request.info):
            await inner(request, send)
            return
        task = deadlines.start()
        try:
            await inner(request, send)
        except asyncio.CancelledError:
            if not deadlines.expired(task):
                raise
            if request.status:  # too late for a Status: the response is cut short
                log.warning("%s %s: timed out mid-response", request.method, request.path)
                return
            raise errors.timeout("request did not complete within the allotted timeout")
        finally:
            deadlines.finish(task)

    return bounded


class _Deadlines:
    """The requests in flight and when each must be done. One sweeper task cancels those past
    their deadline, a few times per timeout: far cheaper per request than a timer of its own
    (``asyncio.timeout``), for a limit that is a minute by default."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.interval = min(1.0, seconds / 4)
        self.running: dict[asyncio.Task[object], float] = {}
        self.cancelled: set[asyncio.Task[object]] = set()
        self.sweeper: asyncio.Task[None] | None = None

    def start(self) -> asyncio.Task[object]:
        task = asyncio.current_task()
        assert task is not None
        loop = task.get_loop()
        self.running[task] = loop.time() + self.seconds
        if self.sweeper is None or self.sweeper.done():
            self.sweeper = loop.create_task(self._sweep(loop))
        return task

    def finish(self, task: asyncio.Task[object]) -> None:
        self.running.pop(task, None)
        if task in self.cancelled:  # cancelled, but the request ended another way: withdraw it
            self.cancelled.discard(task)
            task.uncancel()

    def expired(self, task: asyncio.Task[object]) -> bool:
        """Whether the cancellation ``task`` got was the deadline's (then it is withdrawn, so
        the request can still be answered)."""
        if task not in self.cancelled:
            return False
        self.cancelled.discard(task)
        task.uncancel()
        return True

    async def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        while self.running:
            await asyncio.sleep(self.interval)
            now = loop.time()
            for task, deadline in list(self.running.items()):
                if deadline <= now and task not in self.cancelled:
                    self.cancelled.add(task)
                    task.cancel()
