"""What the garbage collector costs: delete the owner of 10,000 ConfigMaps and time until every
dependent is gone, with Background and with Foreground deletion (where the owner itself goes
last), against a baseline measured in the same run on the same server: one DELETE of the
collection (``deletecollection`` with a label selector) of the same number of ConfigMaps, the
fastest way a client can remove them. Also the collector's memory per tracked object: the
graph built in-process from the same objects' metadata, measured with tracemalloc.

The server runs as ``kubelite serve`` does by default (every feature on), pinned to CPU 0.

Run:
    .venv/bin/python bench/gc.py             # 10,000 dependents, ~2 min
    .venv/bin/python bench/gc.py --quick     # 1,000 dependents
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any, cast

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api as base
from kubelite.api.catalogue import load_builtin_catalogue
from kubelite.api.controllers.gcgraph import Change, GraphBuilder
from kubelite.api.controllers.workqueue import WorkQueue
from kubelite.api.machinery.registry import Registry

LABEL = "bench=gc"


async def fill(api: base.Api, ns: str, count: int, owner: dict[str, Any] | None) -> None:
    """``count`` labelled ConfigMaps in ``ns``, each owned by ``owner`` when given."""
    await api.namespace(ns)
    sem = asyncio.Semaphore(base.CONNECTIONS)
    meta: dict[str, Any] = {"labels": {"bench": "gc"}}
    if owner is not None:
        m = owner["metadata"]
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": m["name"], "uid": m["uid"]}
        meta["ownerReferences"] = [{**ref, "blockOwnerDeletion": True}]

    async def one(i: int) -> None:
        async with sem:
            body = {"metadata": {**meta, "name": f"d{i}"}, "data": {"k": "v"}}
            status, obj = await api.call("POST", f"/api/v1/namespaces/{ns}/configmaps", body)
            assert status == 201, (status, obj)

    await asyncio.gather(*(one(i) for i in range(count)))


async def remaining(api: base.Api, ns: str) -> int:
    path = f"/api/v1/namespaces/{ns}/configmaps?labelSelector={LABEL}&limit=1"
    status, listing = await api.call("GET", path)
    assert status == 200, listing
    return len(listing["items"]) + int(listing["metadata"].get("remainingItemCount") or 0)


async def until_gone(api: base.Api, ns: str, t0: float, owner: str | None = None) -> float:
    """Seconds from ``t0`` until no labelled ConfigMap is left in ``ns`` (and ``owner`` gone)."""
    while True:
        left = await remaining(api, ns)
        if owner is not None and left == 0:
            left = int(
                (await api.call("GET", f"/api/v1/namespaces/{ns}/configmaps/{owner}"))[0] != 404
            )
        if left == 0:
            return time.perf_counter() - t0
        await asyncio.sleep(0.02)


async def rounds(proc: base.Proc, count: int) -> dict[str, float]:
    out: dict[str, float] = {}
    async with base.Api(proc) as api:
        await fill(api, "collection", count, None)
        t0 = time.perf_counter()
        path = f"/api/v1/namespaces/collection/configmaps?labelSelector={LABEL}"
        status, _ = await api.call("DELETE", path)
        assert status == 200, status
        out["deletecollection_s"] = await until_gone(api, "collection", t0)
        for policy in ("Background", "Foreground"):
            ns = policy.lower()
            await api.namespace(ns)
            status, owner = await api.call(
                "POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "owner"}}
            )
            assert status == 201, owner
            await fill(api, ns, count, owner)
            t0 = time.perf_counter()
            body = {"propagationPolicy": policy}
            status, _ = await api.call("DELETE", f"/api/v1/namespaces/{ns}/configmaps/owner", body)
            assert status == 200, status
            out[f"{ns}_s"] = await until_gone(
                api, ns, t0, "owner" if policy == "Foreground" else None
            )
    out["server_rss_mib"] = proc.status("VmHWM") / 1024
    return out


def graph_bytes_per_object(count: int) -> float:
    """tracemalloc's growth while the graph takes ``count`` dependents of one owner, per object
    (the metadata itself is the store's and the watch cache's; the graph keeps nodes)."""
    loop = asyncio.new_event_loop()

    async def build() -> float:
        queues: tuple[WorkQueue[Any], WorkQueue[Any]] = (WorkQueue(), WorkQueue())
        graph = GraphBuilder(
            cast(Registry, None), load_builtin_catalogue(), *queues, lambda n, u: None
        )
        owner = {"name": "owner", "namespace": "ns", "uid": "owner-uid"}
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "owner-uid"}
        metas = [
            {"name": f"d{i}", "namespace": "ns", "uid": f"uid-{i:08d}", "ownerReferences": [ref]}
            for i in range(count)
        ]
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        graph.apply(Change("v1", "ConfigMap", owner))
        for meta in metas:
            graph.apply(Change("v1", "ConfigMap", meta))
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(graph.uid_to_node) == count + 1
        return (after - before) / count

    try:
        return loop.run_until_complete(build())
    finally:
        loop.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--workdir")
    args = parser.parse_args()
    count = args.count or (1000 if args.quick else 10_000)
    with base.workdir(args.workdir) as parent:
        proc = base.start_kubelite(parent / "gc")
        try:
            base.wait_ready(proc)
            out = uvloop.run(rounds(proc, count))
        finally:
            proc.stop()
            shutil.rmtree(parent / "gc", ignore_errors=True)
    per_object = graph_bytes_per_object(count)
    baseline = out["deletecollection_s"]
    print(f"dependents: {count}")
    print(f"deletecollection (baseline): {baseline:.2f} s")
    for policy in ("background", "foreground"):
        took = out[f"{policy}_s"]
        print(
            f"owner deleted, {policy}: all gone in {took:.2f} s ({took / baseline:.2f}x baseline, "
            f"{count / took:.0f} dependents/s)"
        )
    print(f"server peak RSS: {out['server_rss_mib']:.0f} MiB")
    print(f"graph memory per tracked object: {per_object:.0f} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
