"""API Priority and Fairness's pure logic (kubelite.server.flowcontrol): shuffle sharding, fair
queuing in one priority level, the borrowing allocation, the Retry-After tracker, and the
configuration digested into levels and schemas, against the numbers kube-apiserver computes.
The HTTP behaviour is tests/server/test_priority_and_fairness.py's."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from typing import Any

import pytest

from kubelite.api.kinds.flowcontrol.bootstrap import (
    mandatory,
    mandatory_levels,
    mandatory_schemas,
    suggested_levels,
    suggested_schemas,
)
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User
from kubelite.api.shufflesharding import deal, required_entropy_bits
from kubelite.server.flowcontrol.allocation import Item, allocate
from kubelite.server.flowcontrol.config import FlowControl
from kubelite.server.flowcontrol.filter import Dropped
from kubelite.server.flowcontrol.queueset import EXECUTING, WAITING, QueueSet, Seats, Ticket


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Iterator[Clock]:
    return Clock()


# -- shuffle sharding ----------------------------------------------------------------------------


def test_a_deal_is_distinct_cards_from_the_hash_digits() -> None:
    # the hash read as mixed-radix digits (128, 127, ...), each card skipping those dealt
    assert deal(0, 128, 6) == [0, 1, 2, 3, 4, 5]
    assert deal(5 + 128 * 5, 128, 2) == [5, 6]  # remainders 5, 5: the second skips the first
    assert deal(7 + 128 * 3, 128, 2) == [7, 3]
    for value in (1, 12345, 2**59 + 17, 2**60 - 1):
        hand = deal(value, 128, 6)
        assert len(set(hand)) == 6
        assert all(0 <= card < 128 for card in hand)
    assert required_entropy_bits(128, 6) == 42
    assert required_entropy_bits(10**6, 4) == 80


# -- one queuing level ---------------------------------------------------------------------------


def admitted(qs: QueueSet | Seats, flow: int) -> Ticket | None:
    return qs.arrive(flow, False)


async def test_a_flooding_flow_gets_its_share_and_a_late_flow_is_served_next(
    clock: Clock,
) -> None:
    """Two seats, 16 queues. Flow A fills both seats and queues 10 more; flow B then sends 2.
    As seats free, B's requests go before A's backlog: fair queuing by virtual finish time."""
    qs = QueueSet(16, 1, 50, 2, clock=clock)
    a, b = 3, 11  # hands of one queue: deal(3, 16, 1) == [3], deal(11, 16, 1) == [11]
    held = [admitted(qs, a) for _ in range(2)]
    assert all(t is not None and t.state == EXECUTING for t in held)
    backlog = [admitted(qs, a) for _ in range(10)]
    assert all(t is not None and t.state == WAITING for t in backlog)
    late = [admitted(qs, b) for _ in range(2)]
    order: list[str] = []
    running = [t for t in held if t is not None]
    waiting = {id(t): ("a", t) for t in backlog if t is not None}
    waiting.update({id(t): ("b", t) for t in late if t is not None})
    while waiting:
        clock.now += 0.01  # each request takes 10 ms
        qs.finish(running.pop(0))
        for key, (flow, ticket) in list(waiting.items()):
            if ticket.state == EXECUTING:
                order.append(flow)
                running.append(ticket)
                del waiting[key]
    assert order[:4].count("b") == 2, order  # both of B's within the first four dispatched
    assert qs.seats_in_use == 2
    assert qs.waiting_total == 0


async def test_a_full_queue_is_refused_only_while_every_seat_is_taken(clock: Clock) -> None:
    qs = QueueSet(8, 1, 2, 1, clock=clock)
    first = admitted(qs, 0)
    assert first is not None
    assert first.state == EXECUTING
    queued = [admitted(qs, 0) for _ in range(2)]
    assert all(t is not None and t.state == WAITING for t in queued)
    assert admitted(qs, 0) is None  # seats full, queue full
    assert admitted(qs, 1) is not None  # another queue has room
    qs.finish(first)
    assert queued[0] is not None
    assert queued[0].state == EXECUTING


async def test_a_body_holds_a_place_in_its_queue_not_a_seat(clock: Clock) -> None:
    """A request receiving its body takes a place (at most queue_length_limit per queue), not
    a seat: another flow's request is served at once."""
    qs = QueueSet(8, 2, 3, 1, clock=clock)
    places = [qs.arrive(0, True) for _ in range(6)]  # a hand of 2 queues x 3 places
    assert all(p is not None for p in places)
    assert qs.arrive(0, True) is None  # the flow's places are all taken
    other = admitted(qs, 5)
    assert other is not None
    assert other.state == EXECUTING
    qs.finish(other)
    ready = qs.admit(places[0])  # its body arrived: it asks for a seat like any request
    assert ready is not None
    assert ready.state == EXECUTING
    assert qs.arrive(0, True) is not None  # its place is free again
    for place in places[1:]:
        qs.finish(place)  # bodies that never came: their places are given up
    assert qs.seats_in_use == 1
    assert sum(q.receiving for q in qs.queues) == 1


