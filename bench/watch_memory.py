"""What an idle watch costs the server in memory, and what it leaves behind once closed.

A fresh ``kubelite serve`` (a subprocess, on a temporary data directory) gets ``--objects``
ConfigMaps (1 KiB of data each) in one namespace; then, for each of ``--rounds`` rounds,
``--watches`` kube-style watches of that namespace's ConfigMaps (``?watch=1``: each first gets
an ADDED per object) are opened, each on its own TLS connection, read up to their initial
events and then left idle; then all are closed (the client drops its connections, as a killed
informer does). The server's resident set (``VmRSS``) is read before, with the watches open and
after they closed (once the server counts no watch in flight); printed: bytes per idle watch and
what stayed after the close, per round.

``--baseline DIR`` measures the kubelite source in DIR first (its ``src`` goes first on the
server's PYTHONPATH, e.g. another checkout), then this one, and prints the ratios.

``--tracemalloc`` runs the server with tracemalloc on (this script's ``--traced-serve``: the
same server, started from here) and prints where the Python allocations made while the watches
were open went, by line, after the first round's opening and after its close.

    .venv/bin/python bench/watch_memory.py [--watches 1000] [--baseline /work/main]

Needs ~2 file descriptors per watch (client and server): raised to the hard limit here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAMESPACE = "watchmem"
CMS = f"/api/v1/namespaces/{NAMESPACE}/configmaps"


class Served:
    """A ``kubelite serve --port 0`` subprocess of the given source tree (None: this one)."""

    def __init__(self, source: Path | None, traced: bool) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="watchmem-"))
        self.snapshots = self.dir / "snapshots"
        env = dict(os.environ)
        if source is not None:
            env["PYTHONPATH"] = str(source / "src")
        data = self.dir / "data"
        serve = ["serve", "--port", "0", "--data-dir", str(data)]
        if traced:
            args = [sys.executable, __file__, "--traced-serve", str(self.snapshots), *serve]
        else:
            args = [sys.executable, "-m", "kubelite", *serve]
        self.process = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=(self.dir / "log").open("w"), text=True, env=env
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith("kubelite serving on "), (self.dir / "log").read_text()
        self.port = int(line.rsplit(":", 1)[1])
        self.token = (data / "token").read_text().strip()
        self.context = ssl.create_default_context(cafile=str(data / "ca.crt"))

    def rss(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def snapshot(self, name: str) -> Path:
        """Have the traced server write a tracemalloc snapshot (``--tracemalloc``)."""
        path = self.snapshots / f"{name}.snapshot"
        self.snapshots.mkdir(exist_ok=True)
        (self.snapshots / "next").write_text(str(path))
        self.process.send_signal(signal.SIGUSR1)
        for _ in range(600):
            if path.exists() and not (self.snapshots / "next").exists():
                return path
            time.sleep(0.1)
        raise RuntimeError("no snapshot")

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port, ssl=self.context)

    async def request(self, method: str, path: str, body: object = None) -> tuple[int, bytes]:
        reader, writer = await self.connect()
        data = b"" if body is None else json.dumps(body).encode()
        writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {self.token}"
            f"\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + data
        )
        response = await reader.read()
        writer.close()
        return int(response.split(b" ", 2)[1]), response.partition(b"\r\n\r\n")[2]

    async def watches_in_flight(self) -> float:
        _, body = await self.request("GET", "/metrics")
        total = 0.0
        for line in body.decode(errors="replace").splitlines():
            if line.startswith("apiserver_longrunning_requests{") and 'verb="WATCH"' in line:
                total += float(line.rsplit(" ", 1)[1])
        return total

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


async def open_watch(served: Served, objects: int) -> asyncio.StreamWriter:
    """A watch read up to its ``objects`` initial ADDED events, then left idle."""
    reader, writer = await served.connect()
    writer.write(
        f"GET {CMS}?watch=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {served.token}\r\n\r\n".encode()
    )
    line = await asyncio.wait_for(reader.readline(), 60)
    assert line.startswith(b"HTTP/1.1 200"), line
    received = 0
    while received < objects:  # chunked: size lines, and event lines ending in "}\n"
        line = await asyncio.wait_for(reader.readline(), 60)
        received += line.count(b'"type":"ADDED"')
    return writer


async def settle(served: Served, seconds: float = 2.0) -> int:
    """The server's RSS once it has stopped moving (the loop has caught up)."""
    await asyncio.sleep(seconds)
    return served.rss()


async def round_(served: Served, watches: int, objects: int) -> tuple[int, int, int]:
    """RSS before, with ``watches`` open, and after they closed."""
    before = await settle(served)
    writers: list[asyncio.StreamWriter] = []
    gate = asyncio.Semaphore(32)

    async def one() -> None:
        async with gate:
            writers.append(await open_watch(served, objects))

    await asyncio.gather(*(one() for _ in range(watches)))
    assert await served.watches_in_flight() >= watches
    opened = await settle(served)
    for writer in writers:
        writer.transport.abort()
    writers.clear()
    for _ in range(300):
        if await served.watches_in_flight() == 0:
            break
        await asyncio.sleep(0.1)
    else:
        raise RuntimeError("the server still counts watches in flight")
    closed = await settle(served)
    return before, opened, closed


