"""API server benchmark: the real ``kubelite serve`` over HTTPS, next to a bare ASGI echo app.

In one run (server pinned to CPU 0, every load generator to CPU 1):

* conflict-checked PUT/s at 64 connections (wrk): each connection owns a ConfigMap (~2 KB) and
  PUTs it with the resourceVersion its last response carried, so every PUT is a real CAS;
* the same PUTs against ``bench/echo_app.py`` (a bare ASGI app on the same granian + uvloop
  stack and TLS certificate): the ceiling; kubelite PUT/s / echo PUT/s is the target ratio;
* GET/s of one ConfigMap by name, kubelite and echo;
* 409/s: PUTs with a stale resourceVersion;
* PUT latency at a paced 1,000 writes/s (a Python client on uvloop; latency from each request's
  scheduled send time, so a stall counts for every request it delays): p50/p99/max;
* LIST of 10,000 ConfigMaps: whole, paged with limit=500, as a Table, and ``kubectl get cm``;
* watch fan-out: 500 watch streams over HTTP; a writer makes N updates unthrottled (delivered
  events/s), then 50 updates/s (delivery latency p50/p99, from the writer's send time); every
  watcher must get every event;
* start-up time to ready (process start -> /readyz 200), fresh data dir and restart;
* peak RSS (VmHWM) of the server with 100,000 ConfigMaps stored (written through the store before
  the server starts), after start-up and after one full LIST.

Targets: kubelite PUT/s >= 0.5 x echo PUT/s measured in the same run; PUT p99 at 1,000/s < 20 ms.

Run:
    .venv/bin/python bench/api.py                 # full run, ~6 min
    .venv/bin/python bench/api.py --quick         # smoke run, ~1 min
    .venv/bin/python bench/api.py --json > api.json

Needs ``wrk`` on PATH (``apt-get install -y wrk``). Data dirs go under --dir (default: the system
temp dir), which must be on a real disk. Progress goes to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import uvloop

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
KUBECTL = str(Path(sys.executable).with_name("kubectl"))
SERVER_CPU = 0
CLIENT_CPU = 1
CONNECTIONS = 64
PAYLOAD = "x" * 1800  # a PUT body of ~2 KB
SMALL_PAYLOAD = "y" * 400  # LIST / RSS objects of ~600 B
NS_PUT, NS_LIST, NS_WATCH = "bench-put", "bench-list", "bench-watch"
TARGET_RATIO = 0.5
TARGET_P99_MS = 20.0
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@dataclass(frozen=True)
class Sizes:
    wrk_seconds: int = 10
    rounds: int = 3
    paced_seconds: float = 10.0
    paced_rate: float = 1000.0
    list_objects: int = 10_000
    watchers: int = 500
    watch_burst: int = 1000
    watch_paced_seconds: float = 10.0
    watch_rate: float = 50.0
    startup_runs: int = 5
    rss_objects: int = 100_000


QUICK = Sizes(2, 1, 2.0, 1000.0, 1000, 50, 200, 2.0, 50.0, 2, 5000)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def pin(cpu: int) -> None:
    if len(os.sched_getaffinity(0)) > 1 and (os.cpu_count() or 1) > cpu:
        os.sched_setaffinity(0, {cpu})


# -- servers ------------------------------------------------------------------------------------


@dataclass
class Proc:
    url: str
    process: subprocess.Popen[str]
    data_dir: Path
    token: str = ""
    started: float = 0.0  # seconds from Popen to the "serving on" line

    @property
    def host_port(self) -> tuple[str, int]:
        host, port = self.url.removeprefix("https://").rsplit(":", 1)
        return host, int(port)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def status(self, field_name: str) -> int:
        """A /proc/<pid>/status figure in KiB (VmHWM, VmRSS)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1])
        return 0


def _spawn(args: list[str], marker: str, data_dir: Path, log_name: str) -> Proc:
    errlog = (data_dir.parent / log_name).open("a")
    t0 = time.perf_counter()
    process = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=errlog,
        text=True,
        preexec_fn=lambda: pin(SERVER_CPU),
        cwd=ROOT,
    )
    errlog.close()
    assert process.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if line.startswith(marker):
            return Proc(line.split()[-1], process, data_dir, started=time.perf_counter() - t0)
    process.kill()
    process.wait()
    raise RuntimeError(f"{args} did not start; see {data_dir.parent / log_name}")


