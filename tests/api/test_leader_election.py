"""Leader election over a Lease written through the registry (client-go's leaderelection):
acquire, renew, takeover only after the record stopped changing for the lease duration (local
clock), 409 for the candidate that wrote second, release, the exclusive store's immediate
takeover, and the loop that starts and stops the controllers of the controller manager.

Candidates here use a clock of their own (a number the test advances), so expiry never depends
on the wall clock; the loop tests use short durations and only generous hang guards."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest

from kubelite.api.catalogue import Catalogue, load_builtin_catalogue
from kubelite.api.controllers.leaderelection import ElectionConfig, LeaderElector
from kubelite.api.controllers.manager import ControllerManager
from kubelite.api.kinds import new_registry
from kubelite.api.machinery.registry import Registry
from kubelite.storage import Store

MICROTIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
SHORT = ElectionConfig(lease_duration=2.0, renew_deadline=1.5, retry_period=0.1)
HANG_GUARD = 20.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def noop() -> None:
    return None


@pytest.fixture
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


@pytest.fixture
def registry(store: Store, catalogue: Catalogue) -> Registry:
    return new_registry(store, catalogue)


def candidate(
    registry: Registry,
    catalogue: Catalogue,
    identity: str,
    clock: Callable[[], float] | None = None,
    config: ElectionConfig | None = None,
) -> LeaderElector:
    return LeaderElector(
        registry,
        catalogue,
        on_started_leading=noop,
        on_stopped_leading=noop,
        config=config,
        identity=identity,
        clock=clock or Clock(),
    )


async def lease(registry: Registry, catalogue: Catalogue) -> dict[str, Any]:
    info = catalogue.require("coordination.k8s.io", "v1", "leases")
    return await registry.get(info, "kube-system", "kube-controller-manager")


async def test_the_first_candidate_creates_the_lease(
    registry: Registry, catalogue: Catalogue
) -> None:
    a = candidate(registry, catalogue, "host_a")
    assert await a.try_acquire_or_renew()
    obj = await lease(registry, catalogue)
    spec = obj["spec"]
    assert spec["holderIdentity"] == "host_a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"]
    assert MICROTIME.match(spec["acquireTime"])
    assert "kube-controller-manager" in [m["manager"] for m in obj["metadata"]["managedFields"]]
    assert a.is_leader()


async def test_the_holder_renews_keeping_its_acquire_time(
    registry: Registry, catalogue: Catalogue
) -> None:
    a = candidate(registry, catalogue, "host_a")
    assert await a.try_acquire_or_renew()
    first = await lease(registry, catalogue)
    assert await a.try_acquire_or_renew()  # the fast path
    second = await lease(registry, catalogue)
    assert second["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    assert second["spec"]["acquireTime"] == first["spec"]["acquireTime"]
    assert second["spec"]["renewTime"] >= first["spec"]["renewTime"]
    assert second["spec"]["leaseTransitions"] == 0


async def test_a_candidate_takes_over_only_after_the_record_stopped_changing(
    registry: Registry, catalogue: Catalogue
) -> None:
    a = candidate(registry, catalogue, "host_a")
    clock = Clock()
    b = candidate(registry, catalogue, "host_b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert b.leader == "host_a"
    clock.now += 14
    assert not await b.try_acquire_or_renew()  # not yet 15 s since b saw it change
    assert await a.try_acquire_or_renew()  # a renews: the record changes
    assert not await b.try_acquire_or_renew()  # b sees the change now, at 14 s
    clock.now += 14
    assert not await b.try_acquire_or_renew()  # 14 s since the change b saw last
    clock.now += 2
    assert await b.try_acquire_or_renew()  # 16 s without a change: expired
    spec = (await lease(registry, catalogue))["spec"]
    assert spec["holderIdentity"] == "host_b"
    assert spec["leaseTransitions"] == 1
    assert spec["acquireTime"] == spec["renewTime"]
    # a's optimistic renewal gets 409; it reads the record, sees b, and has lost
    assert not await a.try_acquire_or_renew()
    assert not a.is_leader()
    assert a.leader == "host_b"


async def test_of_two_candidates_racing_for_an_expired_lease_the_second_writer_gets_409(
    registry: Registry, catalogue: Catalogue
) -> None:
    a = candidate(registry, catalogue, "host_a")
    assert await a.try_acquire_or_renew()
    b_clock, c_clock = Clock(), Clock()
    b = candidate(registry, catalogue, "host_b", b_clock)
    c = candidate(registry, catalogue, "host_c", c_clock)
    assert not await b.try_acquire_or_renew()
    assert not await c.try_acquire_or_renew()
    b_clock.now += 16
    c_clock.now += 16
    read = b.lock.get

    async def c_writes_between_bs_read_and_write() -> Any:
        record = await read()
        assert await c.try_acquire_or_renew()
        return record

    b.lock.get = c_writes_between_bs_read_and_write  # type: ignore[method-assign]
    assert not await b.try_acquire_or_renew()  # its update carried a stale resourceVersion
    spec = (await lease(registry, catalogue))["spec"]
    assert spec["holderIdentity"] == "host_c"
    assert spec["leaseTransitions"] == 1  # one takeover, not two


async def test_a_released_lease_is_taken_at_once(registry: Registry, catalogue: Catalogue) -> None:
    a = candidate(registry, catalogue, "host_a")
    b = candidate(registry, catalogue, "host_b")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert await a.release()
    spec = (await lease(registry, catalogue))["spec"]
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"]
    assert await b.try_acquire_or_renew()  # no wait: nobody holds it
    spec = (await lease(registry, catalogue))["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("host_b", 1)


async def test_release_after_a_renewal_whose_answer_was_lost_still_releases(
    registry: Registry, catalogue: Catalogue
) -> None:
    """close() cancels a renewal that the store may still commit: the lock's copy is then a
    version behind, and the release's first PUT gets 409. It reads again and releases."""
    a = candidate(registry, catalogue, "host_a")
    assert await a.try_acquire_or_renew()
    stale = a.lock.lease
    assert await a.try_acquire_or_renew()  # a renewal, stored...
    a.lock.lease = stale  # ...whose answer the cancelled renewal never kept
    assert await a.release()
    spec = (await lease(registry, catalogue))["spec"]
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("", 1)


