"""What one admission webhook costs a write: conflict-checked PUT/s and PUT latency of a
``kubelite serve`` with and without one validating webhook that matches every ConfigMap update,
served locally over HTTPS.

The webhook is a small aiohttp app (this script with ``--serve-webhook``) that allows every
request, on its own CA-issued certificate (kubelite.server.tls makes it). kubelite runs pinned
to CPU 0, the webhook and the load generators to CPU 1 (on 2 cores the webhook shares the
client's). In alternating rounds (the configuration created, then deleted again):

* PUT/s at 64 connections (wrk, ``bench/api.py``'s conflict-checked PUT script), and the CPU
  time kubelite's process spent per PUT in that run (user + system, from /proc): what a call
  costs the server whoever the bottleneck is;
* PUT latency p50/p99 from one client sending one PUT at a time;

and the webhook's own round trip (one client POSTing AdmissionReviews to it directly), the
floor of what a call can add.

Run:
    .venv/bin/python bench/admission_webhook.py            # ~1.5 min
    .venv/bin/python bench/admission_webhook.py --quick    # ~30 s
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

import api as base

CONFIG = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
SEQUENTIAL = 500


# -- the webhook ------------------------------------------------------------------------------


def serve_webhook(certs: Path) -> None:
    """Serve an allow-everything webhook on 127.0.0.1 until killed."""
    from aiohttp import web

    from kubelite.server.tls import ensure_serving_files

    files = ensure_serving_files(certs, "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(files.cert, files.key)

    async def allow(request: web.Request) -> web.Response:
        review = await request.json()
        answer = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True},
        }
        return web.json_response(answer)

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/validate", allow)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        port = runner.addresses[0][1]
        print(f"webhook serving on https://127.0.0.1:{port}", flush=True)
        await asyncio.Event().wait()

    uvloop.run(main())


def start_webhook(parent: Path) -> base.Proc:
    certs = parent / "webhook"
    certs.mkdir(parents=True, exist_ok=True)
    args = [base.PYTHON, __file__, "--serve-webhook", str(certs)]
    errlog = (parent / "webhook.log").open("a")
    process = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=errlog, text=True,
        preexec_fn=lambda: base.pin(base.CLIENT_CPU),
    )  # fmt: skip
    errlog.close()
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("webhook serving on "):
        process.kill()
        raise RuntimeError(f"the webhook did not start; see {parent / 'webhook.log'}")
    return base.Proc(line.split()[-1], process, certs)


def configuration(hook: base.Proc) -> dict[str, Any]:
    bundle = base64.b64encode((hook.data_dir / "ca.crt").read_bytes()).decode()
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "bench"},
        "webhooks": [
            {
                "name": "bench.example.com",
                "clientConfig": {"url": f"{hook.url}/validate", "caBundle": bundle},
                "rules": [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["configmaps"]}],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ],
    }  # fmt: skip


async def set_webhook(proc: base.Proc, hook: base.Proc, on: bool) -> None:
    async with base.Api(proc) as api:
        if on:
            status, out = await api.call("POST", CONFIG, configuration(hook))
            assert status == 201, out
        else:
            status, out = await api.call("DELETE", f"{CONFIG}/bench")
            assert status == 200, out


# -- measurements -------------------------------------------------------------------------------


def cpu_seconds(proc: base.Proc) -> float:
    """User + system CPU time of the process so far."""
    fields = Path(f"/proc/{proc.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def sequential_puts(proc: base.Proc, count: int) -> list[float]:
    """Milliseconds of each of ``count`` PUTs of one ConfigMap, one at a time."""
    path = f"/api/v1/namespaces/{base.NS_PUT}/configmaps/seq"
    times: list[float] = []
    async with base.Api(proc, limit=1) as api:
        status, obj = await api.call("GET", path)
        if status == 404:
            status, obj = await api.call(
                "POST", path.rsplit("/", 1)[0], base.cm(base.NS_PUT, "seq", {"n": "0"})
            )
        for i in range(count):
            obj["data"] = {"n": str(i), "payload": base.PAYLOAD}
            t0 = time.perf_counter()
            status, obj = await api.call("PUT", path, obj)
            times.append((time.perf_counter() - t0) * 1000)
            assert status == 200, obj
    return times


async def webhook_round_trips(hook: base.Proc, count: int) -> list[float]:
    """Milliseconds of ``count`` AdmissionReview POSTs straight to the webhook."""
    context = ssl.create_default_context(cafile=str(hook.data_dir / "ca.crt"))
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": str(uuid.uuid4()), "object": base.cm("x", "y", {"p": base.PAYLOAD})},
    }
    times: list[float] = []
    connector = aiohttp.TCPConnector(limit=1, ssl=context)
    async with aiohttp.ClientSession(connector=connector) as session:
        for _ in range(count):
            t0 = time.perf_counter()
            async with session.post(f"{hook.url}/validate?timeout=10s", json=review) as resp:
                await resp.read()
            times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dir", default=None, help="parent of the data dirs (a real disk)")
    parser.add_argument("--serve-webhook", metavar="CERTS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_webhook:
        serve_webhook(Path(args.serve_webhook))
        return 0
    if shutil.which("wrk") is None:
        print("wrk not found: apt-get install -y wrk", file=sys.stderr)
        return 2
    seconds, rounds = (2, 2) if args.quick else (6, 4)
    base.pin(base.CLIENT_CPU)
    figures: dict[str, dict[str, list[float]]] = {
        m: {"put": [], "cpu": [], "p50": [], "p99": []} for m in ("without", "with")
    }
    with base.workdir(args.dir) as parent:
        proc = base.start_kubelite(parent / "kubelite" / "data")
        hook = start_webhook(parent)
        try:
            base.wait_ready(proc)
            names = [f"cas-{i}" for i in range(base.CONNECTIONS)]

            async def fill() -> dict[str, str]:
                async with base.Api(proc) as api:
                    await api.namespace(base.NS_PUT)
                    return await api.create_many(base.NS_PUT, names, {"payload": base.PAYLOAD})

            rvs = uvloop.run(fill())
            cas = parent / "cas_put.lua"
            cas.write_text(base.LUA_CAS_PUT)
            direct = uvloop.run(webhook_round_trips(hook, SEQUENTIAL))
            for rnd in range(rounds):
                for mode in ("without", "with"):
                    base.log(f"round {rnd + 1}/{rounds}: {mode} the webhook")
                    if mode == "with":
                        uvloop.run(set_webhook(proc, hook, True))
                    latencies = uvloop.run(sequential_puts(proc, SEQUENTIAL))
                    put_args = base.cas_args(proc, names, rvs, parent / "rvs.txt")
                    cpu = cpu_seconds(proc)
                    put = base.wrk(proc.url, cas, seconds, put_args)
                    cpu = cpu_seconds(proc) - cpu
                    assert put.nother == 0, (mode, put)
                    figures[mode]["put"].append(put.rate)
                    figures[mode]["cpu"].append(cpu / (put.n2xx + put.n409) * 1e6)
                    figures[mode]["p50"].append(statistics.median(latencies))
                    figures[mode]["p99"].append(base.pct(latencies, 0.99))
                    if mode == "with":
                        uvloop.run(set_webhook(proc, hook, False))
        finally:
            hook.stop()
            proc.stop()
    med = {m: {k: statistics.median(v) for k, v in f.items()} for m, f in figures.items()}
    print(f"{'':28}{'without':>10}{'with':>10}{'ratio':>8}")
    rows = (("put", "PUT/s (64 connections)", ",.0f"), ("cpu", "server CPU us per PUT", ".0f"),
            ("p50", "PUT p50 ms (one at a time)", ".2f"),
            ("p99", "PUT p99 ms (one at a time)", ".2f"))  # fmt: skip
    for key, label, fmt in rows:
        without, with_ = med["without"][key], med["with"][key]
        print(f"{label:28}{without:>10{fmt}}{with_:>10{fmt}}{with_ / without:>8.2f}")
    added = med["with"]["p50"] - med["without"]["p50"]
    own_p50, own_p99 = statistics.median(direct), base.pct(direct, 0.99)
    print(f"added p50 latency per write: {added:.2f} ms; the webhook's own round trip: "
          f"p50 {own_p50:.2f} ms, p99 {own_p99:.2f} ms")  # fmt: skip
    print(
        f"(medians of {rounds} alternating rounds: wrk {seconds} s, {SEQUENTIAL} sequential PUTs)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