async def test_a_waiting_request_withdrawn_leaves_no_trace(clock: Clock) -> None:
    qs = QueueSet(4, 1, 10, 1, clock=clock)
    running = admitted(qs, 0)
    waiting = admitted(qs, 0)
    assert running is not None
    assert waiting is not None
    assert waiting.state == WAITING
    assert qs.withdraw(waiting)
    assert not qs.withdraw(waiting)
    qs.finish(running)
    assert qs.idle()
    assert qs.active_queues == 0


async def test_a_reject_level_refuses_beyond_its_seats_and_a_zero_limit_admits_one() -> None:
    seats = Seats(2)
    held = [seats.arrive(0, False) for _ in range(2)]
    assert seats.arrive(0, False) is None
    assert held[0] is not None
    seats.finish(held[0])
    assert seats.arrive(0, False) is not None
    none = Seats(0)
    one = none.arrive(0, False)
    assert one is not None
    assert none.arrive(0, False) is None


# -- borrowing -----------------------------------------------------------------------------------


def test_allocation_is_proportional_to_targets_within_bounds() -> None:
    # no bound binds: proportional
    shares = allocate(30, [Item(1, 0, 100), Item(2, 0, 100)])
    assert [round(s, 6) for s in shares] == [10, 20]
    # an upper bound binds: the rest goes to the other
    shares = allocate(30, [Item(1, 0, 100), Item(10, 0, 5)])
    assert [round(s, 6) for s in shares] == [25, 5]
    # lower bounds above the proportional share
    shares = allocate(10, [Item(1, 6, 100), Item(9, 0, 100)])
    assert [round(s, 6) for s in shares] == [6, 4]
    # no room: the lower bounds
    assert allocate(5, [Item(3, 3, 3), Item(3, 3, 3)]) == [3, 3]


def test_retry_after_doubles_while_a_level_keeps_refusing_then_comes_down() -> None:
    now = [100.0]
    dropped = Dropped(lambda: now[0])
    assert dropped.retry_after("pl") == 1
    seen = []
    for second in range(100, 104):  # 5 refused each second
        now[0] = second
        for _ in range(5):
            dropped.record("pl")
        seen.append(dropped.retry_after("pl"))
    # doubled once 3 x Retry-After were refused in the last Retry-After seconds, at most once
    # per Retry-After seconds
    assert seen == [1, 2, 2, 4]
    now[0] = 120  # a quiet spell: fewer than Retry-After refused in the last Retry-After s
    dropped.record("pl")
    assert dropped.retry_after("pl") == 3


# -- the configuration ---------------------------------------------------------------------------


UIDS: dict[tuple[str, str], int] = {}


def bootstrap(control: FlowControl) -> None:
    objects = [*mandatory_schemas(), *suggested_schemas(), *mandatory_levels(), *suggested_levels()]
    for i, obj in enumerate(objects):
        obj["metadata"]["uid"] = f"uid-{i}"
        kind = "FlowSchema" if obj["kind"] == "FlowSchema" else "Level"
        UIDS[obj["metadata"]["name"], kind] = i
    schemas = [o for o in objects if o["kind"] == "FlowSchema"]
    levels = [o for o in objects if o["kind"] == "PriorityLevelConfiguration"]
    control.digest(schemas, levels)


def test_the_bootstrap_levels_get_kubes_nominal_limits_out_of_600() -> None:
    control = FlowControl(600, mandatory())
    bootstrap(control)
    nominal = {name: level.nominal for name, level in control.levels.items()}
    # ceil(600 * shares / 250): the shares of the v1.34 bootstrap configuration
    assert nominal == {
        "exempt": 0, "catch-all": 12, "system": 96, "node-high": 144, "leader-election": 120,
        "workload-high": 96, "event": 12, "workload-low": 96, "global-default": 24,
    }  # fmt: skip
    gd = control.levels["global-default"]
    assert (gd.minimum, gd.maximum) == (12, 624)  # lendablePercent 50; may borrow the server
    event = control.levels["event"]
    assert (event.minimum, event.maximum) == (12, 24)  # borrowingLimitPercent 100
    assert sum(level.current for level in control.levels.values()) == pytest.approx(600, abs=5)


