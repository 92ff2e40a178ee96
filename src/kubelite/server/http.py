"""The HTTP stack kubelite serves on: granian's embedded server, on the running event loop.

granian parses HTTP and terminates TLS in Rust, off the GIL, and hands each request to the ASGI
app on this loop. Measured against uvicorn (httptools, uvloop) on the same core, the same app and
the same TLS certificate, it served 1.5x the conflict-checked PUTs and 1.9x the GETs
(docs/benchmarks.md), so it is the stack the benchmark favours. bench/echo_app.py measures the
ceiling on this same function.

**Connections.** granian serves at most ``backpressure`` connections per worker at once and
leaves the rest in the listen backlog; its default (the backlog, 2,048) let 2,048 idle watches
or stalled clients lock everyone else out. kube-apiserver (Go's net/http) has no such cap, only
its own limits in the filter chain (max in flight, request timeout: :mod:`.overload`), and Go
raises its open-file limit to the hard limit at start. So do we, and the cap is that limit: a
connection needs a file descriptor anyway. A client that connects and sends no complete request
headers is dropped after ``HEADER_READ_SECONDS`` (kube's ReadHeaderTimeout, 32 s).

We bind the listening socket ourselves (so ``--port 0`` works and the real port is known before
the kubeconfig is written) and hand granian its file descriptor. HTTP/1.1 only, as before:
every client kubelite targets speaks it, and one mode is one set of behaviours to test.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import signal
import socket
from collections.abc import Callable
from typing import Any

from granian._granian import SocketHolder
from granian.constants import HTTPModes, Interfaces, SSLProtocols
from granian.http import HTTP1Settings
from granian.server.embed import Server

from kubelite.server.tls import ServingFiles

log = logging.getLogger(__name__)

BACKLOG = 2048
HEADER_READ_SECONDS = 32
DRAIN_SECONDS = 10
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def listen(address: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: without it, a chunked response's last small chunk waits
    # for the client's delayed ACK (Nagle), ~40 ms on a quarter of back-to-back list requests.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((address, port))
    sock.listen(BACKLOG)
    return sock


def raise_open_file_limit() -> int:
    """Raise the soft limit on open files to the hard limit, as Go does at start; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


class _Embedded(Server):
    """granian's embedded server on a socket we bound (granian would bind its own)."""

    def __init__(self, app: Any, sock: socket.socket, tls: ServingFiles) -> None:
        host, port = sock.getsockname()[:2]
        super().__init__(
            app,
            address=host,
            port=port,
            interface=Interfaces.ASGINL,
            http=HTTPModes.http1,
            websockets=False,
            backlog=BACKLOG,
            backpressure=max(BACKLOG, raise_open_file_limit()),
            http1_settings=HTTP1Settings(header_read_timeout=HEADER_READ_SECONDS * 1000),
            log_enabled=False,
            ssl_cert=tls.cert,
            ssl_key=tls.key,
            ssl_protocol_min=SSLProtocols.tls12,
        )
        self.workers_kill_timeout = DRAIN_SECONDS  # then in-flight requests are cut
        self._sock = sock
        #: granian's SocketHolder owns the descriptor once made, and closes it when it stops
        self.owns_socket = False

    async def _stop_workers(self) -> None:
        """granian's, minus its failure: a worker still serving after the drain time made
        ``join`` raise TimeoutError (and a traceback, exit status 1). Here the requests still
        in flight are cancelled (the app's ``cut_requests``), so the worker ends normally."""
        for worker in self.wrks:
            worker.terminate()  # type: ignore[no-untyped-call]
        cut = getattr(self.target, "cut_requests", None)
        for worker in self.wrks:
            task = worker._task
            if task is None:
                continue
            done, _ = await asyncio.wait({task}, timeout=DRAIN_SECONDS)
            if not done and callable(cut):
                log.warning("cutting %d requests still in flight after %ds", cut(), DRAIN_SECONDS)
                done, _ = await asyncio.wait({task}, timeout=DRAIN_SECONDS)
            if not done:
                log.warning("stopping a worker that is still serving")
                worker.kill()  # type: ignore[no-untyped-call]
        self.wrks.clear()

    def _init_shared_socket(self) -> None:
        self._ssp = None
        # SocketHolder(fd, is_uds, backlog): granian's own pickling constructor (not in its stub).
        self._shd = SocketHolder(self._sock.fileno(), False, BACKLOG)  # type: ignore[call-arg,assignment]
        self.owns_socket = True


async def serve_http(
    app: Any,
    sock: socket.socket,
    tls: ServingFiles,
    on_stop: Callable[[], None],
    stop: asyncio.Event | None = None,
) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM, or, when ``stop`` is given, until it is
    set (a server on a thread of its own, where signal handlers cannot be installed). ``on_stop``
    runs first (kubelite ends its watch streams there), then granian stops accepting and waits
    for in-flight requests."""
    server = _Embedded(app, sock, tls)
    loop = asyncio.get_running_loop()
    try:
        await _serve_until_stopped(server, loop, on_stop, stop)
    finally:
        # granian closed the descriptor it was handed: the socket object must not close it again
        # (EBADF, or worse: by then the number may be another file's).
        if server.owns_socket:
            sock.detach()


async def _serve_until_stopped(
    server: _Embedded,
    loop: asyncio.AbstractEventLoop,
    on_stop: Callable[[], None],
    stop: asyncio.Event | None,
) -> None:
    def stop_serving() -> None:
        on_stop()
        server.stop()  # type: ignore[no-untyped-call]

    if stop is not None:
        waiter = asyncio.create_task(stop.wait())

        def stop_when_set(waited: asyncio.Task[bool]) -> None:
            if not waited.cancelled():
                stop_serving()

        waiter.add_done_callback(stop_when_set)
        try:
            await server.serve()
        finally:
            waiter.cancel()
        return
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop_serving)
    try:
        await server.serve()
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
