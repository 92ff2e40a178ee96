"""Leader election over a ``coordination.k8s.io/v1`` Lease, as client-go's
``tools/leaderelection`` (``leaderelection.go``) with its ``LeaseLock`` (``resourcelock``):
of the servers sharing one store, the one holding the Lease runs kube-controller-manager's
controllers (:mod:`kubelite.api.controllers.manager`).

The record is the Lease's spec: ``holderIdentity`` (``<hostname>_<uuid4>``, new each run),
``leaseDurationSeconds``, ``acquireTime`` and ``renewTime`` (MicroTime), ``leaseTransitions``
(incremented by each takeover). Every write is a create or a conflict-checked update (the
resourceVersion last read) through the registry, so of two candidates one wins and the other
gets 409.

Time, as in client-go: a candidate trusts no timestamp in the record (another machine's clock
wrote it). It notes the local (monotonic) time at which it last saw the record change, and takes
the Lease over only once ``leaseDurationSeconds`` passed since then without a change, or at once
when ``holderIdentity`` is empty (a released Lease).

The loop (client-go's ``Run``): try every ``retry_period`` (jittered by up to 1.2 times, as
``wait.JitterUntil``) until the Lease is ours; then renew every ``retry_period``, each renewal
retried every ``retry_period`` until ``renew_deadline``; a renewal that fails by its deadline
ends the leadership and the elector is a candidate again (kube-controller-manager exits
instead; a server has more to do). One deviation: a renewal that finds another holder in the
record ends the leadership at once, rather than retrying until the deadline while another
server already runs the controllers. :meth:`LeaderElector.close` stops leading and then
releases the Lease (``ReleaseOnCancel``: client-go writes holder ``""``, duration 1 s, both
times now, transitions kept), so the next candidate takes over without waiting.

On a store no other process can write (:attr:`kubelite.storage.Store.exclusive`: SQLite, whose
writer locks the file) a Lease found at start was held by a process that is gone (a server
killed and started again on its data dir), so ``exclusive_store`` takes it at once instead of
waiting out its duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]

#: client-go's ``JitterFactor``: a candidate waits ``retry_period`` times 1 to 2.2
JITTER_FACTOR = 1.2
LEASE_NAMESPACE, LEASE_NAME = "kube-system", "kube-controller-manager"
#: the field manager of the Lease's writes
MANAGER = "kube-controller-manager"


def microtime(when: datetime | None = None) -> str:
    """metav1.MicroTime's JSON form: RFC 3339 with microseconds, UTC."""
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def default_identity() -> str:
    """kube-controller-manager's: ``<hostname>_<uuid4>``."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class ElectionConfig:
    """The durations of :class:`LeaderElector` (seconds; kube's defaults) and its lock."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    namespace: str = LEASE_NAMESPACE
    name: str = LEASE_NAME
    #: the store is this process's alone: a Lease found at start is taken at once
    exclusive_store: bool = False

    def check(self) -> None:
        """client-go's ``NewLeaderElector`` checks, with its texts."""
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leaseDuration must be greater than renewDeadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError("renewDeadline must be greater than retryPeriod*JitterFactor")
        if self.lease_duration < 1:
            raise ValueError("leaseDuration must be at least one second")
        if self.retry_period <= 0:
            raise ValueError("retryPeriod must be greater than zero")


@dataclass(frozen=True, slots=True)
class Record:
    """client-go's ``LeaderElectionRecord``, read from and written to the Lease's spec."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    leader_transitions: int = 0

    @classmethod
    def of_spec(cls, spec: Obj) -> Record:
        return cls(
            str(spec.get("holderIdentity") or ""),
            int(spec.get("leaseDurationSeconds") or 0),
            str(spec.get("acquireTime") or ""),
            str(spec.get("renewTime") or ""),
            int(spec.get("leaseTransitions") or 0),
        )

    def spec(self) -> Obj:
        """``LeaderElectionRecordToLeaseSpec``: every field set (holder ``""`` included)."""
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        }


class LeaseLock:
    """client-go's ``LeaseLock``: the Lease read and written through the registry, keeping the
    object last read or written (whose resourceVersion makes the next update conflict-checked)."""

    def __init__(self, registry: Registry, info: ResourceInfo, namespace: str, name: str) -> None:
        self.registry = registry
        self.info = info
        self.namespace = namespace
        self.name = name
        self.lease: Obj | None = None

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self) -> Record:
        """The record; raises the registry's 404 when there is no Lease."""
        self.lease = await self.registry.get(self.info, self.namespace, self.name)
        return Record.of_spec(self.lease.get("spec") or {})

    async def create(self, record: Record) -> None:
        body = {
            "apiVersion": self.info.api_version,
            "kind": self.info.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.spec(),
        }
        self.lease = await self.registry.create(
            self.info, self.namespace, body, field_manager=MANAGER
        )

    async def update(self, record: Record) -> None:
        """A PUT carrying the resourceVersion last seen: 409 when someone wrote meanwhile."""
        if self.lease is None:
            raise RuntimeError("lease not initialized, call get or create first")
        body = clone(self.lease)
        body["spec"] = record.spec()
        self.lease, _ = await self.registry.update(
            self.info, self.namespace, self.name, body, field_manager=MANAGER
        )


class LeaderElector:
    """One candidate. :meth:`start` makes a first try (so :attr:`leading` says at once whether
    this server leads) and then runs the loop; ``on_started_leading`` and
    ``on_stopped_leading`` run in the loop, each transition awaited before the next try.
    :meth:`close` stops the loop, stops leading and releases the Lease."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        on_started_leading: Callable[[], Awaitable[None]],
        on_stopped_leading: Callable[[], Awaitable[None]],
        config: ElectionConfig | None = None,
        identity: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config = config or ElectionConfig()
        config.check()
        self.identity = identity or default_identity()
        self.lock = LeaseLock(
            registry,
            catalogue.require("coordination.k8s.io", "v1", "leases"),
            config.namespace,
            config.name,
        )
        self.on_started_leading = on_started_leading
        self.on_stopped_leading = on_stopped_leading
        self.clock = clock
        self.observed = Record()
        self.observed_time = clock()
        self._first_observation = config.exclusive_store
        #: whether this candidate runs the controllers now (set once ``on_started_leading`` ran)
        self.leading = False
        self._task: asyncio.Task[None] | None = None
        self._transition = asyncio.Lock()

    # -- what the record says --------------------------------------------------------------------

    def is_leader(self) -> bool:
        """Whether the record last observed names this candidate (client-go's ``IsLeader``)."""
        return self.observed.holder_identity == self.identity

    @property
    def leader(self) -> str:
        """The holder last observed ("" for none)."""
        return self.observed.holder_identity

    def lease_valid(self, now: float) -> bool:
        return self.observed_time + self.observed.lease_duration_seconds > now

    def _observe(self, record: Record) -> None:
        self.observed = record
        self.observed_time = self.clock()

    # -- one try (client-go's tryAcquireOrRenew) -------------------------------------------------

    async def try_acquire_or_renew(self) -> bool:
        """Acquire the Lease, or renew it when held: whether this candidate holds it now."""
        now = self.clock()
        stamp = microtime()
        record = Record(self.identity, int(self.config.lease_duration), stamp, stamp)
        # 1. the fast path: the holder updates optimistically on the Lease it last saw
        if self.is_leader() and self.lease_valid(now) and self.lock.lease is not None:
            fast = Record(
                record.holder_identity,
                record.lease_duration_seconds,
                self.observed.acquire_time,
                stamp,
                self.observed.leader_transitions,
            )
            try:
                await self.lock.update(fast)
            except APIError as exc:
                log.info("failed to renew lease %s optimistically: %s", self.lock.describe(), exc)
            else:
                self._observe(fast)
                return True
        # 2. read the record, or create it
        try:
            old = await self.lock.get()
        except APIError as exc:
            if exc.code != 404:
                log.warning("error retrieving lease %s: %s", self.lock.describe(), exc)
                return False
            try:
                await self.lock.create(record)
            except APIError as exc:
                log.info("error creating lease %s: %s", self.lock.describe(), exc)
                return False
            self._observe(record)
            return True
        # 3. a changed record restarts the local clock of its expiry
        if old != self.observed:
            self._observe(old)
            if self._first_observation and not self.is_leader():
                # the store is ours alone: whoever held the Lease is gone
                self.observed_time = now - old.lease_duration_seconds
        self._first_observation = False
        if old.holder_identity and self.lease_valid(now) and not self.is_leader():
            return False
        # 4. take it over, or renew it
        if self.is_leader():
            record = Record(
                record.holder_identity,
                record.lease_duration_seconds,
                old.acquire_time,
                stamp,
                old.leader_transitions,
            )
        else:
            record = Record(
                record.holder_identity,
                record.lease_duration_seconds,
                stamp,
                stamp,
                old.leader_transitions + 1,
            )
        try:
            await self.lock.update(record)
        except APIError as exc:  # 409: another candidate wrote first
            log.info("failed to update lease %s: %s", self.lock.describe(), exc)
            return False
        self._observe(record)
        return True

    async def release(self) -> bool:
        """Give the Lease up if this candidate holds it (client-go's ``release``)."""
        if not self.is_leader():
            return True
        stamp = microtime()
        record = Record("", 1, stamp, stamp, self.observed.leader_transitions)
        try:
            try:
                await self.lock.update(record)
            except APIError as exc:
                # a renewal cancelled by close() may have been stored after all, leaving the
                # lock's copy stale: read it again and release it if it is still ours
                if exc.code != 409 or (await self.lock.get()).holder_identity != self.identity:
                    raise
                await self.lock.update(record)
        except Exception as exc:
            log.warning("failed to release lease %s: %s", self.lock.describe(), exc)
            return False
        self._observe(record)
        return True

    # -- the loop --------------------------------------------------------------------------------

    async def start(self) -> None:
        """One try now (leading when it succeeds), then the loop as a task."""
        if self._task is not None:
            return
        held = await self._try()
        if held:
            await self._start_leading()
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name="kubelite-leader-election"
        )

    async def close(self) -> None:
        """Stop the loop, stop leading (the controllers end first, as ``ReleaseOnCancel``
        requires), then release the Lease."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._stop_leading()
        await self.release()

    async def _try(self, deadline: float | None = None) -> bool:
        """One try that fails, instead of raising, on any error (and at ``deadline``)."""
        try:
            if deadline is None:
                return await self.try_acquire_or_renew()
            remaining = max(deadline - self.clock(), 0.001)
            return await asyncio.wait_for(self.try_acquire_or_renew(), remaining)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            return False
        except Exception:
            log.exception("leader election: trying lease %s failed", self.lock.describe())
            return False

    async def _run(self) -> None:
        while True:
            if not self.leading:
                await self._acquire()
                await self._start_leading()
            await self._renew()
            await self._stop_leading()

    async def _acquire(self) -> None:
        """Try every ``retry_period`` (jittered) until the Lease is ours."""
        period = self.config.retry_period
        reported = None
        while True:
            await asyncio.sleep(period + random.random() * JITTER_FACTOR * period)
            if await self._try():
                return
            if self.leader != reported:
                reported = self.leader
                log.info("lease %s is held by %s", self.lock.describe(), reported or "nobody")

    async def _renew(self) -> None:
        """Renew every ``retry_period`` while each renewal succeeds by ``renew_deadline``."""
        config = self.config
        while True:
            await asyncio.sleep(config.retry_period)
            deadline = self.clock() + config.renew_deadline
            while not await self._try(deadline):
                if self.leader and not self.is_leader():
                    log.info("lease %s was taken by %s", self.lock.describe(), self.leader)
                    return
                if self.clock() + config.retry_period > deadline:
                    log.warning("failed to renew lease %s by its deadline", self.lock.describe())
                    return
                await asyncio.sleep(config.retry_period)

    async def _start_leading(self) -> None:
        async with self._transition:
            if self.leading:
                return
            self.leading = True
            log.info("successfully acquired lease %s as %s", self.lock.describe(), self.identity)
            await self.on_started_leading()

    async def _stop_leading(self) -> None:
        async with self._transition:
            if not self.leading:
                return
            self.leading = False
            log.info("stopped leading (lease %s)", self.lock.describe())
            await self.on_stopped_leading()
