"""The etcd backend when members die: fail-over of reads, writes and watches, and no lost or
doubled compare-and-swap when the leader is SIGKILLed under load. Three real etcd members."""

from __future__ import annotations

import asyncio
import json
import time

from load import fresh_prefix

from etcdcluster import EtcdCluster
from kubelite.storage import Conflict, Event, Store, Unavailable, open_store
from kubelite.storage.testing import OPTIONS, assert_quiet


def follower_of(cluster: EtcdCluster) -> tuple[int, int]:
    """Indexes of (the leader, a follower)."""
    leader = cluster.members.index(cluster.leader())
    return leader, (leader + 1) % len(cluster.members)


async def test_store_fails_over_when_its_member_dies(cluster: EtcdCluster) -> None:
    _, f = follower_of(cluster)
    member = cluster.members[f]
    store = await open_store(cluster.url_via(member, fresh_prefix()), OPTIONS)
    try:
        r1 = await store.create("/a", b"1")
        member.kill()
        r2 = await store.update("/a", b"2", r1)  # through another member
        kv = await store.get("/a")
        assert kv is not None
        assert (kv.value, kv.mod_revision) == (b"2", r2)
        assert await store.current_revision() >= r2
        assert [kv.key for kv in (await store.list("/")).items] == ["/a"]
    finally:
        await store.close()


async def test_watch_resumes_on_another_member_without_gap_or_duplicate(
    cluster: EtcdCluster,
) -> None:
    leader, f = follower_of(cluster)
    prefix = fresh_prefix()
    watching = await open_store(cluster.url_via(cluster.members[f], prefix), OPTIONS)
    writing = await open_store(cluster.url_via(cluster.members[leader], prefix), OPTIONS)
    try:
        r0 = await writing.current_revision()
        async with watching.watch("/", r0 + 1) as watch:

            async def write() -> None:
                for i in range(300):
                    await writing.create(f"/{i:03}", b"x")
                    if i == 100:
                        cluster.members[f].kill()  # the member the watch streams from

            task = asyncio.create_task(write())
            events: list[Event] = []
            while len(events) < 300:
                events.append(await asyncio.wait_for(anext(watch), 30))
            await task
            await assert_quiet(watch)
        assert [e.kv.key for e in events] == [f"/{i:03}" for i in range(300)]
        revisions = [e.revision for e in events]
        assert revisions == sorted(set(revisions))
    finally:
        await watching.close()
        await writing.close()


QUOTA = 12


async def increment(store: Store, w: int, quota: int, tally: dict[str, int]) -> list[float]:
    """Read-modify-write increments of /counter until ``quota`` landed; returns when each landed.
    Like tests/ha/load.py's writers, each carries the writer's own count as a receipt."""
    landed: list[float] = []
    pending = False
    key = f"w{w}"
    while len(landed) < quota:
        try:
            kv = await store.get("/counter")
        except Unavailable:
            await asyncio.sleep(0.05)
            continue
        assert kv is not None
        obj = json.loads(kv.value)
        if pending and obj.get(key, 0) == len(landed) + 1:  # the open write did land
            pending = False
            landed.append(time.monotonic())
        assert obj.get(key, 0) == len(landed), (key, obj.get(key), len(landed))
        obj["count"] += 1
        obj[key] = len(landed) + 1
        try:
            await store.update("/counter", json.dumps(obj).encode(), kv.mod_revision)
        except Conflict:
            tally["conflicts"] += 1
            continue
        except Unavailable:
            tally["unknown"] += 1
            pending = True
            continue
        pending = False
        landed.append(time.monotonic())
    return landed


async def test_leader_sigkill_during_cas_increments_loses_and_doubles_nothing(
    cluster: EtcdCluster,
) -> None:
    """16 writers increment one key through a store talking to the leader; the leader is
    SIGKILLed midway. Writes resume after the election; the count is exactly the increments
    that landed (each writer's receipt in the value shows it never lost an acknowledged one
    and never had one land that it was told had failed)."""
    leader = cluster.leader()
    store = await open_store(cluster.url_via(leader, fresh_prefix()), OPTIONS)
    try:
        await store.create("/counter", json.dumps({"count": 0}).encode())
        tally = {"conflicts": 0, "unknown": 0}
        writers = [asyncio.create_task(increment(store, w, QUOTA, tally)) for w in range(16)]
        while True:
            kv = await store.get("/counter")
            assert kv is not None
            if json.loads(kv.value)["count"] >= 16 * QUOTA // 3:
                break
            await asyncio.sleep(0.01)
        leader.kill()
        killed_at = time.monotonic()
        landed = await asyncio.gather(*writers)
        kv = await store.get("/counter")
        assert kv is not None
        assert json.loads(kv.value)["count"] == 16 * QUOTA
        assert sum(t > killed_at for times in landed for t in times) > 0  # resumed after it
        assert tally["conflicts"] > 0
    finally:
        await store.close()
