"""A real ``kubelite serve`` under connections that hold on: thousands of stalled connections and
idle watches must not lock out a fresh GET or write (granian's default backpressure, 2,048
requests per worker, did once the watches passed it), and a request body that stops arriving is
answered 504 and dropped after the request timeout."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Server, start_server, stop_server

STALLED = 2048
WATCHES = 2100
CMS = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = start_server(tmp_path_factory.mktemp("conn") / "data", None, "--request-timeout", "2s")
    yield s
    stop_server(s)


def tls(server: Server) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))


def address(server: Server) -> tuple[str, int]:
    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    return host.strip("[]"), int(port)


async def request(server: Server, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
    host, port = address(server)
    reader, writer = await asyncio.open_connection(host, port, ssl=tls(server))
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {server.token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    writer.write(head.encode() + body)
    response = await reader.read()
    writer.close()
    status = int(response.split(b" ", 2)[1])
    return status, response.partition(b"\r\n\r\n")[2]


async def hold(server: Server, stalled: int, watches: int) -> list[asyncio.StreamWriter]:
    """``stalled`` connections: half raw TCP that never start TLS, half TLS with request headers
    that never end; and ``watches`` idle watches whose events nobody reads."""
    host, port = address(server)
    held: list[asyncio.StreamWriter] = []
    for i in range(stalled):
        if i % 2:
            _, writer = await asyncio.open_connection(host, port)
        else:
            _, writer = await asyncio.open_connection(host, port, ssl=tls(server))
            writer.write(f"GET {CMS} HTTP/1.1\r\nHost: {host}\r\n".encode())
        held.append(writer)
    for _ in range(watches):
        _, writer = await asyncio.open_connection(host, port, ssl=tls(server))
        writer.write(
            f"GET {CMS}?watch=1 HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {server.token}\r\n\r\n".encode()
        )
        held.append(writer)
    await asyncio.sleep(0.5)
    return held


async def test_stalled_connections_and_idle_watches_do_not_lock_out_requests(
    server: Server,
) -> None:
    held = await hold(server, STALLED, WATCHES)
    try:
        # liveness bounds, not timings: before, these waited for ever behind the held ones
        status, _ = await asyncio.wait_for(request(server, "GET", CMS), 30)
        assert status == 200
        body = json.dumps({"metadata": {"name": "still-served"}}).encode()
        status, _ = await asyncio.wait_for(request(server, "POST", CMS, body), 30)
        assert status == 201
    finally:
        for writer in held:
            writer.transport.abort()


async def test_a_body_that_stops_arriving_is_answered_504_after_the_request_timeout(
    server: Server,
) -> None:
    host, port = address(server)
    reader, writer = await asyncio.open_connection(host, port, ssl=tls(server))
    writer.write(
        f"POST {CMS} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {server.token}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        '{"metadata":'.encode()
    )
    response = await asyncio.wait_for(reader.read(), 30)  # read to EOF: the server drops it
    writer.close()
    assert response.startswith(b"HTTP/1.1 504")
    status = json.loads(response.partition(b"\r\n\r\n")[2])
    assert status["message"] == "Timeout: request did not complete within the allotted timeout"


def test_the_request_timeout_flag_takes_go_durations(tmp_path: Path) -> None:
    from kubelite.cli import _duration

    assert _duration("1m0s") == 60.0
    assert _duration("500ms") == 0.5
    assert _duration("2") == 2.0
    with pytest.raises(Exception, match="invalid duration"):
        _duration("1 minute")