async def measure(
    source: Path | None, watches: int, objects: int, rounds: int, traced: bool
) -> list[tuple[int, int, int]]:
    served = Served(source, traced)
    try:
        status, body = await served.request(
            "POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}
        )
        assert status == 201, body
        for i in range(objects):
            cm = {"metadata": {"name": f"cm-{i}"}, "data": {"value": "x" * 1024}}
            status, body = await served.request("POST", CMS, cm)
            assert status == 201, body
        # one watch first, so that the kind's watch cache and the server's first-use allocations
        # are not counted as the watches'
        first = await open_watch(served, objects)
        first.transport.abort()
        results = []
        for number in range(rounds):
            if traced and number == 0:
                results.append(await traced_round(served, watches, objects))
            else:
                results.append(await round_(served, watches, objects))
        return results
    finally:
        served.stop()


async def traced_round(served: Served, watches: int, objects: int) -> tuple[int, int, int]:
    import tracemalloc

    await settle(served)
    start = tracemalloc.Snapshot.load(str(served.snapshot("start")))
    task = asyncio.ensure_future(round_(served, watches, objects))
    while served.rss() and not task.done():  # snapshot once the watches are all open
        if await served.watches_in_flight() >= watches:
            await asyncio.sleep(2)
            break
        await asyncio.sleep(0.5)
    opened = tracemalloc.Snapshot.load(str(served.snapshot("opened")))
    result = await task
    closed = tracemalloc.Snapshot.load(str(served.snapshot("closed")))
    collected = tracemalloc.Snapshot.load(str(served.snapshot("collected")))
    snaps = (("open", opened), ("after close", closed), ("after close and gc.collect()", collected))
    for title, snap in snaps:
        stats = snap.compare_to(start, "traceback")
        total = sum(s.size_diff for s in stats)
        print(f"  tracemalloc, {title}: {total / watches:,.0f} B per watch; top allocations:")
        for stat in stats[:10]:
            # the line that allocated, and the innermost kubelite line that led there
            frames = [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno}" for f in stat.traceback]
            ours = [
                f"{f.filename.rsplit('/src/', 1)[-1]}:{f.lineno}"
                for f in reversed(stat.traceback)  # innermost first
                if "kubelite" in f.filename
            ]
            print(
                f"    {stat.size_diff / watches:>9,.0f} B/watch {stat.count_diff:>+8} blocks  "
                f"{frames[-1]}" + (f" <- {ours[0]}" if ours and ours[0] not in frames[-1] else "")
            )
    garbage = json.loads((served.snapshots / "garbage").read_text())
    print("  left to the cycle collector after close, per watch:")
    print("    " + ", ".join(f"{kind} {count / watches:.1f}" for kind, count in garbage))
    return result


def traced_serve(snapshots: Path, args: list[str]) -> None:
    """``kubelite serve`` in this process with tracemalloc on; SIGUSR1 writes a snapshot to the
    path the file ``snapshots/next`` names."""
    import collections
    import gc
    import tracemalloc

    from kubelite.cli import main as cli_main

    tracemalloc.start(16)

    def write(signum: int, frame: Any) -> None:
        order = snapshots / "next"
        path = Path(order.read_text())
        if path.stem == "collected":  # what only the cycle collector frees: by type
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            kinds = collections.Counter(type(o).__qualname__ for o in gc.garbage)
            (snapshots / "garbage").write_text(json.dumps(kinds.most_common(25)))
            gc.set_debug(0)
            gc.garbage.clear()
            gc.collect()
        tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        ).dump(str(path))
        order.unlink()

    signal.signal(signal.SIGUSR1, write)
    sys.exit(cli_main(args))


def report(label: str, results: list[tuple[int, int, int]], watches: int) -> list[float]:
    per_watch = []
    for number, (before, opened, closed) in enumerate(results, 1):
        each = (opened - before) / watches
        per_watch.append(each)
        print(
            f"{label} round {number}: RSS {before / 2**20:.1f} MiB before, "
            f"{opened / 2**20:.1f} MiB with {watches} watches open "
            f"({each:,.0f} B per idle watch), {closed / 2**20:.1f} MiB after close "
            f"({(closed - before) / 2**20:+.1f} MiB retained, "
            f"{(closed - before) / watches:,.0f} B per closed watch)"
        )
    return per_watch


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--traced-serve":
        traced_serve(Path(sys.argv[2]), sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--watches", type=int, default=1000)
    parser.add_argument("--objects", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another kubelite checkout, measured first")
    parser.add_argument("--tracemalloc", action="store_true")
    options = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sources: list[tuple[str, Path | None]] = [("this checkout", None)]
    if options.baseline is not None:
        sources.insert(0, (f"baseline {options.baseline}", options.baseline))
    figures = []
    for label, source in sources:
        results = asyncio.run(
            measure(source, options.watches, options.objects, options.rounds, options.tracemalloc)
        )
        figures.append(report(label, results, options.watches))
    if len(figures) == 2:
        for number, (old, new) in enumerate(zip(*figures, strict=True), 1):
            with contextlib.suppress(ZeroDivisionError):
                print(f"round {number}: {new / old:.2f}x the baseline's bytes per idle watch")


if __name__ == "__main__":
    main()
