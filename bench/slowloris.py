"""Slow and oversized clients on every listener of ``kubelite serve``, with kube's real limits.

For each port (the main port and the client-certificate port) of a fresh server:

* **slowloris**: ``--connections`` TLS connections (300) each send a request line and one more
  header line every 10 s, never ending the headers; printed: how many are still open after
  ``--at`` seconds (45; kube-apiserver drops them at its 32 s ReadHeaderTimeout);
* **close times** (``--close-times``, instead of the rest): when the server closes a plain
  TCP connection, a TLS connection that sends nothing, one whose headers never end, and a
  kept-alive one, idle or with a later request's headers that never end;
* **header floods**: the answer to one 16 MiB header, and to 100,000 headers;
* **descriptors**: on a server started with an open-file limit of ``--open-files`` (1,024),
  ``--flood`` connections (1,500) whose headers never end are opened to one port, one at a time
  and then all at once; printed: how many the port took, and whether a GET on each port is
  answered within 10 s, during the flood and 15 s after it.

``--baseline DIR`` runs the same first against the kubelite source in DIR (e.g. a ``git
archive`` of main unpacked there: its ``src`` goes first on the servers' PYTHONPATH).

    .venv/bin/python bench/slowloris.py [--baseline /tmp/main-src]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

CMS = "/api/v1/namespaces/default/configmaps"


class Served:
    """A ``kubelite serve --port 0`` subprocess of the given source tree."""

    def __init__(self, source: Path | None, open_files: int | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="slowloris-"))
        env = dict(os.environ)
        if source is not None:
            env["PYTHONPATH"] = str(source / "src")

        def limit() -> None:
            if open_files is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

        self.process = subprocess.Popen(
            [sys.executable, "-m", "kubelite", "serve", "--port", "0", "--data-dir",
             str(self.dir / "data")],
            stdout=subprocess.PIPE, stderr=(self.dir / "log").open("w"), text=True, env=env,
            preexec_fn=limit,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line.startswith("kubelite serving on "), (self.dir / "log").read_text()
        data = self.dir / "data"
        self.token = (data / "token").read_text().strip()
        self.ports = {
            "main": int(line.rsplit(":", 1)[1]),
            "client-cert": int((data / "client-cert-server").read_text().rsplit(":", 1)[1]),
        }
        self.context = ssl.create_default_context(cafile=str(data / "ca.crt"))

    async def connect(
        self, port: int, handshake_seconds: float = 60
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(
            "127.0.0.1", port, ssl=self.context, ssl_handshake_timeout=handshake_seconds
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


async def until_closed(reader: asyncio.StreamReader) -> bytes:
    received = b""
    with contextlib.suppress(ConnectionError, ssl.SSLError):
        while chunk := await reader.read(65536):
            received += chunk
    return received


async def slowloris(served: Served, port: int, connections: int, at: float) -> int:
    """How many of ``connections`` slowloris connections are still open after ``at`` s."""
    open_ = 0
    writers = []

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal open_
        open_ += 1
        writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\n")
        reading = asyncio.create_task(until_closed(reader))
        for i in range(1_000_000):
            done, _ = await asyncio.wait({reading}, timeout=10)
            if done:
                break
            writer.write(b"X-Slow-%d: y\r\n" % i)
        open_ -= 1

    for _ in range(connections):
        writers.append(await served.connect(port))
    started = time.monotonic()
    tasks = [asyncio.create_task(one(r, w)) for r, w in writers]
    await asyncio.sleep(at - (time.monotonic() - started))
    still = open_
    for task in tasks:
        task.cancel()
    for _, writer in writers:
        writer.transport.abort()
    return still


async def answer(served: Served, port: int, head: bytes) -> str:
    """The status line a request head gets, or what happened instead."""
    reader, writer = await served.connect(port)

    async def send() -> None:
        writer.write(head)
        with contextlib.suppress(ConnectionError, ssl.SSLError):
            await writer.drain()

    sending = asyncio.create_task(send())
    try:
        line = await asyncio.wait_for(reader.readline(), 60)
    except TimeoutError:
        return "no answer in 60 s"
    except (ConnectionError, ssl.SSLError) as exc:
        return f"{type(exc).__name__} before an answer"
    finally:
        sending.cancel()
        writer.transport.abort()
    return line.decode().strip() or "closed without an answer"


async def get(served: Served, port: int) -> str:
    """A GET of the ConfigMaps, on a new connection: its status and time, or that it timed out."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(served.connect(port), 10)
        writer.write(
            f"GET {CMS} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {served.token}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        response = await asyncio.wait_for(until_closed(reader), 10)
        writer.close()
    except (TimeoutError, OSError):
        return "no answer in 10 s"
    status = response.split(b" ", 2)[1].decode() if response else "closed"
    return f"{status} in {(time.monotonic() - started) * 1000:.0f} ms"


async def both(served: Served, *ports: str) -> str:
    return ", ".join([f"{name} port {await get(served, served.ports[name])}" for name in ports])


async def flood(served: Served, flooded: str, count: int, burst: bool) -> str:
    """``count`` connections to one port that send request headers that never end: opened one
    at a time (a connection whose TLS handshake is not answered in 5 s was not taken: the rest
    are plain TCP connections, left in the backlog or retrying their SYN), or all at once
    (``burst``). Then a GET on each port, and again 15 s after the flood's connections are
    closed."""
    other = "client-cert" if flooded == "main" else "main"
    port = served.ports[flooded]
    held: list[asyncio.StreamWriter] = []

    async def stall(handshake_seconds: float) -> bool:
        try:
            _, writer = await served.connect(port, handshake_seconds=handshake_seconds)
        except (OSError, ssl.SSLError, TimeoutError):
            return False
        writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\n")
        held.append(writer)
        return True

    tasks = []
    if burst:
        tasks = [asyncio.create_task(stall(120)) for _ in range(count)]
        await asyncio.sleep(8)  # every connection made, those the server takes past their handshake
        taken = len(held)
    else:
        while len(held) < count and await stall(5):
            pass
        taken = len(held)

        async def wait() -> None:  # in the backlog, or (once it is full) a SYN the kernel drops
            held.append((await asyncio.open_connection("127.0.0.1", port))[1])

        tasks = [asyncio.create_task(wait()) for _ in range(count - taken)]
        await asyncio.sleep(2)
    during = await both(served, other, flooded)
    for task in tasks:
        task.cancel()
    for writer in held:
        writer.transport.abort()
    await asyncio.sleep(15)
    after = await both(served, other, flooded)
    how = "at once" if burst else "one at a time"
    return (
        f"{count} connections to the {flooded} port {how}: {taken} taken; GETs meanwhile: "
        f"{during}; 15 s after the flood: {after}"
    )


async def closed_after(served: Served, port: int, kind: str, limit: float = 130) -> str:
    """When the server closes one connection of ``kind`` (see CLOSE_KINDS)."""
    if kind == "plain TCP":
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    else:
        reader, writer = await served.connect(port)
    if kind.startswith("kept alive"):
        writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )  # fmt: skip
        await reader.readexactly(length)
    started = time.monotonic()
    if kind in ("headers never end", "kept alive, then a request's headers never end"):
        writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\n")
    try:
        await asyncio.wait_for(until_closed(reader), limit)
    except TimeoutError:
        return f"still open at {limit:.0f} s"
    finally:
        writer.transport.abort()
    return f"closed at {time.monotonic() - started:.1f} s"


