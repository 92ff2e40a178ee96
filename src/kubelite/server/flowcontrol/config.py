"""The FlowSchemas and PriorityLevelConfigurations in force, digested into what the filter asks
on every request: kube-apiserver's APF config controller (``pkg/util/flowcontrol/
apf_controller.go``, ``digestConfigObjects`` and ``updateBorrowingLocked``).

- **Priority levels.** Each PriorityLevelConfiguration that is well formed (its ``type`` and
  union members agree, ``Exempt`` if and only if it is named ``exempt``, a limit response and
  queuing that shuffle sharding can deal) gets its seats: the server's concurrency limit (the sum
  of ``--max-requests-inflight`` and ``--max-mutating-requests-inflight``, 600 by default) split
  by ``nominalConcurrencyShares`` (``ceil(limit * shares / sum of shares)``), less what it may
  lend (``lendablePercent``), plus what it may borrow (``borrowingLimitPercent``, else the whole
  server). A level keeps its queues and requests across changes of its configuration. The
  mandatory levels ``exempt`` and ``catch-all`` are imagined from the bootstrap ones while no
  object holds them.
- **Flow schemas.** The schemas whose level exists, ordered by ``matchingPrecedence`` then name;
  the mandatory ``exempt`` first and ``catch-all`` last when missing. Each schema whose level is
  missing is set aside, and its ``Dangling`` condition says so (:meth:`FlowControl.digest`
  returns the conditions to write).
- **Borrowing.** Every 10 seconds (:meth:`FlowControl.adjust`) each level's current limit is set
  anew from its seat demand since the last time (:mod:`.allocation`).

A level removed while requests are in it keeps serving them with its last limit (kube also keeps
counting its shares until it is idle; here the others' nominal limits change at once).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User
from kubelite.api.shufflesharding import MAX_HASH_BITS, required_entropy_bits
from kubelite.server.flowcontrol.allocation import DemandStats, Item, allocate
from kubelite.server.flowcontrol.matching import (
    Matcher,
    compile_schema,
    distinguisher,
    groups_only,
)
from kubelite.server.flowcontrol.queueset import (
    SAMPLE_SECONDS,
    Clock,
    QueueSet,
    Seats,
    flow_hash,
)

log = logging.getLogger(__name__)

Obj = dict[str, Any]

EXEMPT, CATCH_ALL = "exempt", "catch-all"
#: the response headers (flowcontrol.ResponseHeaderMatched*, as Go's canonical header keys)
PL_HEADER = b"X-Kubernetes-Pf-Prioritylevel-Uid"
FS_HEADER = b"X-Kubernetes-Pf-Flowschema-Uid"
DANGLING = "Dangling"


@dataclass(eq=False)
class Level:
    """priorityLevelState: a level's configuration, its seats and its limits."""

    name: str
    uid: str
    spec: Obj
    seats: Seats | QueueSet
    shares: int = 0
    lendable_percent: int | None = None
    borrowing_percent: int | None = None
    nominal: int = 0
    minimum: int = 0
    maximum: int = 0
    current: int = 0
    stats: DemandStats = field(default_factory=DemandStats)
    #: never limited, only counted
    exempt: bool = field(init=False)
    #: its requests queue (its flow is hashed)
    queuing: bool = field(init=False)

    def __post_init__(self) -> None:
        self.exempt = isinstance(self.seats, Seats) and self.seats.exempt
        self.queuing = isinstance(self.seats, QueueSet)


@dataclass(eq=False)
class Schema:
    """A FlowSchema in force: how requests match it, the level they go to, the headers that
    tell the client (the two UIDs), and its flows' hashes."""

    name: str
    uid: str
    precedence: int
    level: Level
    method: str
    matches: Matcher
    headers: tuple[tuple[bytes, bytes], ...]
    #: the groups whose members match whatever they ask, when that is all the schema says
    #: (and its level does not queue: such a schema is classified without its flow)
    groups: frozenset[str] | None = None

    def flow(self, user: User, info: RequestInfo) -> int:
        """The request's flow (this schema's name and the request's distinguisher), hashed."""
        return flow_hash(self.name, distinguisher(self.method, user, info))


