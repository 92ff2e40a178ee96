"""The etcd cluster as kubelite sees it: the URL, one gRPC channel per member, fail-over, and what
a failed call means.

aetcd's client talks to one endpoint, so the list is kept here. Calls go to the *current* member;
when a call fails in a way that says the member may be gone (connection refused or reset, a
deadline, "no leader", "leader changed"), :meth:`Endpoints.failed` moves on to the next member and
the caller retries there, with a short backoff, until its deadline. A member that comes back is
used again once the others fail; nothing moves back on its own.

**A failure cuts the calls it strands.** When the leader dies, a call sent to a follower (or to
the member a failed call moved to, before it noticed) waits for a leader that will not answer,
until the attempt's timeout (``ATTEMPT_TIMEOUT``): 5 s of stalled writes. So once a member fails,
for ``TROUBLE_SECONDS`` every call that has been in flight for ``STALE_AFTER_FAILURE`` is cut
(:meth:`Endpoints.send`) and fails as ``IN_DOUBT``: a read is retried at once on the current
member, a compare-and-swap re-reads its key there first, as for any other doubtful answer. A
cut is not itself a member's failure: it neither moves callers on nor prolongs the trouble.

Whether a call may be retried depends on what the failure says about it (:func:`classify`):

- ``NOT_SENT``: the channel had no connection, so the request never left this process. Any call,
  a write too, may be sent again.
- ``IN_DOUBT``: the request may have reached etcd and may yet be applied (a reset connection, a
  deadline, a leader change). Reads are retried. A compare-and-swap is never resent blindly: the
  caller re-reads the key first (see ``EtcdStore._txn``).
- ``REJECTED``: etcd answered and refused (too large, out of space, compacted, future revision):
  definite, not retried.

**Outages fail fast.** A short blip (a leader election, a member restarting or failing over) is
ridden out by the retries above. But once no member has answered any call for ``OUTAGE_AFTER``
seconds (etcd paused, partitioned, or without quorum), an operation gets one short try
(``DOWN_TRY``) instead of retrying for ``OPERATION_TIMEOUT``, and one already retrying gives up:
requests are answered in seconds (kube-apiserver's etcd client gives up on the request's
context), not after every retry of every client. The store's health prober
(``EtcdStore._watch_health``, kube's etcd health check: a quorum read of ``<prefix>/health``
every second) keeps :attr:`Endpoints.last_answer` fresh while etcd is idle and notices it
coming back within a second.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qs

import aetcd
import grpc
from aetcd import rpc

from kubelite.storage.errors import Unavailable

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_PORT = 2379
DEFAULT_PREFIX = "/kubelite"

# One attempt may wait this long for its answer (a quorum read waits out an election); one
# operation, with its retries on other members, this long in all.
ATTEMPT_TIMEOUT = 5.0
OPERATION_TIMEOUT = 20.0
# No member answered for this long: etcd is out, and calls fail fast until one answers again.
OUTAGE_AFTER = 5.0
# While etcd is out, an operation still gets one try this long (it may have just come back).
DOWN_TRY = 1.0
BACKOFF_FIRST, BACKOFF_MAX = 0.02, 0.5
# After a member fails, for this long, calls in flight this long are cut and retried (above).
TROUBLE_SECONDS = 5.0
STALE_AFTER_FAILURE = 0.5

# Ask etcd to refuse (rather than hang) while the member has no leader: a member cut off from
# the quorum then fails fast and we move to another (kube-apiserver sets the same on watches).
REQUIRE_LEADER = (("hasleader", "true"),)

CHANNEL_OPTIONS = {
    "grpc.max_receive_message_length": -1,
    "grpc.keepalive_time_ms": 30_000,
    "grpc.keepalive_timeout_ms": 10_000,
    # A restarted member is reconnected within a second, not after gRPC's default 2 minutes.
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.min_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1_000,
}


@dataclass(frozen=True, slots=True)
class EtcdURL:
    """``etcd://host:port[,host:port...][?prefix=/kubelite]``.

    Every store key is stored under ``prefix`` (etcd key = prefix + key). Two stores sharing one
    etcd need prefixes of which neither is a prefix of the other (``/a`` and ``/ab`` overlap).
    """

    endpoints: tuple[tuple[str, int], ...]
    prefix: str = DEFAULT_PREFIX

    @classmethod
    def parse(cls, rest: str) -> EtcdURL:
        """Parse what follows ``etcd://``."""
        hosts, _, query = rest.partition("?")
        if "#" in rest:
            raise ValueError(f"etcd URL {rest!r}: fragments are not supported")
        endpoints = tuple(_parse_endpoint(part) for part in hosts.split(",") if part.strip())
        if not endpoints:
            raise ValueError("etcd URL names no endpoint; expected etcd://host:port[,host:port]")
        params = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
        unknown = sorted(set(params) - {"prefix"})
        if unknown:
            raise ValueError(f"etcd URL: unknown parameter(s) {', '.join(unknown)}; known: prefix")
        prefix = params.get("prefix", [DEFAULT_PREFIX])[-1]
        if not prefix.startswith("/") or prefix.endswith("/"):
            raise ValueError(
                f"etcd URL: prefix {prefix!r} must start with '/' and not end with '/'"
            )
        return cls(endpoints, prefix)


