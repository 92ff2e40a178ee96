"""The request path in process under load: 64 concurrent conflict-checked PUT loops (each on a
ConfigMap of its own, with bench/api.py's body: a 2 KB payload and a sequence number), then 64
GET loops of one ConfigMap, kubelite's ASGI app called directly (no socket, no TLS; the SQLite
writer thread and the loop on any core). Prints PUT/s and GET/s with the CPU (process time, all
threads) per request: the figure to compare between two commits, run alternately, e.g. the
previous one from a worktree with ``PYTHONPATH=<worktree>/src``.

Run:
    .venv/bin/python bench/concurrent_path.py     # ~25 s: 4 rounds of 2 s each way
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kubelite.server.assembly import running
from kubelite.storage import StoreOptions
from request_path import TOKEN, call

BASE = "/api/v1/namespaces/default/configmaps"
PAYLOAD = "x" * 2048
LOOPS = 64
ROUNDS = 4
SECONDS = 2.0


def put_body(i: int, rv: str, seq: int) -> bytes:
    meta = {"name": f"cas-{i}", "namespace": "default", "resourceVersion": rv}
    data = {"seq": str(seq), "payload": PAYLOAD}
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})


async def measure() -> dict[str, list[float]]:
    options = StoreOptions(compaction_interval_seconds=0)
    async with running("sqlite://", options, token=TOKEN) as server:
        app: Any = server.app
        rvs: dict[int, str] = {}
        for i in range(LOOPS):
            body = orjson.dumps({"metadata": {"name": f"cas-{i}"}, "data": {"payload": PAYLOAD}})
            status, out = await call(app, "POST", BASE, body)
            assert status == 201, out
            rvs[i] = orjson.loads(out)["metadata"]["resourceVersion"]
        state = {"stop": False, "count": 0}

        async def putter(i: int) -> None:
            seq = 0
            while not state["stop"]:
                seq += 1
                status, out = await call(app, "PUT", f"{BASE}/cas-{i}", put_body(i, rvs[i], seq))
                assert status == 200, out
                rvs[i] = orjson.loads(out)["metadata"]["resourceVersion"]
                state["count"] += 1

        async def getter(_: int) -> None:
            while not state["stop"]:
                status, out = await call(app, "GET", f"{BASE}/cas-0")
                assert status == 200, out
                await asyncio.sleep(0)  # a GET need not yield: let the other loops run
                state["count"] += 1

        figures: dict[str, list[float]] = {}
        loops: tuple[tuple[str, Callable[[int], Awaitable[None]]], ...] = (
            ("PUT", putter),
            ("GET", getter),
        )
        for _round in range(ROUNDS):
            for name, loop in loops:
                state["stop"], state["count"] = False, 0
                tasks = [asyncio.create_task(loop(i)) for i in range(LOOPS)]
                await asyncio.sleep(0.3)  # warm
                state["count"] = 0
                cpu, wall = time.process_time(), time.perf_counter()
                await asyncio.sleep(SECONDS)
                n = int(state["count"])
                cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
                state["stop"] = True
                await asyncio.gather(*tasks)
                figures.setdefault(f"{name}/s", []).append(n / wall)
                figures.setdefault(f"{name} CPU us", []).append(cpu / n * 1e6)
        return figures


def main() -> None:
    figures = uvloop.run(measure())
    for name, values in figures.items():
        rounds = ", ".join(f"{v:,.0f}" for v in values)
        print(f"{name:<12}{statistics.median(values):>10,.0f}  [{rounds}]")


if __name__ == "__main__":
    main()
