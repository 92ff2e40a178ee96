"""The request path in process: kubelite's ASGI app called directly, no socket, no TLS, next to
the bare echo app (``bench/echo_app.py``) called the same way.

This isolates kubelite's own work per request (the filter chain, routing, the handler, the
generic store with its strategy, JSON, and the SQLite store's write hand-off), which the HTTP
benchmark (``bench/api.py``) mixes with granian's and the kernel's. It is the figure to watch
when changing the request path:

* GET of one ~2 KB ConfigMap by name;
* conflict-checked PUT of it (each PUT carries the resourceVersion the last one returned), with
  ``fieldValidation`` Warn (the default) and Ignore;
* the echo app's GET and PUT, the floor: the ratios are echo time / kubelite time.

Run:
    .venv/bin/python bench/request_path.py             # ~20 s
    .venv/bin/python bench/request_path.py --rounds 5 --requests 5000

Each figure is the median over rounds of the mean microseconds per request, one request at a
time on one event loop: a GET's is its CPU; a PUT's also includes the hand-off to the SQLite
writer thread and back, which a loaded server overlaps with other requests.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import orjson
import uvloop

from echo_app import app as echo_app
from kubelite.server.assembly import running
from kubelite.storage import StoreOptions

App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
TOKEN = "bench-token"
PATH = "/api/v1/namespaces/default/configmaps/bench"


def configmap() -> dict[str, Any]:
    data = {f"key-{i:02d}": "v" * 40 for i in range(40)}  # ~2 KB, as bench/api.py's
    meta = {"name": "bench", "namespace": "default"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


async def call(
    app: App, method: str, path: str, body: bytes = b"", content_type: bytes = b"application/json"
) -> tuple[int, bytes]:
    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": query.encode(),
        "headers": [
            (b"authorization", f"Bearer {TOKEN}".encode()),
            (b"content-type", content_type),
        ],
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


async def time_gets(app: App, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        status, _ = await call(app, "GET", PATH)
        assert status == 200
    return (time.perf_counter() - started) / n * 1e6


async def time_puts(app: App, n: int, obj: dict[str, Any], query: str = "") -> float:
    """Read-modify-write as clients do it: each PUT sends the object the last one answered
    (its resourceVersion and managedFields too) with one value changed."""
    started = time.perf_counter()
    for i in range(n):
        obj["data"]["key-00"] = str(i)
        status, body = await call(app, "PUT", PATH + query, orjson.dumps(obj))
        assert status == 200, body
        answer = orjson.loads(body)
        obj["metadata"] = answer["metadata"]
    return (time.perf_counter() - started) / n * 1e6


@asynccontextmanager
async def serving_configmap() -> AsyncIterator[tuple[App, dict[str, Any]]]:
    """kubelite's app in process (SQLite in RAM, no compaction) and the ConfigMap it stored at
    PATH, as created."""
    store_options = StoreOptions(compaction_interval_seconds=0)
    async with running("sqlite://", store_options, token=TOKEN) as server:
        app: App = server.app
        status, body = await call(app, "POST", PATH.rsplit("/", 1)[0], orjson.dumps(configmap()))
        assert status == 201, body
        yield app, orjson.loads(body)


async def measure(rounds: int, n: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {}
    async with serving_configmap() as (app, obj):
        for _ in range(rounds):
            for name, run in (
                ("kubelite GET", time_gets(app, n)),
                ("kubelite PUT (Warn)", time_puts(app, n, obj)),
                ("kubelite PUT (Ignore)", time_puts(app, n, obj, "?fieldValidation=Ignore")),
                ("echo GET", time_gets(echo_app, n)),
                ("echo PUT", time_puts(echo_app, n, dict(obj))),
            ):
                figures.setdefault(name, []).append(await run)
    return figures


def report(figures: dict[str, list[float]]) -> None:
    median = {name: statistics.median(values) for name, values in figures.items()}
    print(f"{'figure':<24}{'median us':>10}  rounds")
    for name, values in figures.items():
        rounds = ", ".join(f"{v:.1f}" for v in values)
        print(f"{name:<24}{median[name]:>10.1f}  [{rounds}]")
    print(f"GET ratio echo/kubelite: {median['echo GET'] / median['kubelite GET']:.2f}")
    for mode in ("Warn", "Ignore"):
        ratio = median["echo PUT"] / median[f"kubelite PUT ({mode})"]
        print(f"PUT ({mode}) ratio echo/kubelite: {ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=3000, help="per figure and round")
    args = parser.parse_args()
    figures = uvloop.run(measure(args.rounds, args.requests))
    report(figures)


if __name__ == "__main__":
    main()
