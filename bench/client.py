"""Client benchmark: how long an Informer takes to (re)list 10,000 objects, against a plain paged
LIST over the same transport measured in the same run.

A real ``kubelite serve`` (pinned to CPU 0) holds N ConfigMaps of ~600 B in one namespace; the
client side runs on CPU 1 (uvloop). Each round measures, in this order:

* **baseline**: GETs of ``limit=500`` pages, following ``continue``, sent on the AsyncClient's
  own aiohttp transport, each page decoded with orjson: the least a client on this transport
  can do, so the ratios are what the client's layers add;
* ``AsyncClient.list`` (same pages, through the client's sans-I/O core);
* ``Informer`` sync with list+watch (start -> ``has_synced``: paged LIST, cache filled);
* ``Informer`` sync with watch-list (start -> ``has_synced``: one watch stream of ADDED events and
  the initial-events-end bookmark);
* ``Informer`` relist after a forced 410 (a synced watch-list informer is stopped, the history it
  would resume from is compacted, the server is given 1 s to finish compacting, the informer is
  started again: -> second sync: the 410, then the watch-list, with the 10,000 objects already
  in its cache to compare against);
* for reference, the same pages through a new bare ``aiohttp.ClientSession``, which sends them
  all on one keep-alive connection (the AsyncClient's pool holds the connections its 64
  concurrent creates opened): on this server, back-to-back list pages on one connection stall
  about 40 ms now and then, so this line is slower than the baseline, see docs/benchmarks.md;
* for the sync client: the same pages on its urllib3 transport (its baseline) and
  ``Client.list``.

Figures are medians over the rounds; ratios are of medians to the baseline of the same run.

Run:
    .venv/bin/python bench/client.py                # 10,000 objects, 7 rounds (~40 s)
    .venv/bin/python bench/client.py --quick        # 2,000 objects, 2 rounds
    .venv/bin/python bench/client.py --json > client.json
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop

from kubelite.client import AsyncClient, Client, Informer, load_kubeconfig
from kubelite.client.core import ApiRequest
from kubelite.client.transports import AiohttpTransport, Urllib3Transport

SERVER_CPU, CLIENT_CPU = 0, 1
NAMESPACE = "bench"
PAGE = 500
PAYLOAD = "y" * 400
ASYNC_BASELINE = "baseline: paged GETs on AsyncClient's aiohttp transport + orjson"
SYNC_BASELINE = "sync baseline: paged GETs on Client's urllib3 transport + orjson"
RAW_AIOHTTP = "reference: the same on a new aiohttp.ClientSession (one connection)"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pin(cpu: int) -> None:
    if len(os.sched_getaffinity(0)) > 1 and (os.cpu_count() or 1) > cpu:
        os.sched_setaffinity(0, {cpu})


def start_server(data_dir: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "kubelite", "serve", "--port", "0", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=lambda: pin(SERVER_CPU),
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("kubelite serving on "):
            return process
    raise RuntimeError("kubelite serve did not start")


def configmap(name: str, payload: str = PAYLOAD) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": {"payload": payload},
    }


async def populate(client: AsyncClient, count: int) -> None:
    await client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    semaphore = asyncio.Semaphore(64)

    async def one(i: int) -> None:
        async with semaphore:
            await client.create(configmap(f"cm-{i:06}"))

    await asyncio.gather(*(one(i) for i in range(count)))


async def raw_aiohttp_list(session: aiohttp.ClientSession, server: str) -> int:
    url = f"{server}/api/v1/namespaces/{NAMESPACE}/configmaps"
    token, items = "", 0
    while True:
        params = {"limit": str(PAGE), **({"continue": token} if token else {})}
        async with session.get(url, params=params) as response:
            page = orjson.loads(await response.read())
        items += len(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            return items


def path_and_query(token: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    query = (("limit", str(PAGE)),) + ((("continue", token),) if token else ())
    return f"/api/v1/namespaces/{NAMESPACE}/configmaps", query


async def transport_list(transport: AiohttpTransport) -> int:
    """Paged GETs sent on the AsyncClient's own transport, pages decoded with orjson."""
    token, items = "", 0
    while True:
        page = orjson.loads((await transport.send(ApiRequest("GET", *path_and_query(token)))).body)
        items += len(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            return items


def sync_transport_list(transport: Urllib3Transport) -> int:
    """Paged GETs sent on the Client's own transport, pages decoded with orjson."""
    token, items = "", 0
    while True:
        page = orjson.loads(transport.send(ApiRequest("GET", *path_and_query(token))).body)
        items += len(page["items"])
        token = page["metadata"].get("continue", "")
        if not token:
            return items


async def timed(fn: Callable[[], int | Awaitable[int]], expected: int) -> float:
    """Seconds ``fn`` took (a sync ``fn`` blocks this thread: nothing else runs meanwhile).
    Garbage from the previous case is collected first, so that no case pays for another's."""
    gc.collect()
    start = time.perf_counter()
    result = fn()
    got = await result if inspect.isawaitable(result) else result
    elapsed = time.perf_counter() - start
    if got != expected:
        raise AssertionError(f"expected {expected} objects, got {got}")
    return elapsed


async def informer_sync(client: AsyncClient, watch_list: bool) -> int:
    informer = Informer(
        client, "v1", "ConfigMap", NAMESPACE, use_watch_list=watch_list, page_size=PAGE
    )
    informer.start()
    try:
        await informer.wait_synced()
        if informer.use_watch_list is not watch_list:
            raise AssertionError("the server refused watch-list")
        return len(informer.cache)
    finally:
        await informer.stop()


async def informer_relist_times(client: AsyncClient, rounds: int, count: int) -> list[float]:
    informer = Informer(client, "v1", "ConfigMap", NAMESPACE, page_size=PAGE)
    relisted = asyncio.Event()
    marker = ""

    def on_add(obj: dict[str, Any]) -> None:
        # The relist reports the objects it finds new as adds, after it replaced the cache:
        # the marker written while the informer was away says the relist is done (no polling,
        # which would take CPU from the informer on this loop).
        if obj["metadata"]["name"] == marker:
            relisted.set()

    informer.add_handlers(on_add=on_add)
    informer.start()
    await informer.wait_synced()
    times = []
    try:
        for i in range(rounds):
            await informer.stop()
            # two writes past the informer's resourceVersion, then compact over them: 410
            for step in range(2):
                last = await client.create(configmap(f"relist-{i}-{step}", ""))
            marker = last["metadata"]["name"]
            revision = last["metadata"]["resourceVersion"]
            await client.request("POST", "/kubelite/v1/compact", [("revision", revision)])
            await asyncio.sleep(1.0)  # let the server finish compacting: not the client's time
            relisted.clear()
            start = time.perf_counter()
            informer.start()
            await relisted.wait()
            times.append(time.perf_counter() - start)
            if informer.stats.expired != i + 1 or len(informer.cache) != count + 2 * (i + 1):
                raise AssertionError("the relist did not happen as expected")
    finally:
        await informer.stop()
    return times


async def run(count: int, rounds: int) -> dict[str, Any]:
    pin(CLIENT_CPU)
    with tempfile.TemporaryDirectory(prefix="kubelite-bench-client-") as tmp:
        server = start_server(Path(tmp) / "data")
        try:
            kubeconfig = Path(tmp) / "data" / "kubeconfig"
            connection = load_kubeconfig(kubeconfig)
            async with AsyncClient(connection) as client:
                log(f"creating {count} ConfigMaps")
                await populate(client, count)
                session = aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(ssl=connection.ssl_context()),
                    headers=connection.auth_headers(),
                )
                sync_client = Client(connection)
                transport, sync_transport = client.transport, sync_client.transport
                assert isinstance(transport, AiohttpTransport)
                assert isinstance(sync_transport, Urllib3Transport)
                figures: dict[str, list[float]] = {}

                def add(name: str, seconds: float) -> None:
                    figures.setdefault(name, []).append(seconds)

                async def async_client_list() -> int:
                    listing = await client.list("v1", "ConfigMap", NAMESPACE, limit=PAGE)
                    return len(listing["items"])

                def sync_client_list() -> int:
                    listing = sync_client.list("v1", "ConfigMap", NAMESPACE, limit=PAGE)
                    return len(listing["items"])

                cases: dict[str, Callable[[], int | Awaitable[int]]] = {
                    ASYNC_BASELINE: lambda: transport_list(transport),
                    "AsyncClient.list (paged)": async_client_list,
                    "Informer sync, list+watch": lambda: informer_sync(client, False),
                    "Informer sync, watch-list": lambda: informer_sync(client, True),
                    RAW_AIOHTTP: lambda: raw_aiohttp_list(session, connection.server),
                    SYNC_BASELINE: lambda: sync_transport_list(sync_transport),
                    "Client.list (paged, urllib3)": sync_client_list,
                }
                for case in cases.values():  # warm-up: connections, first-use costs
                    result = case()
                    if inspect.isawaitable(result):
                        await result
                names = list(cases)
                for r in range(rounds):
                    log(f"round {r + 1}/{rounds}")
                    # each round starts one case later, so that no case always runs first
                    for name in names[r % len(names) :] + names[: r % len(names)]:
                        add(name, await timed(cases[name], count))
                log("relists after a forced 410")
                for seconds in await informer_relist_times(client, rounds, count):
                    add("Informer relist after a forced 410 (watch-list)", seconds)
                await session.close()
                sync_client.close()
        finally:
            server.terminate()
            server.wait(20)
            if server.stdout is not None:
                server.stdout.close()
    medians = {name: statistics.median(values) for name, values in figures.items()}
    return {"objects": count, "rounds": rounds, "figures": figures, "medians": medians}


def report(result: dict[str, Any]) -> str:
    medians = result["medians"]
    async_base = medians[ASYNC_BASELINE]
    sync_base = medians[SYNC_BASELINE]
    lines = [
        f"{result['objects']:,} ConfigMaps (~600 B), {result['rounds']} rounds, medians; "
        f"{platform.python_implementation()} {platform.python_version()}, uvloop",
        "",
        "| figure | median s | min s | max s | objects/s | x baseline |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, values in result["figures"].items():
        base = sync_base if "urllib3" in name else async_base
        median = medians[name]
        lines.append(
            f"| {name} | {median:.3f} | {min(values):.3f} | {max(values):.3f} | "
            f"{result['objects'] / median:,.0f} | {median / base:.2f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="2,000 objects, 2 rounds")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    count, rounds = (2_000, 2) if args.quick else (args.objects, args.rounds)
    result = uvloop.run(run(count, rounds))
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
