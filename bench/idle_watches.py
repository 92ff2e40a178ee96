"""Fresh GETs and writes while thousands of idle watches are held open.

Opens ``WATCHES`` watches (each its own TLS connection, nobody reading its events), then times
fresh GETs (a new connection each, as a new kubectl would) and ConfigMap creates, and prints the
median, p90 and max of each. Before granian's backpressure was raised, the 2,049th watch locked
every later request out (issue 13 §3). Needs ~2 file descriptors per watch (client and server):
``ulimit -n`` above 2 x WATCHES + 100 in both shells.

    .venv/bin/kubelite serve --port 0 --data-dir /tmp/kl &
    .venv/bin/python bench/idle_watches.py https://127.0.0.1:PORT "$(cat /tmp/kl/token)" \\
        /tmp/kl/ca.crt 5000 50 [--busy]
"""

from __future__ import annotations

import asyncio
import json
import resource
import ssl
import statistics
import sys
import time
import uuid

CMS = "/api/v1/namespaces/default/configmaps"
#: what the idle watches watch: nothing the benchmark writes (``--busy`` watches CMS instead,
#: so that every create is an event sent to every watch)
IDLE = "/api/v1/namespaces/kube-public/configmaps"


async def request(
    host: str, port: int, context: ssl.SSLContext, head: str, body: bytes = b""
) -> int:
    reader, writer = await asyncio.open_connection(host, port, ssl=context)
    writer.write(head.encode() + body)
    response = await reader.read()
    writer.close()
    return int(response.split(b" ", 2)[1])


def summary(name: str, times: list[float]) -> str:
    times = sorted(times)
    p90 = times[int(len(times) * 0.9)]
    return (
        f"{name}: median {statistics.median(times):.1f} ms, p90 {p90:.1f} ms, "
        f"max {times[-1]:.1f} ms ({len(times)} requests)"
    )


async def main() -> None:
    url, token, ca = sys.argv[1], sys.argv[2], sys.argv[3]
    watches, count = int(sys.argv[4]), int(sys.argv[5])
    watched = CMS if "--busy" in sys.argv[6:] else IDLE
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    host, port_text = url.split("//")[1].rsplit(":", 1)
    host, port = host.strip("[]"), int(port_text)
    context = ssl.create_default_context(cafile=ca)
    auth = f"Authorization: Bearer {token}\r\n"
    held = []
    started = time.perf_counter()
    for _ in range(watches):
        reader, writer = await asyncio.open_connection(host, port, ssl=context)
        writer.write(f"GET {watched}?watch=1 HTTP/1.1\r\nHost: {host}\r\n{auth}\r\n".encode())
        held.append((reader, writer))
    # every watch has its headers back: it is being served, not queued
    for reader, _ in held:
        line = await asyncio.wait_for(reader.readline(), 60)
        assert line.startswith(b"HTTP/1.1 200"), line
    print(f"{watches} idle watches open in {time.perf_counter() - started:.1f} s")

    gets, writes = [], []
    get = f"GET {CMS}?limit=50 HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n"
    for _ in range(count):
        t = time.perf_counter()
        assert await request(host, port, context, get) == 200
        gets.append((time.perf_counter() - t) * 1000)
    for _ in range(count):
        body = json.dumps({"metadata": {"name": f"idle-{uuid.uuid4().hex[:12]}"}}).encode()
        post = (
            f"POST {CMS} HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        t = time.perf_counter()
        assert await request(host, port, context, post, body) == 201
        writes.append((time.perf_counter() - t) * 1000)
    print(summary("fresh GET (new TLS connection)", gets))
    print(summary("create (new TLS connection)", writes))
    for _, writer in held:
        writer.transport.abort()


if __name__ == "__main__":
    asyncio.run(main())