def _parse_endpoint(part: str) -> tuple[str, int]:
    part = part.strip()
    if "://" in part:
        raise ValueError(f"etcd endpoint {part!r}: give host:port, without a scheme")
    if part.startswith("["):  # [::1]:2379
        host, _, port = part[1:].partition("]")
        port = port.removeprefix(":")
    elif part.count(":") == 1:
        host, _, port = part.partition(":")
    else:
        host, port = part, ""
    if not host:
        raise ValueError(f"etcd endpoint {part!r} has no host")
    try:
        number = int(port) if port else DEFAULT_PORT
    except ValueError:
        raise ValueError(f"etcd endpoint {part!r}: port {port!r} is not a number")
    if not 0 < number < 65536:
        raise ValueError(f"etcd endpoint {part!r}: port {number} is out of range")
    return host, number


class Failure(enum.Enum):
    NOT_SENT = "not sent"
    IN_DOUBT = "in doubt"
    REJECTED = "rejected"


# etcd's definite refusals; everything else may have been applied (or may still be).
_REJECTING_CODES = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS,
    }
)


def classify(exc: grpc.aio.AioRpcError) -> Failure:
    code = exc.code()
    if code in _REJECTING_CODES:
        return Failure.REJECTED
    if code == grpc.StatusCode.UNAVAILABLE and "failed to connect" in (exc.details() or ""):
        return Failure.NOT_SENT
    return Failure.IN_DOUBT


class Cut(grpc.aio.AioRpcError):  # type: ignore[misc]
    """A call :meth:`Endpoints.send` cut because a member's failure stranded it: ``IN_DOUBT``,
    as any unanswered call."""


class Member:
    """One endpoint: its aetcd client (which owns the channel) and the raw stubs kubelite uses.
    The stubs are aetcd's generated ones; its higher-level calls cannot read at a revision or
    page, and wrap every key-value in a Python object, so the store calls the stubs."""

    def __init__(self, index: int, host: str, port: int) -> None:
        self.index = index
        self.name = f"{host}:{port}"
        self.client = aetcd.Client(host, port, options=dict(CHANNEL_OPTIONS))
        self.kv: Any = None
        self.watch: Any = None

    async def connect(self) -> None:
        if self.kv is None:
            await self.client.connect()  # makes the channel; connects lazily on the first call
            self.kv = self.client.kvstub
            self.watch = rpc.WatchStub(self.client.channel)

    async def close(self) -> None:
        await self.client.close()
        self.kv = self.watch = None