#: more ``kubelite serve`` options (``--serve-arg``), e.g. an audit policy and log
SERVE_ARGS: list[str] = []


def start_kubelite(data_dir: Path, *extra: str) -> Proc:
    """``kubelite serve`` on a free port, with ``--serve-arg``'s and ``extra`` options."""
    data_dir.mkdir(parents=True, exist_ok=True)
    args = [PYTHON, "-m", "kubelite", "serve", "--port", "0", "--data-dir", str(data_dir)]
    args += [*SERVE_ARGS, *extra]
    proc = _spawn(args, "kubelite serving on ", data_dir, "kubelite.log")
    proc.token = (data_dir / "token").read_text().strip()
    return proc


def start_echo(data_dir: Path) -> Proc:
    args = [PYTHON, str(ROOT / "bench" / "echo_app.py"), "--data-dir", str(data_dir)]
    return _spawn(args, "echo serving on ", data_dir, "echo.log")


def ssl_context(data_dir: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(data_dir / "ca.crt"))


def wait_ready(proc: Proc, timeout: float = 30.0) -> None:
    ctx = ssl_context(proc.data_dir)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(proc.url + "/readyz", timeout=5, context=ctx) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.002)
    raise RuntimeError(f"{proc.url} not ready after {timeout} s")


# -- HTTP helpers (aiohttp, on uvloop) ------------------------------------------------------------


def cm(ns: str, name: str, data: dict[str, str], rv: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if rv is not None:
        meta["resourceVersion"] = rv
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


class Api:
    def __init__(self, proc: Proc, limit: int = CONNECTIONS) -> None:
        self.base = proc.url
        self.headers = {"Authorization": f"Bearer {proc.token}"}
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=limit, ssl=ssl_context(proc.data_dir)),
            headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=300),
        )

    async def __aenter__(self) -> Api:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.session.close()

    async def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        async with self.session.request(
            method, self.base + path, json=body, headers=headers
        ) as resp:
            raw = await resp.read()
            return resp.status, json.loads(raw) if raw else None

    async def namespace(self, name: str) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        status, _ = await self.call("POST", "/api/v1/namespaces", body)
        assert status in (201, 409), status

    async def create_many(self, ns: str, names: list[str], data: dict[str, str]) -> dict[str, str]:
        """Creates the ConfigMaps 64 at a time; returns name -> resourceVersion."""
        rvs: dict[str, str] = {}
        sem = asyncio.Semaphore(CONNECTIONS)

        async def one(name: str) -> None:
            async with sem:
                path = f"/api/v1/namespaces/{ns}/configmaps"
                status, obj = await self.call("POST", path, cm(ns, name, data))
                assert status == 201, (status, obj)
                rvs[name] = obj["metadata"]["resourceVersion"]

        await asyncio.gather(*(one(n) for n in names))
        return rvs


# -- wrk --------------------------------------------------------------------------------------

LUA_REPORT = r"""
n2xx, n409, nother = 0, 0, 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
local function count(status)
  if status >= 200 and status < 300 then n2xx = n2xx + 1
  elseif status == 409 then n409 = n409 + 1
  else nother = nother + 1 end
end
function done(summary, latency, requests)
  local a, b, c = 0, 0, 0
  for _, t in ipairs(threads) do
    a = a + t:get("n2xx"); b = b + t:get("n409"); c = c + t:get("nother")
  end
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"n2xx":%d,"n409":%d,"nother":%d,' ..
    '"socket_errors":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
    summary.requests, summary.duration, a, b, c,
    e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
"""

# PUT with the resourceVersion of the previous response for the same object. wrk gives no
# connection id, but with one request in flight per connection a free list of names works: a
# response returns its object's name (with the new resourceVersion) to the list, and wrk asks
# for that connection's next request only after handling its response.
LUA_CAS_PUT = (
    LUA_REPORT
    + r"""
local free, rvs, seq, n, verified = {}, {}, 0, 0, false
local token, ns, payload
function init(args)
  token, ns, payload = args[1], args[2], args[3]
  for line in io.lines(args[4]) do
    local name, rv = line:match("(%S+) (%S+)")
    rvs[name] = rv; n = n + 1; free[n] = name
  end
end
function request()
  local name
  if not verified then  -- wrk's own check of the script calls request() once: take nothing
    verified = true
    name = next(rvs)
  elseif n > 0 then name = free[n]; free[n] = nil; n = n - 1
  else name = next(rvs) end
  seq = seq + 1
  local body = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"' .. name ..
    '","namespace":"' .. ns .. '","resourceVersion":"' .. rvs[name] ..
    '"},"data":{"seq":"' .. seq .. '","payload":"' .. payload .. '"}}'
  return wrk.format("PUT", "/api/v1/namespaces/" .. ns .. "/configmaps/" .. name,
    {["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json"}, body)
end
function response(status, headers, body)
  count(status)
  local name = body:match('"name":"(cas%-%d+)"')
  local rv = body:match('"resourceVersion":"(%d+)"')
  if name and rvs[name] then
    if rv and status < 300 then rvs[name] = rv end
    n = n + 1; free[n] = name
  end
end
"""
)

