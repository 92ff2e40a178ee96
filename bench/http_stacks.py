"""Which HTTP stack kubelite serves on: its own app and the echo ceiling on granian and on uvicorn.

kubelite serves on granian (``kubelite.server.http``). This benchmark is the measurement behind
that choice: the same ``KubeliteApp`` (SQLite store on disk, the same TLS certificate) and the
same bare echo app from ``bench/echo_app.py``, each run on

* granian's embedded server (``kubelite.server.http.serve_http``), and
* uvicorn with httptools and uvloop (lifespan off, no access log), which kubelite used before.

Each server runs pinned to CPU 0, wrk to CPU 1, with the conflict-checked PUT and the GET by
name of ``bench/api.py`` (64 connections). Rounds interleave the four servers.

uvicorn is not a kubelite dependency any more; install it for this comparison only:

    apt-get install -y wrk
    .venv/bin/pip install uvicorn httptools
    .venv/bin/python bench/http_stacks.py [--seconds 6] [--rounds 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import uvloop

from api import (
    CLIENT_CPU,
    CONNECTIONS,
    LUA_CAS_PUT,
    LUA_STATIC,
    NS_PUT,
    PAYLOAD,
    PYTHON,
    Api,
    Proc,
    _spawn,
    pin,
    refresh_rvs,
    wait_ready,
    wrk,
)

STACKS = ("granian", "uvicorn")


async def _serve(stack: str, kind: str, data_dir: Path) -> None:
    """The child process: one app on one stack, printing ``<kind> serving on URL``."""
    from echo_app import app as echo
    from kubelite.server import serve as kl
    from kubelite.server.assembly import assemble
    from kubelite.server.http import serve_http
    from kubelite.server.listening import ConnectionBudget, listen, raise_open_file_limit
    from kubelite.storage import StoreOptions, open_store

    options = kl.ServeOptions(data_dir=str(data_dir), port=0)
    path, token, tls = kl.prepare_data_dir(options)
    app: Any = echo
    if kind == "kubelite":
        store = await open_store(f"sqlite://{path}/state.db", StoreOptions())
        app = (await assemble(store, token=token)).app
    sock = listen("127.0.0.1", 0)
    print(f"{kind} serving on https://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    if stack == "granian":
        budget = ConnectionBudget.of(raise_open_file_limit())
        await serve_http(app, sock, tls, on_stop=lambda: None, max_connections=budget.main)
    else:
        import uvicorn

        config = uvicorn.Config(
            app,
            http="httptools",
            lifespan="off",
            log_level="warning",
            access_log=False,
            ssl_certfile=str(tls.cert),
            ssl_keyfile=str(tls.key),
        )
        await uvicorn.Server(config).serve(sockets=[sock])


def start(stack: str, kind: str, data_dir: Path) -> Proc:
    data_dir.mkdir(parents=True, exist_ok=True)
    args = [PYTHON, __file__, "--serve", stack, kind, str(data_dir)]
    proc = _spawn(args, f"{kind} serving on ", data_dir, f"{stack}-{kind}.log")
    proc.token = (data_dir / "token").read_text().strip()
    wait_ready(proc)
    return proc


def run(base: Path, seconds: int, rounds: int) -> dict[tuple[str, str], list[float]]:
    names = [f"cas-{i}" for i in range(CONNECTIONS)]
    cas, static = base / "cas.lua", base / "static.lua"
    cas.write_text(LUA_CAS_PUT)
    static.write_text(LUA_STATIC)
    servers: dict[tuple[str, str], Proc] = {}
    rvs: dict[str, dict[str, str]] = {}
    results: dict[tuple[str, str], list[float]] = {}
    try:
        for stack in STACKS:
            data = base / stack
            servers[stack, "kubelite"] = start(stack, "kubelite", data)
            servers[stack, "echo"] = start(stack, "echo", data)

            async def setup(proc: Proc) -> dict[str, str]:
                async with Api(proc) as api:
                    await api.namespace(NS_PUT)
                    return await api.create_many(NS_PUT, names, {"payload": PAYLOAD})

            rvs[stack] = uvloop.run(setup(servers[stack, "kubelite"]))
        obj = f"/api/v1/namespaces/{NS_PUT}/configmaps/cas-0"
        for rnd in range(rounds):
            print(f"round {rnd + 1}/{rounds}", file=sys.stderr, flush=True)
            for stack in STACKS:
                kl = servers[stack, "kubelite"]
                uvloop.run(refresh_rvs(kl, names, rvs[stack]))
                rv_file = base / f"rvs-{stack}.txt"
                rv_file.write_text("".join(f"{n} {rvs[stack][n]}\n" for n in names))
                for kind in ("kubelite", "echo"):
                    proc = servers[stack, kind]
                    put = wrk(proc.url, cas, seconds, [kl.token, NS_PUT, PAYLOAD, str(rv_file)])
                    if put.n409 or put.nother:
                        raise RuntimeError(f"PUTs that were not 200: {put}")
                    get = wrk(proc.url, static, seconds, [kl.token, "GET", obj, ""])
                    results.setdefault((stack, f"{kind} PUT"), []).append(put.rate)
                    results.setdefault((stack, f"{kind} GET"), []).append(get.rate)
    finally:
        for proc in servers.values():
            proc.stop()
    return results


def report(results: dict[tuple[str, str], list[float]]) -> str:
    med = {k: statistics.median(v) for k, v in results.items()}
    lines = ["figure (wrk, 64 connections)       granian/s  uvicorn/s  granian÷uvicorn"]
    for fig in ("kubelite PUT", "echo PUT", "kubelite GET", "echo GET"):
        g, u = med["granian", fig], med["uvicorn", fig]
        lines.append(f"{fig:<34}{g:>10,.0f}{u:>11,.0f}{g / u:>17.2f}")
    for stack in STACKS:
        put = med[stack, "kubelite PUT"] / med[stack, "echo PUT"]
        get = med[stack, "kubelite GET"] / med[stack, "echo GET"]
        lines.append(f"{stack}: kubelite/echo PUT {put:.2f}, GET {get:.2f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--serve", nargs=3, metavar=("STACK", "KIND", "DIR"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.serve:
        stack, kind, data_dir = args.serve
        uvloop.run(_serve(stack, kind, Path(data_dir)))
        return 0
    pin(CLIENT_CPU)
    with tempfile.TemporaryDirectory(prefix="kubelite-stacks-") as tmp:
        print(report(run(Path(tmp), args.seconds, args.rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