def test_schemas_are_matched_by_precedence_and_name_with_their_distinguishers() -> None:
    control = FlowControl(600, mandatory())
    bootstrap(control)
    names = [s.name for s in control.schemas]
    assert names[:2] == ["exempt", "probes"]
    assert names[-2:] == ["global-default", "catch-all"]
    info = RequestInfo("/api/v1/namespaces/x/configmaps", "create", True, "api", "", "v1", "x",
                       "configmaps")  # fmt: skip
    admin = User("admin", ("system:masters", "system:authenticated"))
    alice = User("alice", ("system:authenticated",))
    account = User("system:serviceaccount:x:bot", ("system:serviceaccounts",
                                                    "system:serviceaccounts:x",
                                                    "system:authenticated"))  # fmt: skip
    kube_system = User("system:serviceaccount:kube-system:job", ("system:serviceaccounts",))
    assert control.classify(admin, info)[0].name == "exempt"
    assert control.classify(alice, info)[0].name == "global-default"
    assert control.classify(account, info)[0].name == "service-accounts"
    # a kube-system account's configmap writes are leader election's (as in kube)
    assert control.classify(kube_system, info)[0].name == "workload-leader-election"
    listing = info._replace(verb="list")
    assert control.classify(kube_system, listing)[0].name == "kube-system-service-accounts"
    probe = RequestInfo("/readyz", "get")
    assert control.classify(alice, probe)[0].name == "probes"
    events = info._replace(resource="events")
    assert control.classify(alice, events)[0].name == "events"
    schema, flow = control.classify(alice, info)
    assert flow == schema.flow(alice, info) != schema.flow(User("bob", ()), info)  # ByUser
    fs_uid = dict(schema.headers)[b"X-Kubernetes-Pf-Flowschema-Uid"]
    pl_uid = dict(schema.headers)[b"X-Kubernetes-Pf-Prioritylevel-Uid"]
    assert (fs_uid, pl_uid) == (
        b"uid-" + str(UIDS["global-default", "FlowSchema"]).encode(),
        b"uid-" + str(UIDS["global-default", "Level"]).encode(),
    )


def test_a_schema_whose_level_is_missing_is_dangling_and_set_aside() -> None:
    control = FlowControl(600, mandatory())
    orphan: dict[str, Any] = {
        "metadata": {"name": "orphan", "uid": "u1"},
        "spec": {
            "priorityLevelConfiguration": {"name": "nowhere"},
            "matchingPrecedence": 100,
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "*"}}],
                       "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}],
        },
    }  # fmt: skip
    updates = control.digest([orphan], [])
    assert [name for name, _ in updates] == ["orphan"]
    condition = updates[0][1]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "Dangling", "True", "NotFound")  # fmt: skip
    assert condition["message"] == (
        'This FlowSchema references the PriorityLevelConfiguration object named "nowhere" but '
        "there is no such object"
    )
    assert [s.name for s in control.schemas] == ["exempt", "catch-all"]  # imagined mandatory
    orphan["status"] = {"conditions": [condition]}
    assert control.digest([orphan], []) == []  # already says so: nothing to write


async def test_a_level_keeps_its_queues_and_requests_across_a_change_of_shares() -> None:
    control = FlowControl(600, mandatory())
    bootstrap(control)
    level = control.levels["global-default"]
    ticket = level.seats.arrive(1, False)
    assert ticket is not None
    assert ticket.state == EXECUTING
    levels = [*mandatory_levels(), *suggested_levels()]
    for obj in levels:
        if obj["metadata"]["name"] == "global-default":
            obj["spec"]["limited"]["nominalConcurrencyShares"] = 20
    control.digest([*mandatory_schemas(), *suggested_schemas()], levels)
    again = control.levels["global-default"]
    assert again.seats is level.seats
    assert again.nominal == math.ceil(600 * 20 / 260)
    assert again.seats.seats_in_use == 1  # type: ignore[union-attr]
    again.seats.finish(ticket)


def test_a_broken_level_is_ignored() -> None:
    control = FlowControl(600, mandatory())
    broken = {"metadata": {"name": "x"}, "spec": {"type": "Exempt", "exempt": {}}}
    control.digest([], [broken])
    assert "x" not in control.levels


def test_queues_are_loop_free_of_stale_tickets(clock: Clock) -> None:
    """Withdrawn tickets left in a FIFO are skipped when they reach its head."""

    async def run() -> None:
        qs = QueueSet(1, 1, 10, 1, clock=clock)
        first = admitted(qs, 0)
        stale = [admitted(qs, 0) for _ in range(3)]
        fresh = admitted(qs, 0)
        for ticket in stale:
            assert ticket is not None
            qs.withdraw(ticket)
        assert first is not None
        qs.finish(first)
        assert fresh is not None
        assert fresh.state == EXECUTING

    asyncio.run(run())


def test_a_busy_level_borrows_what_idle_ones_lend(clock: Clock) -> None:
    """global-default wants 200 seats for 10 s, every other level none: the adjustment gives it
    a share proportional to its smoothed demand (its target), the others their lower limits'
    proportional share, all of it summing to the 600 nominal seats."""
    control = FlowControl(600, mandatory(), clock=clock)
    bootstrap(control)
    busy = control.levels["global-default"]
    before = busy.current
    busy.seats.demand.x = busy.seats.demand.high = 200
    for _ in range(100):
        clock.now += 0.1
        control.sample(clock.now)
    control.adjust()
    # others' targets are their lower limits (252 - 12 seats), busy's 200: fair = 600 / 440
    assert busy.current == round(200 * 600 / 440)
    assert busy.current > before
    for name, level in control.levels.items():
        if name not in ("global-default", "exempt"):
            assert level.minimum <= level.current <= level.maximum
    assert sum(level.current for level in control.levels.values()) == pytest.approx(600, abs=5)