# A fixed request (GET by name, or PUT with a stale resourceVersion).
LUA_STATIC = (
    LUA_REPORT
    + r"""
function init(args)
  wrk.method = args[2]
  wrk.path = args[3]
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  if args[4] and args[4] ~= "" then
    wrk.headers["Content-Type"] = "application/json"
    wrk.body = args[4]
  end
end
function response(status, headers, body) count(status) end
"""
)


@dataclass
class WrkResult:
    rate: float  # responses/s
    n2xx: int
    n409: int
    nother: int
    socket_errors: int
    p50_ms: float
    p99_ms: float


def wrk(url: str, script: Path, seconds: int, args: list[str]) -> WrkResult:
    cmd = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--timeout", "10s", "-s"]
    cmd += [str(script), url, "--", *args]
    out = subprocess.run(
        cmd, capture_output=True, text=True, timeout=seconds + 60, preexec_fn=lambda: pin(1)
    )
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("WRKJSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk failed: {out.stdout}\n{out.stderr}")
    r = json.loads(line.removeprefix("WRKJSON "))
    return WrkResult(
        r["requests"] / (r["duration_us"] / 1e6),
        r["n2xx"],
        r["n409"],
        r["nother"],
        r["socket_errors"],
        r["p50_us"] / 1000,
        r["p99_us"] / 1000,
    )


# -- paced PUT latency ----------------------------------------------------------------------------