async def test_release_never_gives_up_a_lease_another_candidate_took(
    registry: Registry, catalogue: Catalogue
) -> None:
    clock = Clock()
    a = candidate(registry, catalogue, "host_a", clock)
    b = candidate(registry, catalogue, "host_b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    clock.now += 60  # a's lease expires on b's clock; b takes over
    assert await b.try_acquire_or_renew()
    assert not await a.release()  # 409, and the Lease is b's now: a leaves it alone
    spec = (await lease(registry, catalogue))["spec"]
    assert spec["holderIdentity"] == "host_b"


async def test_on_an_exclusive_store_a_lease_left_by_a_previous_process_is_taken_at_once(
    registry: Registry, catalogue: Catalogue
) -> None:
    gone = candidate(registry, catalogue, "host_killed")
    assert await gone.try_acquire_or_renew()
    shared = candidate(registry, catalogue, "host_shared")
    assert not await shared.try_acquire_or_renew()  # over etcd it would wait 15 s
    restarted = candidate(
        registry, catalogue, "host_restarted", config=ElectionConfig(exclusive_store=True)
    )
    assert await restarted.try_acquire_or_renew()
    spec = (await lease(registry, catalogue))["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("host_restarted", 1)


def test_the_durations_are_checked_as_client_go_checks_them() -> None:
    with pytest.raises(ValueError, match="leaseDuration must be greater than renewDeadline"):
        ElectionConfig(lease_duration=10, renew_deadline=10).check()
    with pytest.raises(ValueError, match="renewDeadline must be greater than retryPeriod"):
        ElectionConfig(renew_deadline=2.0, retry_period=2.0).check()
    ElectionConfig().check()


class Recorder:
    """A controller that counts its starts and stops."""

    def __init__(self) -> None:
        self.starts = self.stops = 0
        self.running = False

    def start(self) -> None:
        self.starts += 1
        self.running = True

    async def close(self) -> None:
        self.stops += 1
        self.running = False

    def queue_depth(self) -> int:
        return 3


async def until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` (the elector's loop runs meanwhile) under a hang guard."""
    deadline = asyncio.get_running_loop().time() + HANG_GUARD
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "never happened"
        await asyncio.sleep(0.02)


async def test_one_of_two_managers_runs_the_controllers_and_the_other_takes_over_on_release(
    registry: Registry, catalogue: Catalogue
) -> None:
    first, second = Recorder(), Recorder()
    a = ControllerManager(registry, catalogue, election=SHORT, identity="host_a")
    a.add("recorder", first)
    b = ControllerManager(registry, catalogue, election=SHORT, identity="host_b")
    b.add("recorder", second)
    await a.start()
    await b.start()
    try:
        assert a.leading
        assert first.running
        assert not b.leading
        assert not second.running
        assert "this server leads" in a.describe()
        assert "waiting for lease kube-system/kube-controller-manager (held by host_a)" in (
            b.describe()
        )
        assert a.queue_depths() == {"recorder": 3}
        assert b.queue_depths() == {"recorder": 0}
        await a.close()  # stops its controllers, then releases the Lease
        assert (first.starts, first.stops) == (1, 1)
        await until(lambda: second.running)
        spec = (await lease(registry, catalogue))["spec"]
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("host_b", 1)
    finally:
        await b.close()
    assert (second.starts, second.stops) == (1, 1)
    assert (await lease(registry, catalogue))["spec"]["holderIdentity"] == ""


async def test_a_leader_that_finds_another_holder_stops_its_controllers_and_stands_again(
    registry: Registry, catalogue: Catalogue
) -> None:
    recorder = Recorder()
    manager = ControllerManager(registry, catalogue, election=SHORT, identity="host_a")
    manager.add("recorder", recorder)
    await manager.start()
    try:
        assert recorder.running
        info = catalogue.require("coordination.k8s.io", "v1", "leases")
        usurped = await lease(registry, catalogue)
        usurped["spec"]["holderIdentity"] = "host_other"
        await registry.update(info, "kube-system", "kube-controller-manager", usurped)
        await until(lambda: not recorder.running)
        assert not manager.leading
        # host_other never renews: once the record has not changed for its duration, a leads
        await until(lambda: recorder.running)
        spec = (await lease(registry, catalogue))["spec"]
        assert spec["holderIdentity"] == "host_a"
        assert recorder.starts == 2
    finally:
        await manager.close()


async def test_without_election_the_controllers_run_from_start_to_close(
    registry: Registry, catalogue: Catalogue
) -> None:
    recorder = Recorder()
    manager = ControllerManager(registry, catalogue)
    manager.add("recorder", recorder)
    with pytest.raises(ValueError, match="managed already"):
        manager.add("recorder", Recorder())
    await manager.start()
    assert recorder.running
    assert manager.leading
    assert manager.describe() == "controllers: recorder (no leader election)"
    await manager.close()
    assert not recorder.running
