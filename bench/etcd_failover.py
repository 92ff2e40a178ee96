"""How long writes stop when the etcd leader dies: three real etcd members (fsync on), 16 writers
doing read-modify-write increments of keys of their own through one kubelite EtcdStore, the
leader SIGKILLed, and the time from the kill to the first write that lands after it (the
stall), and to the moment every writer has landed one again. Measured with the store's first
endpoint the leader (its connection breaks) and a follower (it loses its leader), each
``--runs`` times, the killed member restarted in between.

Baseline: etcd's own election, the time from the kill until a surviving member reports a
leader (``etcdctl endpoint status``), measured in the same runs. Target: a stall under 3 s.

Run:
    .venv/bin/python bench/etcd_failover.py            # ~1 min
    .venv/bin/python bench/etcd_failover.py --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import uvloop

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from etcdcluster import EtcdCluster, EtcdMember  # noqa: E402
from kubelite.storage import Conflict, Store, Unavailable, open_store  # noqa: E402

WRITERS = 16


async def writer(store: Store, key: str, landed: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        try:
            kv = await store.get(key)
            assert kv is not None
            await store.update(key, str(int(kv.value) + 1).encode(), kv.mod_revision)
        except (Conflict, Unavailable):
            await asyncio.sleep(0.01)
            continue
        landed.append(time.monotonic())


def election(cluster: EtcdCluster, killed: EtcdMember, old: object, started: float) -> float:
    """Seconds from ``started`` until a surviving member reports a leader other than ``old``."""
    while True:
        for member in cluster.members:
            if member is killed:
                continue
            status = member.status()
            if status and status.get("leader") not in (None, "0", 0, old):
                return time.monotonic() - started
        time.sleep(0.01)


async def one_run(cluster: EtcdCluster, via_leader: bool) -> dict[str, float]:
    leader = cluster.leader()
    first = leader if via_leader else next(m for m in cluster.members if m is not leader)
    store = await open_store(cluster.url_via(first, f"/bench-{uuid.uuid4().hex[:8]}"))
    stop = asyncio.Event()
    try:
        keys = [f"/k{i}" for i in range(WRITERS)]
        for key in keys:
            await store.create(key, b"0")
        landed: list[list[float]] = [[] for _ in keys]
        tasks = [
            asyncio.create_task(writer(store, k, times, stop))
            for k, times in zip(keys, landed, strict=True)
        ]
        await asyncio.sleep(1.0)
        status = leader.status()
        assert status is not None
        old = status["leader"]
        killed = time.monotonic()
        leader.kill()
        elected: list[float] = []
        thread = threading.Thread(
            target=lambda: elected.append(election(cluster, leader, old, killed))
        )
        thread.start()
        while not all(any(t > killed for t in times) for times in landed):
            await asyncio.sleep(0.01)
            if time.monotonic() - killed > 60:
                raise RuntimeError("writes did not resume within 60 s")
        await asyncio.sleep(0.5)
        stop.set()
        await asyncio.gather(*tasks)
        thread.join()
        after = [min(t for t in times if t > killed) - killed for times in landed]
        return {"stall": min(after), "all": max(after), "election": elected[0]}
    finally:
        await store.close()
        cluster.restart(leader)
        cluster.wait_healthy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EtcdCluster(Path(tmp), 3, fsync=True) as cluster:
        results: dict[str, list[dict[str, float]]] = {"leader": [], "follower": []}
        for _ in range(args.runs):
            for name in results:
                results[name].append(uvloop.run(one_run(cluster, name == "leader")))
                print(f"{name}: {results[name][-1]}", file=sys.stderr, flush=True)
    print(f"etcd leader SIGKILLed under {WRITERS} writers ({args.runs} runs each, medians, s)")
    print(f"{'store first endpoint':<22}{'election':>10}{'first write':>13}{'all writers':>13}")
    for name, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in ("election", "stall", "all")}
        worst = max(r["all"] for r in runs)
        print(
            f"{name:<22}{med['election']:>10.2f}{med['stall']:>13.2f}{med['all']:>13.2f}"
            f"   (worst all-writers: {worst:.2f})"
        )


if __name__ == "__main__":
    main()