CLOSE_KINDS = (
    "plain TCP",
    "TLS, nothing sent",
    "headers never end",
    "kept alive, then idle",
    "kept alive, then a request's headers never end",
)


async def run(source: Path | None, args: argparse.Namespace, say: Callable[[str], None]) -> None:
    served = Served(source)
    try:
        if args.close_times:
            kinds = [
                (name, port, kind) for name, port in served.ports.items() for kind in CLOSE_KINDS
            ]
            times = await asyncio.gather(*(closed_after(served, p, k) for _, p, k in kinds))
            for (name, _, kind), when in zip(kinds, times, strict=True):
                say(f"{kind}, {name} port: {when}")
            return
        results = await asyncio.gather(
            *(slowloris(served, port, args.connections, args.at) for port in served.ports.values())
        )
        for name, still in zip(served.ports, results, strict=True):
            say(f"slowloris, {name} port: {still} of {args.connections} open at {args.at:.0f} s")
        heads = {
            "a 16 MiB header": b"X-Big: " + b"b" * (16 << 20) + b"\r\n",
            "100,000 headers": b"".join(b"X-H%d: v\r\n" % i for i in range(100_000)),
        }
        for name, port in served.ports.items():
            for what, headers in heads.items():
                head = b"GET /version HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n"
                say(f"{what}, {name} port: {await answer(served, port, head)}")
    finally:
        served.stop()
    for burst in (False, True):
        for flooded in ("client-cert", "main"):
            served = Served(source, args.open_files)
            try:
                result = await flood(served, flooded, args.flood, burst)
                say(f"open files {args.open_files}: {result}")
            finally:
                served.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, default=None, help="a kubelite source tree")
    parser.add_argument("--connections", type=int, default=300)
    parser.add_argument("--at", type=float, default=45.0)
    parser.add_argument("--open-files", type=int, default=1024)
    parser.add_argument("--flood", type=int, default=1500)
    parser.add_argument(
        "--close-times",
        action="store_true",
        help="only: when each kind of idle connection is closed (130 s)",
    )
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    runs: list[tuple[str, Path | None]] = [("this checkout", None)]
    if args.baseline is not None:
        runs.insert(0, (f"baseline {args.baseline}", args.baseline))
    for name, source in runs:
        print(f"# {name}", flush=True)
        asyncio.run(run(source, args, lambda line: print(line, flush=True)))


if __name__ == "__main__":
    main()