class BrokenLevel(ValueError):
    """A PriorityLevelConfiguration this server cannot use (kube ignores it, with a warning)."""


def _queuing(spec: Obj, name: str) -> tuple[int, int, int] | None:
    """queueSetCompleterForPL's checks: (queues, hand size, queue length limit) of a queuing
    level, None for one without queues."""
    kind = spec.get("type")
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if (kind == "Limited") != (limited is not None):
        raise BrokenLevel("broken union structure at the top, for Limited")
    if (kind == "Exempt") != (exempt is not None):
        raise BrokenLevel("broken union structure at the top, for Exempt")
    if (kind == "Exempt") != (name == EXEMPT):
        raise BrokenLevel("non-alignment between name and type")
    if limited is None:
        return None
    response = limited.get("limitResponse") or {}
    queuing = response.get("queuing")
    if (response.get("type") == "Reject") != (queuing is None):
        raise BrokenLevel("broken union structure for limit response")
    if queuing is None:
        return None
    queues = int(queuing.get("queues") or 0)
    hand = int(queuing.get("handSize") or 0)
    length = int(queuing.get("queueLengthLimit") or 0)
    if queues < 1 or hand < 1:
        raise BrokenLevel(f"deckSize {queues} or handSize {hand} is not positive")
    if hand > queues:
        raise BrokenLevel(f"handSize {hand} is greater than deckSize {queues}")
    if required_entropy_bits(queues, hand) > MAX_HASH_BITS:
        raise BrokenLevel(
            f"required entropy bits of deckSize {queues} and handSize {hand} is greater "
            f"than {MAX_HASH_BITS}"
        )
    return queues, hand, length