async def paced_puts(proc: Proc, seconds: float, rate: float) -> dict[str, float]:
    keys = [f"paced-{i}" for i in range(CONNECTIONS)]
    async with Api(proc) as api:
        rvs = await api.create_many(NS_PUT, keys, {"payload": PAYLOAD})
        free: asyncio.Queue[str] = asyncio.Queue()
        for k in keys:
            free.put_nowait(k)
        scheduled: list[float] = []  # latency from the scheduled send time
        service: list[float] = []  # latency from the actual send
        bad = 0

        async def one(name: str, due: float, seq: int) -> None:
            nonlocal bad
            sent = time.perf_counter()
            path = f"/api/v1/namespaces/{NS_PUT}/configmaps/{name}"
            body = cm(NS_PUT, name, {"seq": str(seq), "payload": PAYLOAD}, rvs[name])
            status, obj = await api.call("PUT", path, body)
            end = time.perf_counter()
            if status == 200:
                rvs[name] = obj["metadata"]["resourceVersion"]
            else:
                bad += 1
            scheduled.append(end - due)
            service.append(end - sent)
            free.put_nowait(name)

        n = int(seconds * rate)
        tasks = []
        start = time.perf_counter() + 0.2  # uvloop's loop.time() has only 1 ms resolution
        for i in range(n):
            due = start + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            name = await free.get()
            tasks.append(asyncio.ensure_future(one(name, due, i)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
    ms = [x * 1000 for x in scheduled]
    sv = [x * 1000 for x in service]
    return {
        "requests": n,
        "achieved_rate": n / elapsed,
        "non_200": bad,
        "p50_ms": pct(ms, 0.5),
        "p99_ms": pct(ms, 0.99),
        "max_ms": max(ms),
        "service_p50_ms": pct(sv, 0.5),
        "service_p99_ms": pct(sv, 0.99),
    }


# -- LIST ---------------------------------------------------------------------------------------


async def list_bench(proc: Proc, count: int, reps: int) -> dict[str, float]:
    async with Api(proc) as api:
        await api.namespace(NS_LIST)
        t0 = time.perf_counter()
        names = [f"item-{i:05d}" for i in range(count)]
        await api.create_many(NS_LIST, names, {"payload": SMALL_PAYLOAD})
        create_rate = count / (time.perf_counter() - t0)
        base = f"/api/v1/namespaces/{NS_LIST}/configmaps"
        # every namespace also holds kube-root-ca.crt, which the root CA publisher writes
        for _ in range(500):
            if (await api.call("GET", f"{base}/kube-root-ca.crt"))[0] == 200:
                break
            await asyncio.sleep(0.02)
        total = count + 1

        async def full() -> float:
            t = time.perf_counter()
            status, body = await api.call("GET", base)
            assert status == 200, status
            assert len(body["items"]) == total
            return time.perf_counter() - t

        async def paged() -> float:
            t = time.perf_counter()
            got, token = 0, ""
            for _ in range(count // 500 + 2):
                q = f"?limit=500&continue={token}" if token else "?limit=500"
                status, body = await api.call("GET", base + q)
                assert status == 200, status
                got += len(body["items"])
                token = body["metadata"].get("continue", "")
                if not token:
                    break
            assert got == total, got
            return time.perf_counter() - t

        async def as_table() -> float:
            t = time.perf_counter()
            status, body = await api.call("GET", base, headers={"Accept": TABLE_ACCEPT})
            assert status == 200, status
            assert len(body["rows"]) == total
            return time.perf_counter() - t

        full_s = [await full() for _ in range(reps)]
        paged_s = [await paged() for _ in range(reps)]
        table_s = [await as_table() for _ in range(reps)]
    kubectl_s: list[float] = []
    if Path(KUBECTL).exists():
        env = {**os.environ, "KUBECONFIG": str(proc.data_dir / "kubeconfig")}
        for _ in range(3):
            t = time.perf_counter()
            subprocess.run(  # noqa: ASYNC221 - nothing else runs on this loop meanwhile
                [KUBECTL, "get", "cm", "-n", NS_LIST, "--chunk-size=0"],
                env=env,
                check=True,
                stdout=subprocess.DEVNULL,
                timeout=300,
            )
            kubectl_s.append(time.perf_counter() - t)
    return {
        "objects": count,
        "create_per_s": create_rate,
        "full_ms": statistics.median(full_s) * 1000,
        "paged_500_ms": statistics.median(paged_s) * 1000,
        "table_ms": statistics.median(table_s) * 1000,
        "kubectl_get_ms": statistics.median(kubectl_s) * 1000 if kubectl_s else float("nan"),
    }


# -- watch fan-out --------------------------------------------------------------------------------

SEQ_RE = re.compile(rb'"seq":"(\d+)"')
T_RE = re.compile(rb'"t":"([0-9.]+)"')
RV_RE = re.compile(rb'"resourceVersion":"(\d+)"')


@dataclass
class Watcher:
    seqs: list[int] = field(default_factory=list)
    rvs: list[int] = field(default_factory=list)
    lat: list[float] = field(default_factory=list)
    last: float = 0.0
    ended: bool = False


async def watch_bench(proc: Proc, watchers: int, burst: int, paced_s: float, rate: float) -> Any:
    writers = 8
    paced_n = int(paced_s * rate)
    total = burst + paced_n
    async with Api(proc) as api:
        await api.namespace(NS_WATCH)
        keys = [f"w-{i}" for i in range(writers)]
        rvs = await api.create_many(NS_WATCH, keys, {"seq": "0", "t": "0"})
        start_rv = max(rvs.values(), key=int)
        host, port = proc.host_port
        ctx = ssl_context(proc.data_dir)
        path = f"/api/v1/namespaces/{NS_WATCH}/configmaps?watch=1&resourceVersion={start_rv}"
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            f"Authorization: Bearer {proc.token}\r\nAccept: application/json\r\n\r\n"
        ).encode()
        state = [Watcher() for _ in range(watchers)]
        connected = 0
        all_connected = asyncio.Event()

        async def watch(w: Watcher) -> None:
            nonlocal connected
            reader, writer = await asyncio.open_connection(host, port, ssl=ctx, limit=1 << 20)
            try:
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                assert b" 200 " in head.split(b"\r\n", 1)[0], head
                connected += 1
                if connected == watchers:
                    all_connected.set()
                buf = b""
                while len(w.seqs) < total:
                    data = await reader.read(1 << 16)
                    if not data:
                        w.ended = True
                        return
                    now = time.time()
                    *lines, buf = (buf + data).split(b"\n")
                    for line in lines:
                        if line.startswith(b'{"type"'):
                            m, t = SEQ_RE.search(line), T_RE.search(line)
                            assert m, line[:200]
                            assert t, line[:200]
                            w.seqs.append(int(m.group(1)))
                            r = RV_RE.search(line)
                            w.rvs.append(int(r.group(1)) if r else 0)
                            w.lat.append(now - float(t.group(1)))
                    w.last = now
            finally:
                writer.close()

        tasks = [asyncio.ensure_future(watch(w)) for w in state]
        await asyncio.wait_for(all_connected.wait(), 120)
        await asyncio.sleep(0.5)
        seq = 0
        put_ms: list[float] = []  # the paced writer's own PUTs: part of every event's latency

        async def put(name: str) -> None:
            nonlocal seq
            seq += 1
            sent = time.time()
            body = cm(NS_WATCH, name, {"seq": str(seq), "t": repr(sent)}, rvs[name])
            status, obj = await api.call(
                "PUT", f"/api/v1/namespaces/{NS_WATCH}/configmaps/{name}", body
            )
            assert status == 200, (status, obj)
            rvs[name] = obj["metadata"]["resourceVersion"]
            put_ms.append((time.time() - sent) * 1000)

        async def burst_writer(name: str, n: int) -> None:
            for _ in range(n):
                await put(name)

        cpu0, t0 = time.process_time(), time.time()
        share = [burst // writers + (1 if i < burst % writers else 0) for i in range(writers)]
        await asyncio.gather(*(burst_writer(k, n) for k, n in zip(keys, share, strict=True)))
        write_end = time.time()
        for _ in range(6000):  # wait (bounded) until every watcher has the burst
            if all(len(w.seqs) >= burst or w.ended for w in state):
                break
            await asyncio.sleep(0.01)
        burst_end = max(w.last for w in state)
        burst_cpu = time.process_time() - cpu0
        burst_lat = [x for w in state for x in w.lat[:burst]]
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.1
        put_ms.clear()
        for i in range(paced_n):
            delay = start + i / rate - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await put(keys[i % writers])
        await asyncio.wait(tasks, timeout=60)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    paced_lat = [x * 1000 for w in state for x in w.lat[burst:]]
    complete = sum(1 for w in state if sorted(w.seqs) == list(range(1, total + 1)))
    in_order = sum(1 for w in state if all(a < b for a, b in itertools.pairwise(w.rvs)))
    return {
        "watchers": watchers,
        "burst_events": burst,
        "burst_write_per_s": burst / (write_end - t0),
        "burst_delivered_per_s": watchers * burst / (burst_end - t0),
        "burst_client_cpu_share": burst_cpu / (burst_end - t0),
        "burst_p99_ms": pct([x * 1000 for x in burst_lat], 0.99),
        "paced_events": paced_n,
        "paced_rate": rate,
        "paced_p50_ms": pct(paced_lat, 0.5),
        "paced_p99_ms": pct(paced_lat, 0.99),
        "paced_max_ms": max(paced_lat) if paced_lat else float("nan"),
        "paced_put_p50_ms": pct(put_ms, 0.5),
        "paced_put_p99_ms": pct(put_ms, 0.99),
        "watchers_complete": complete,
        "watchers_in_order": in_order,
        "watchers_ended_early": sum(1 for w in state if w.ended),
    }


# -- start-up and RSS -----------------------------------------------------------------------------


def startup_times(base: Path, runs: int) -> dict[str, float]:
    fresh: list[float] = []
    restart: list[float] = []
    for i in range(runs):
        data_dir = base / f"startup-{i}" / "data"
        for times in (fresh, restart):  # first start makes the CA, token and database
            t0 = time.perf_counter()
            proc = start_kubelite(data_dir)
            wait_ready(proc)
            times.append(time.perf_counter() - t0)
            proc.stop()
    return {
        "fresh_ms": statistics.median(fresh) * 1000,
        "restart_ms": statistics.median(restart) * 1000,
        "fresh_min_ms": min(fresh) * 1000,
        "restart_min_ms": min(restart) * 1000,
    }


async def fill_store(data_dir: Path, count: int) -> None:
    """Writes ``count`` ConfigMaps into ``default`` the way the registry stores them."""
    from kubelite.api.catalogue import load_builtin_catalogue
    from kubelite.api.encoding.stored import encode
    from kubelite.storage import open_store

    info = load_builtin_catalogue().lookup("", "v1", "configmaps")
    assert info is not None
    data_dir.mkdir(parents=True, exist_ok=True)
    async with await open_store(f"sqlite://{data_dir}/state.db") as store:
        for first in range(0, count, 2000):
            objs = []
            for i in range(first, min(count, first + 2000)):
                obj = cm("default", f"rss-{i:06d}", {"payload": SMALL_PAYLOAD})
                obj["metadata"]["uid"] = str(uuid.uuid4())
                obj["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
                objs.append(obj)
            await asyncio.gather(
                *(
                    store.create(
                        f"/registry/configmaps/default/{o['metadata']['name']}", encode(o, info)
                    )
                    for o in objs
                )
            )


def rss_bench(base: Path, count: int) -> dict[str, float]:
    data_dir = base / "rss" / "data"
    t0 = time.perf_counter()
    uvloop.run(fill_store(data_dir, count))
    fill_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    proc = start_kubelite(data_dir)
    try:
        wait_ready(proc)
        ready_s = time.perf_counter() - t0
        idle = proc.status("VmHWM")

        async def list_all() -> float:
            async with Api(proc) as api:
                t = time.perf_counter()
                status, body = await api.call("GET", "/api/v1/namespaces/default/configmaps")
                assert status == 200, status
                assert len(body["items"]) == count + 1  # and kube-root-ca.crt
                return time.perf_counter() - t

        list_s = uvloop.run(list_all())
        return {
            "objects": count,
            "fill_s": fill_s,
            "ready_ms": ready_s * 1000,
            "hwm_after_start_mib": idle / 1024,
            "full_list_ms": list_s * 1000,
            "hwm_after_list_mib": proc.status("VmHWM") / 1024,
            "rss_after_list_mib": proc.status("VmRSS") / 1024,
        }
    finally:
        proc.stop()


# -- the run --------------------------------------------------------------------------------------


@contextmanager
def workdir(parent: str | None) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="kubelite-api-bench-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def throughput(base: Path, sizes: Sizes) -> dict[str, Any]:
    data_dir = base / "main" / "data"
    kl = start_kubelite(data_dir)
    echo = start_echo(data_dir)
    try:
        wait_ready(kl)
        wait_ready(echo)
        names = [f"cas-{i}" for i in range(CONNECTIONS)]

        async def setup() -> dict[str, str]:
            async with Api(kl) as api:
                await api.namespace(NS_PUT)
                return await api.create_many(NS_PUT, names, {"payload": PAYLOAD})

        rvs = uvloop.run(setup())
        cas, static = base / "cas_put.lua", base / "static.lua"
        cas.write_text(LUA_CAS_PUT)
        static.write_text(LUA_STATIC)
        rv_file = base / "rvs.txt"
        obj_path = f"/api/v1/namespaces/{NS_PUT}/configmaps/cas-0"
        stale = json.dumps(cm(NS_PUT, "cas-0", {"payload": PAYLOAD}, "1"), separators=(",", ":"))
        figures: dict[str, list[WrkResult]] = {
            k: [] for k in ("kubelite_put", "echo_put", "kubelite_get", "echo_get", "kubelite_409")
        }

        def cas_run(proc: Proc, key: str) -> None:
            rv_file.write_text("".join(f"{n} {rvs[n]}\n" for n in names))
            r = wrk(proc.url, cas, sizes.wrk_seconds, [kl.token, NS_PUT, PAYLOAD, str(rv_file)])
            figures[key].append(r)

        wrk(kl.url, static, 1, [kl.token, "GET", obj_path, ""])  # warm-up
        wrk(echo.url, static, 1, [kl.token, "GET", obj_path, ""])
        for rnd in range(sizes.rounds):
            log(f"wrk round {rnd + 1}/{sizes.rounds}")
            uvloop.run(refresh_rvs(kl, names, rvs))
            cas_run(kl, "kubelite_put")
            cas_run(echo, "echo_put")
            for proc, key in ((kl, "kubelite_get"), (echo, "echo_get")):
                r = wrk(proc.url, static, sizes.wrk_seconds, [kl.token, "GET", obj_path, ""])
                figures[key].append(r)
            r = wrk(kl.url, static, sizes.wrk_seconds, [kl.token, "PUT", obj_path, stale])
            figures["kubelite_409"].append(r)
        log("paced PUTs")
        paced = uvloop.run(paced_puts(kl, sizes.paced_seconds, sizes.paced_rate))
        log("LIST")
        listing = uvloop.run(list_bench(kl, sizes.list_objects, 5 if sizes.rounds > 1 else 2))
        log("watch fan-out")
        watch = uvloop.run(
            watch_bench(
                kl, sizes.watchers, sizes.watch_burst, sizes.watch_paced_seconds, sizes.watch_rate
            )
        )
    finally:
        kl.stop()
        echo.stop()
    return {"wrk": figures, "paced": paced, "list": listing, "watch": watch}


def cas_args(
    proc: Proc, names: list[str], rvs: dict[str, str], rv_file: Path, token: str = ""
) -> list[str]:
    """wrk's arguments for ``LUA_CAS_PUT`` on the ConfigMaps ``names`` of ``NS_PUT``: their
    resourceVersions read afresh into ``rvs`` and ``rv_file``; ``token`` (default the admin's)
    makes the requests."""
    uvloop.run(refresh_rvs(proc, names, rvs))
    rv_file.write_text("".join(f"{n} {rvs[n]}\n" for n in names))
    return [token or proc.token, NS_PUT, PAYLOAD, str(rv_file)]


async def refresh_rvs(proc: Proc, names: list[str], rvs: dict[str, str]) -> None:
    async with Api(proc) as api:
        for n in names:
            status, obj = await api.call("GET", f"/api/v1/namespaces/{NS_PUT}/configmaps/{n}")
            assert status == 200, status
            rvs[n] = obj["metadata"]["resourceVersion"]


def summarize(results: dict[str, Any]) -> dict[str, Any]:
    med: dict[str, Any] = {}
    for key, runs in results["wrk"].items():
        med[key] = {
            "rate_median": statistics.median(r.rate for r in runs),
            "rates": [round(r.rate) for r in runs],
            "p99_ms_median": statistics.median(r.p99_ms for r in runs),
            "n2xx": sum(r.n2xx for r in runs),
            "n409": sum(r.n409 for r in runs),
            "nother": sum(r.nother for r in runs),
            "socket_errors": sum(r.socket_errors for r in runs),
        }
    put_ratio = med["kubelite_put"]["rate_median"] / med["echo_put"]["rate_median"]
    per_round = [
        k.rate / e.rate
        for k, e in zip(results["wrk"]["kubelite_put"], results["wrk"]["echo_put"], strict=True)
    ]
    get_ratio = med["kubelite_get"]["rate_median"] / med["echo_get"]["rate_median"]
    return {
        "wrk": med,
        "put_ratio": put_ratio,
        "put_ratio_per_round": per_round,
        "get_ratio": get_ratio,
        "put_ratio_pass": put_ratio >= TARGET_RATIO,
        "p99_pass": results["paced"]["p99_ms"] < TARGET_P99_MS,
    }


def report(out: dict[str, Any]) -> str:
    s, w = out["summary"], out["summary"]["wrk"]
    lines = [f"kubelite API server benchmark ({out['mode']}, {out['machine']})", ""]
    lines.append(f"wrk, {CONNECTIONS} connections, {out['sizes']['wrk_seconds']} s per run")
    lines.append(f"{'figure':<38}{'median/s':>10}  {'p99 ms':>7}  runs")
    labels = {
        "kubelite_put": "kubelite PUT (CAS, 200)",
        "echo_put": "echo PUT (ceiling)",
        "kubelite_get": "kubelite GET by name",
        "echo_get": "echo GET (ceiling)",
        "kubelite_409": "kubelite PUT stale rv (409)",
    }
    for key, label in labels.items():
        f = w[key]
        lines.append(
            f"{label:<38}{f['rate_median']:>10,.0f}  {f['p99_ms_median']:>7.1f}  {f['rates']}"
        )
    k = w["kubelite_put"]
    lines.append(
        f"kubelite PUT statuses: 2xx {k['n2xx']}, 409 {k['n409']}, other {k['nother']}, "
        f"socket errors {k['socket_errors']}; 409 run: 409 {w['kubelite_409']['n409']}, "
        f"other {w['kubelite_409']['n2xx'] + w['kubelite_409']['nother']}"
    )
    verdict = "PASS" if s["put_ratio_pass"] else "MISS"
    rounds = ", ".join(f"{x:.2f}" for x in s["put_ratio_per_round"])
    lines.append(
        f"PUT ratio kubelite/echo: {s['put_ratio']:.2f} (rounds {rounds}); target >= "
        f"{TARGET_RATIO}: {verdict}"
    )
    lines.append(f"GET ratio kubelite/echo: {s['get_ratio']:.2f}")
    p = out["paced"]
    verdict = "PASS" if s["p99_pass"] else "MISS"
    lines += [
        "",
        f"paced PUT at {out['sizes']['paced_rate']:.0f}/s for {out['sizes']['paced_seconds']} s "
        f"(achieved {p['achieved_rate']:.0f}/s, non-200 {p['non_200']}): p50 {p['p50_ms']:.1f} ms"
        f", p99 {p['p99_ms']:.1f} ms, max {p['max_ms']:.1f} ms (from the actual send: p50 "
        f"{p['service_p50_ms']:.1f}, p99 {p['service_p99_ms']:.1f}); target p99 < "
        f"{TARGET_P99_MS:.0f} ms: {verdict}",
    ]
    li = out["list"]
    lines += [
        "",
        f"LIST {li['objects']:,} ConfigMaps (created at {li['create_per_s']:,.0f}/s): whole "
        f"{li['full_ms']:.0f} ms, limit=500 pages {li['paged_500_ms']:.0f} ms, Table "
        f"{li['table_ms']:.0f} ms, kubectl get cm {li['kubectl_get_ms']:.0f} ms",
    ]
    wa = out["watch"]
    lines += [
        "",
        f"watch fan-out, {wa['watchers']} watchers: burst of {wa['burst_events']} updates "
        f"(written at {wa['burst_write_per_s']:,.0f}/s) delivered at "
        f"{wa['burst_delivered_per_s']:,.0f} events/s (client CPU "
        f"{wa['burst_client_cpu_share']:.0%}, p99 {wa['burst_p99_ms']:.0f} ms); at "
        f"{wa['paced_rate']:.0f} updates/s: p50 "
        f"{wa['paced_p50_ms']:.1f} ms, p99 {wa['paced_p99_ms']:.1f} ms, max "
        f"{wa['paced_max_ms']:.1f} ms (the writer's own PUT: p50 {wa['paced_put_p50_ms']:.1f} "
        f"ms, p99 {wa['paced_put_p99_ms']:.1f} ms); complete "
        f"{wa['watchers_complete']}/{wa['watchers']}, in "
        f"order {wa['watchers_in_order']}, ended early {wa['watchers_ended_early']}",
    ]
    st, r = out["startup"], out["rss"]
    lines += [
        "",
        f"start-up to /readyz 200 (median): fresh data dir {st['fresh_ms']:.0f} ms, restart "
        f"{st['restart_ms']:.0f} ms",
        f"RSS with {r['objects']:,} ConfigMaps: ready in {r['ready_ms']:.0f} ms, VmHWM after "
        f"start {r['hwm_after_start_mib']:.0f} MiB, full LIST {r['full_list_ms']:.0f} ms, VmHWM "
        f"after it {r['hwm_after_list_mib']:.0f} MiB (VmRSS {r['rss_after_list_mib']:.0f} MiB)",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description="kubelite API server benchmark")
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--dir", default=None, help="parent of the data dirs (a real disk)")
    parser.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="pass ARG to kubelite serve (repeat; --serve-arg=--no-metrics)",
    )
    args = parser.parse_args()
    SERVE_ARGS.extend(args.serve_arg)
    if shutil.which("wrk") is None:
        print("wrk not found: apt-get install -y wrk", file=sys.stderr)
        return 2
    sizes = QUICK if args.quick else Sizes()
    pin(CLIENT_CPU)
    machine = f"{os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}"
    with workdir(args.dir) as base:
        results = throughput(base, sizes)
        log("start-up")
        results["startup"] = startup_times(base, sizes.startup_runs)
        log("RSS")
        results["rss"] = rss_bench(base, sizes.rss_objects)
    results["summary"] = summarize(results)
    results["wrk"] = {k: [asdict(r) for r in v] for k, v in results["wrk"].items()}
    results["sizes"] = asdict(sizes)
    results["mode"] = "quick" if args.quick else "full"
    results["machine"] = machine
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
