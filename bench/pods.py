"""What the simulated cluster costs: pods scheduled and run on simulated nodes, and what an idle
simulation takes from the write path.

1. Roll-out: a fresh ``kubelite serve --nodes 10`` (pinned to CPU 0, every feature on); ``--pods``
   bare pods (one container, requests cpu 10m / memory 16Mi) are created 64 at a time in one
   namespace; timed from the first create until every pod is Running and Ready (a watch of the
   namespace's pods); beside it, in the same run, the time to create as many ConfigMaps (the
   write path alone, the baseline). Also the server's resident set before and after, per pod.
2. Idle cost: conflict-checked PUT/s of one ConfigMap per connection (bench/api.py's wrk
   script) against ``--nodes 1`` (the default: a node agent renewing its Lease, the scheduler and
   the kubelet idle) and against ``--nodes 0`` with the same controllers and nothing to simulate,
   alternated ``--rounds`` times; the ratio of their medians.

Run:
    .venv/bin/python bench/pods.py                       # 1,000 pods over 10 nodes, ~3 min
    .venv/bin/python bench/pods.py --pods 200 --rounds 2 # quick

Needs ``wrk`` on PATH for part 2 (skipped without it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api as base

NS = "pods-bench"


def pod(name: str) -> dict[str, Any]:
    container = {
        "name": "app",
        "image": "nginx:1.27",
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "containers": [container]}}  # fmt: skip


def ready(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    return status.get("phase") == "Running" and conditions.get("Ready") == "True"


async def create_all(api: base.Api, plural: str, bodies: list[dict[str, Any]]) -> None:
    sem = asyncio.Semaphore(base.CONNECTIONS)

    async def one(body: dict[str, Any]) -> None:
        async with sem:
            status, obj = await api.call("POST", f"/api/v1/namespaces/{NS}/{plural}", body)
            assert status == 201, (status, obj)

    await asyncio.gather(*(one(b) for b in bodies))


async def until_all_ready(api: base.Api, count: int) -> None:
    """Returns once ``count`` pods of NS are Running and Ready (a list, then a watch)."""
    status, listing = await api.call("GET", f"/api/v1/namespaces/{NS}/pods")
    assert status == 200, listing
    done = {p["metadata"]["name"] for p in listing["items"] if ready(p)}
    rv = listing["metadata"]["resourceVersion"]
    url = f"{api.base}/api/v1/namespaces/{NS}/pods?watch=1&resourceVersion={rv}"
    async with api.session.get(url) as resp:
        async for line in resp.content:
            if len(done) >= count:
                return
            event = json.loads(line)
            obj = event["object"]
            if event["type"] in ("ADDED", "MODIFIED") and ready(obj):
                done.add(obj["metadata"]["name"])
            if len(done) >= count:
                return


async def rollout(work: Path, pods: int, nodes: int) -> dict[str, float]:
    data = work / "rollout" / "data"
    proc = base.start_kubelite(data, "--nodes", str(nodes))
    try:
        base.wait_ready(proc)
        async with base.Api(proc) as api:
            await api.namespace(NS)
            await asyncio.sleep(1.0)  # the namespace's ServiceAccount, the nodes' first reports
            rss0 = proc.status("VmRSS")
            t0 = time.perf_counter()
            configmaps_bodies = [
                {"metadata": {"name": f"c{i}"}, "data": {"k": "v"}} for i in range(pods)
            ]
            await create_all(api, "configmaps", configmaps_bodies)
            configmaps = time.perf_counter() - t0
            t0 = time.perf_counter()
            await create_all(api, "pods", [pod(f"p{i}") for i in range(pods)])
            created = time.perf_counter() - t0
            async with asyncio.timeout(600):
                await until_all_ready(api, pods)
            running = time.perf_counter() - t0
            await asyncio.sleep(2.0)
            rss1 = proc.status("VmRSS")
        return {
            "pods": pods,
            "nodes": nodes,
            "configmaps_created_s": configmaps,
            "pods_created_s": created,
            "pods_running_s": running,
            "rss_before_mib": rss0 / 1024,
            "rss_after_mib": rss1 / 1024,
            "kib_per_pod": (rss1 - rss0) / pods,
        }
    finally:
        proc.stop()


def put_rate(work: Path, nodes: int, seconds: int, round_: int) -> float:
    data = work / f"idle-{nodes}-{round_}" / "data"
    proc = base.start_kubelite(data, "--nodes", str(nodes))
    try:
        base.wait_ready(proc)
        names = [f"cas-{i}" for i in range(base.CONNECTIONS)]

        async def prepare() -> dict[str, str]:
            async with base.Api(proc) as api:
                await api.namespace(base.NS_PUT)
                return await api.create_many(base.NS_PUT, names, {"payload": base.PAYLOAD})

        rvs = uvloop.run(prepare())
        script = data.parent / "cas_put.lua"
        script.write_text(base.LUA_CAS_PUT)
        args = base.cas_args(proc, names, rvs, data.parent / "rvs.txt")
        base.wrk(proc.url, script, 1, args)  # warm-up
        args = base.cas_args(proc, names, rvs, data.parent / "rvs.txt")
        return base.wrk(proc.url, script, seconds, args).rate
    finally:
        proc.stop()
        shutil.rmtree(data.parent, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=10, help="wrk duration per round")
    args = parser.parse_args()
    with base.workdir(None) as work:
        out: dict[str, Any] = {"rollout": uvloop.run(rollout(work, args.pods, args.nodes))}
        base.log(f"rollout: {out['rollout']}")
        if shutil.which("wrk"):
            rates: dict[int, list[float]] = {1: [], 0: []}
            for r in range(args.rounds):
                for nodes in (1, 0):
                    rates[nodes].append(put_rate(work, nodes, args.seconds, r))
                    base.log(f"round {r}: --nodes {nodes}: {rates[nodes][-1]:,.0f} PUT/s")
            on, off = statistics.median(rates[1]), statistics.median(rates[0])
            out["idle"] = {"put_s_nodes_1": rates[1], "put_s_nodes_0": rates[0],
                           "ratio_of_medians": on / off}  # fmt: skip
        else:
            base.log("wrk not found: the idle cost is not measured")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