def _commons(spec: Obj) -> tuple[int, int | None, int | None]:
    """plSpecCommons: (nominalConcurrencyShares, lendablePercent, borrowingLimitPercent)."""
    limited = spec.get("limited")
    if limited is not None:
        shares = limited.get("nominalConcurrencyShares")
        return (
            30 if shares is None else int(shares),
            _int_or_none(limited.get("lendablePercent")),
            _int_or_none(limited.get("borrowingLimitPercent")),
        )
    exempt = spec.get("exempt") or {}
    return (
        int(exempt.get("nominalConcurrencyShares") or 0),
        _int_or_none(exempt.get("lendablePercent")),
        None,
    )


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def dangling_condition(schema: Obj, found: bool, level: str, now: str) -> Obj | None:
    """presyncFlowSchemaStatus: the ``Dangling`` condition ``schema`` should carry, or None when
    it already does."""
    if found:
        status, reason = "False", "Found"
        message = (
            f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" '
            "and it exists"
        )
    else:
        status, reason = "True", "NotFound"
        message = (
            f'This FlowSchema references the PriorityLevelConfiguration object named "{level}" '
            "but there is no such object"
        )
    for condition in (schema.get("status") or {}).get("conditions") or ():
        if condition.get("type") == DANGLING:
            if (condition.get("status"), condition.get("reason"), condition.get("message")) == (
                status,
                reason,
                message,
            ):
                return None
            break
    return {
        "type": DANGLING,
        "status": status,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


class FlowControl:
    """The configuration in force and the seats of its levels. ``server_limit`` is the server's
    concurrency limit; ``mandatory`` the bootstrap FlowSchemas and PriorityLevelConfigurations
    ``exempt`` and ``catch-all`` (as ``(schemas, levels)``), used while no object holds them."""

    def __init__(
        self,
        server_limit: int,
        mandatory: tuple[list[Obj], list[Obj]],
        *,
        clock: Clock = time.monotonic,
        now: Callable[[], str] | None = None,
    ) -> None:
        self.server_limit = server_limit
        self.mandatory_schemas = {s["metadata"]["name"]: s for s in mandatory[0]}
        self.mandatory_levels = {pl["metadata"]["name"]: pl for pl in mandatory[1]}
        self.clock = clock
        self.now = now or _rfc3339_now
        self.levels: dict[str, Level] = {}
        self.schemas: list[Schema] = []
        self.catch_all: Schema | None = None
        self.nominal_sum = 0
        #: requests refused, by (priority level, flow schema, reason)
        self.rejected: dict[tuple[str, str, str], int] = {}
        #: when the seat demand was last sampled, and when it is next
        self.sampled = self.next_sample = clock()
        self.digest([], [])

    # -- the request path ------------------------------------------------------------------------

    def classify(self, user: User, info: RequestInfo) -> tuple[Schema, int]:
        """The first schema the request matches (the catch-all one if none does) and the
        request's flow (hashed; 0 for a level without queues), remembered by what matching
        reads of the user and the request. The first schema (``exempt``, of ``system:masters``
        and anything they ask) is tried by its groups alone."""
        first = self.schemas[0]
        if first.groups is not None and not first.groups.isdisjoint(user.groups):
            return first, 0
        key = (user.name, user.groups, info.verb, info.api_group, info.resource,
               info.subresource, info.namespace, "" if info.is_resource_request else info.path,
               info.is_resource_request)  # fmt: skip
        found = self._classified.get(key)
        if found is None:
            schema = next((s for s in self.schemas if s.matches(user, info)), self.catch_all)
            assert schema is not None
            flow = schema.flow(user, info) if schema.level.queuing else 0
            if len(self._classified) > 4096:
                self._classified.clear()
            found = self._classified[key] = (schema, flow)
        return found

    # -- configuration ---------------------------------------------------------------------------

    def digest(self, schemas: list[Obj], levels: list[Obj]) -> list[tuple[str, Obj]]:
        """Take ``schemas`` and ``levels`` (every FlowSchema and PriorityLevelConfiguration
        stored) as the configuration; returns the ``Dangling`` conditions to write, by schema
        name."""
        new: dict[str, Level] = {}
        for obj in levels:
            meta = obj.get("metadata") or {}
            name = str(meta.get("name") or "")
            try:
                new[name] = self._level(name, str(meta.get("uid") or ""), obj.get("spec") or {})
            except BrokenLevel as exc:
                log.warning("ignoring PriorityLevelConfiguration %s: %s", name, exc)
        updates: list[tuple[str, Obj]] = []
        now = self.now()
        digested: list[Schema] = []
        for obj in schemas:
            meta = obj.get("metadata") or {}
            spec = obj.get("spec") or {}
            level_name = str((spec.get("priorityLevelConfiguration") or {}).get("name") or "")
            condition = dangling_condition(obj, level_name in new, level_name, now)
            if condition is not None:
                updates.append((str(meta.get("name") or ""), condition))
            if level_name in new:
                digested.append(self._schema(obj, new[level_name]))
        for name, proto in self.mandatory_levels.items():
            if name not in new:  # imagined (its seats kept from before, if it had some)
                new[name] = self._level(name, "", proto["spec"])
        digested.sort(key=lambda s: (s.precedence, s.name))
        names = {s.name for s in digested}
        if EXEMPT not in names:
            digested.insert(0, self._schema(self.mandatory_schemas[EXEMPT], new[EXEMPT], True))
        if CATCH_ALL not in names:
            digested.append(self._schema(self.mandatory_schemas[CATCH_ALL], new[CATCH_ALL], True))
        self.catch_all = next(s for s in digested if s.name == CATCH_ALL)
        self._limits(new)
        self.levels = new
        self.schemas = digested
        self._demands = [level.seats.demand for level in new.values()]
        self._classified: dict[tuple[Any, ...], tuple[Schema, int]] = {}
        return updates

    def _level(self, name: str, uid: str, spec: Obj) -> Level:
        queuing = _queuing(spec, name)
        shares, lendable, borrowing = _commons(spec)
        level = self.levels.get(name)
        exempt = spec.get("type") == "Exempt"
        seats: Seats | QueueSet
        if level is not None and level.exempt == exempt and level.queuing == (queuing is not None):
            seats = level.seats
            if isinstance(seats, QueueSet) and queuing is not None:
                seats.configure(*queuing)
            stats = level.stats
            current = level.current
        else:
            if queuing is not None:
                seats = QueueSet(*queuing, limit=0, clock=self.clock)
            else:
                seats = Seats(0, exempt=exempt)
            stats, current = DemandStats(), -1
        return Level(name, uid, spec, seats, shares, lendable, borrowing, current=current,
                     stats=stats)  # fmt: skip

    def _schema(self, obj: Obj, level: Level, imagined: bool = False) -> Schema:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        uid = "" if imagined else str(meta.get("uid") or "")
        method = str((spec.get("distinguisherMethod") or {}).get("type") or "")
        return Schema(
            name=str(meta.get("name") or ""),
            uid=uid,
            precedence=int(spec.get("matchingPrecedence") or 0),
            level=level,
            method=method,
            matches=compile_schema(spec),
            headers=((PL_HEADER, level.uid.encode()), (FS_HEADER, uid.encode())),
            groups=None if level.queuing else groups_only(spec),
        )

    def _limits(self, levels: dict[str, Level]) -> None:
        """finishQueueSetReconfigsLocked: each level's nominal, lowest and highest limit, the
        starting limit of a new one, then one borrowing adjustment."""
        share_sum = sum(level.shares for level in levels.values()) or 1
        total = self.server_limit
        nominal_sum = 0
        for level in levels.values():
            nominal = math.ceil(total * level.shares / share_sum)
            lendable = 0
            if level.lendable_percent is not None:
                lendable = _round(nominal * level.lendable_percent / 100)
            if level.borrowing_percent is not None:
                borrowing = _round(nominal * level.borrowing_percent / 100)
            else:
                borrowing = total
            level.nominal, level.minimum = nominal, nominal - lendable
            level.maximum = nominal + borrowing
            if level.current < 0:  # a new level
                level.current = nominal - lendable // 2
                level.stats = DemandStats()
            nominal_sum += nominal
        self.nominal_sum = nominal_sum
        self._borrow(levels)

    # -- borrowing -------------------------------------------------------------------------------

    def sample(self, now: float) -> None:
        """Integrate every level's seat demand since the last sample, as if it had been what
        it is now (called by the filter once :attr:`next_sample` has passed)."""
        dt = now - self.sampled
        self.sampled = now
        self.next_sample = now + SAMPLE_SECONDS
        for demand in self._demands:
            x = demand.x
            if x:
                demand.total += x * dt
                demand.total_sq += x * x * dt
            demand.elapsed += dt

    def adjust(self) -> None:
        """The periodic borrowing adjustment (every 10 s)."""
        self.sample(self.clock())
        self._borrow(self.levels)

    def _borrow(self, levels: dict[str, Level]) -> None:
        """updateBorrowingLocked: each level's demand since the last time, then the limits."""
        items = []
        for level in levels.values():
            level.stats.update(*level.seats.demand.reset())
            stats = level.stats
            lower = max(float(level.minimum), min(float(level.nominal), stats.high))
            items.append(Item(max(lower, stats.smoothed), lower, float(level.maximum)))
        allocations = allocate(self.nominal_sum, items)
        for level, share in zip(levels.values(), allocations, strict=True):
            level.current = _round(share)
            level.seats.set_limit(level.current)


def _round(x: float) -> int:
    """Go's math.Round for the non-negative values here: halves away from zero."""
    return math.floor(x + 0.5)


def _rfc3339_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