class Endpoints:
    def __init__(self, endpoints: tuple[tuple[str, int], ...]) -> None:
        self.members = [Member(i, host, port) for i, (host, port) in enumerate(endpoints)]
        self._current = 0
        self.closed = False
        #: loop time of the last call any member answered (set on connect)
        self.last_answer = 0.0
        #: unary calls awaited through :meth:`send`, with the loop time each was sent
        self._in_flight: dict[Any, float] = {}
        #: calls :meth:`_cut_stale` cancelled (their await raises CancelledError)
        self._cut: set[Any] = set()
        #: until when (loop time) stale calls are cut, and whether a sweep is scheduled
        self._trouble_until = 0.0
        self._sweeping = False

    async def connect(self) -> None:
        """Make every member's channel (gRPC connects lazily, on a channel's first call)."""
        for member in self.members:
            await member.connect()
        self.answered()

    def answered(self) -> None:
        """A member answered a call: etcd is up."""
        self.last_answer = asyncio.get_running_loop().time()

    def silent_for(self) -> float:
        """Seconds since any member last answered."""
        return asyncio.get_running_loop().time() - self.last_answer

    def down(self) -> bool:
        """No member has answered for ``OUTAGE_AFTER``: calls should fail fast."""
        return self.silent_for() > OUTAGE_AFTER

    def deadline(self) -> float:
        """When an operation starting now gives up (loop time): ``OPERATION_TIMEOUT`` from now,
        or ``DOWN_TRY`` while etcd is out."""
        return asyncio.get_running_loop().time() + (DOWN_TRY if self.down() else OPERATION_TIMEOUT)

    def give_up(self, deadline: float) -> bool:
        """A call failed: stop retrying? At the deadline, or once etcd is out."""
        return asyncio.get_running_loop().time() >= deadline or self.down()

    def outage(self, what: str, exc: BaseException) -> Unavailable:
        if self.down():
            return Unavailable(
                f"{what}: etcd has not answered for {self.silent_for():.0f}s ({describe(exc)})"
            )
        return Unavailable(f"{what}: no etcd member answered in time ({describe(exc)})")

    async def current(self) -> Member:
        return self.members[self._current]

    async def send(self, call: Awaitable[T]) -> T:
        """Await the unary gRPC ``call``; a call that a member's failure leaves stranded is cut
        (see the module's docstring) and raises an ``IN_DOUBT`` AioRpcError."""
        self._in_flight[call] = asyncio.get_running_loop().time()
        try:
            return await call
        except asyncio.CancelledError:
            cut = call in self._cut
            self._cut.discard(call)
            task = asyncio.current_task()
            if not cut or (task is not None and task.cancelling()):
                raise  # the caller's own cancellation
            raise Cut(
                grpc.StatusCode.UNAVAILABLE,
                grpc.aio.Metadata(),
                grpc.aio.Metadata(),
                details="cut: in flight when another call found a member gone",
            ) from None
        finally:
            self._in_flight.pop(call, None)

    def _trouble(self) -> None:
        """A member failed: cut stale calls now and for ``TROUBLE_SECONDS``."""
        loop = asyncio.get_running_loop()
        self._trouble_until = loop.time() + TROUBLE_SECONDS
        self._cut_stale()
        if not self._sweeping:
            self._sweeping = True
            loop.call_later(STALE_AFTER_FAILURE / 2, self._sweep)

    def _sweep(self) -> None:
        loop = asyncio.get_running_loop()
        if self.closed or loop.time() > self._trouble_until:
            self._sweeping = False
            return
        self._cut_stale()
        loop.call_later(STALE_AFTER_FAILURE / 2, self._sweep)

    def _cut_stale(self) -> None:
        stale = asyncio.get_running_loop().time() - STALE_AFTER_FAILURE
        for call, sent in list(self._in_flight.items()):
            if sent <= stale and call not in self._cut and not call.done():
                self._cut.add(call)
                call.cancel()

    def failed(self, member: Member, exc: BaseException) -> None:
        """``member`` did not answer a call: move to the next one, unless another caller
        already has (many calls fail together when a member dies); calls stranded by the
        failure are cut. A cut call is not such a failure: it would prolong the trouble and
        move every caller again, and under a slow etcd cut calls would keep cutting others."""
        if isinstance(exc, Cut):
            return
        self._trouble()
        if len(self.members) > 1 and member.index == self._current:
            self._current = (self._current + 1) % len(self.members)
            log.warning(
                "etcd %s failed (%s); switching to %s",
                member.name,
                describe(exc),
                self.members[self._current].name,
            )

    async def close(self) -> None:
        self.closed = True
        await asyncio.gather(*(m.close() for m in self.members), return_exceptions=True)

    async def retrying(
        self, call: Callable[[Member, float], Awaitable[T]], what: str, deadline: float
    ) -> T:
        """Run ``call(member, timeout)`` on the current member; on a failure that is not a
        refusal, fail over and run it again until ``deadline`` (loop time). Only for calls that
        may safely run twice: reads, and writes known not to have been sent."""
        loop = asyncio.get_running_loop()
        attempt = 0
        while True:
            if self.closed:
                raise Unavailable("store is closed")
            member = await self.current()
            try:
                timeout = min(ATTEMPT_TIMEOUT, max(deadline - loop.time(), 0.01))
                result = await self.send(call(member, timeout))
            except grpc.aio.AioRpcError as exc:
                if classify(exc) is Failure.REJECTED:
                    self.answered()
                    raise
                self.failed(member, exc)
                if self.give_up(deadline):
                    raise self.outage(what, exc)
                await backoff(attempt)
                attempt += 1
            else:
                self.answered()
                return result


async def backoff(attempt: int) -> None:
    await asyncio.sleep(min(BACKOFF_FIRST * 2**attempt, BACKOFF_MAX))


def describe(exc: BaseException) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    return repr(exc)
