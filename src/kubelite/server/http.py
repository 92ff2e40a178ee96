"""The HTTP stack kubelite serves on: granian's embedded server, on the running event loop.

granian parses HTTP and terminates TLS in Rust, off the GIL, and hands each request to the ASGI
app on this loop. Measured against uvicorn (httptools, uvloop) on the same core, the same app and
the same TLS certificate, it served 1.5x the conflict-checked PUTs and 1.9x the GETs
(docs/benchmarks.md), so it is the stack the benchmark favours. bench/echo_app.py measures the
ceiling on this same function.

**Connections** get the limits of :mod:`.listening`, which the client-certificate port shares:
a connection whose request headers are not complete ``header_read_seconds`` (kube's 32 s)
after it was accepted or after its previous response is closed (hyper's header read timeout;
so an idle kept-alive connection is closed then too, where Go waits its 90 s IdleTimeout); a
request head over 1 MiB or 100 headers is answered 431 and the connection closed; a TLS
handshake not done in 10 s (granian's) is dropped. granian serves at most ``backpressure``
connections per worker at once and leaves the rest in the listen backlog; its default (the
backlog, 2,048) let 2,048 idle watches or stalled clients lock everyone else out, so it is the
main port's share of the open-file limit (:class:`.listening.ConnectionBudget`).

We bind the listening socket ourselves (so ``--port 0`` works and the real port is known before
the kubeconfig is written) and hand granian its file descriptor. HTTP/1.1 only, as before:
every client kubelite targets speaks it, and one mode is one set of behaviours to test.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Callable
from typing import Any

from granian._granian import SocketHolder
from granian.constants import HTTPModes, Interfaces, SSLProtocols
from granian.http import HTTP1Settings
from granian.server.embed import Server

from kubelite.server.listening import (
    BACKLOG,
    DRAIN_SECONDS,
    HEADER_READ_SECONDS,
    MAX_HEADER_BYTES,
)
from kubelite.server.tls import ServingFiles

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Embedded(Server):
    """granian's embedded server on a socket we bound (granian would bind its own)."""

    def __init__(
        self,
        app: Any,
        sock: socket.socket,
        tls: ServingFiles,
        max_connections: int,
        backlog: int,
        header_read_seconds: float,
    ) -> None:
        host, port = sock.getsockname()[:2]
        super().__init__(
            app,
            address=host,
            port=port,
            interface=Interfaces.ASGINL,
            http=HTTPModes.http1,
            websockets=False,
            backlog=backlog,
            backpressure=max_connections,
            http1_settings=HTTP1Settings(
                header_read_timeout=round(header_read_seconds * 1000),
                # hyper's read buffer: a request head that does not fit is answered 431
                max_buffer_size=MAX_HEADER_BYTES,
            ),
            log_enabled=False,
            ssl_cert=tls.cert,
            ssl_key=tls.key,
            ssl_protocol_min=SSLProtocols.tls12,
        )
        self.workers_kill_timeout = DRAIN_SECONDS  # then in-flight requests are cut
        self._sock = sock
        self._backlog = backlog
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
        self._shd = SocketHolder(self._sock.fileno(), False, self._backlog)  # type: ignore[call-arg,assignment]
        self.owns_socket = True


async def serve_http(
    app: Any,
    sock: socket.socket,
    tls: ServingFiles,
    on_stop: Callable[[], None],
    stop: asyncio.Event | None = None,
    *,
    max_connections: int,
    backlog: int = BACKLOG,
    header_read_seconds: float = HEADER_READ_SECONDS,
) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM, or, when ``stop`` is given, until it is
    set (a server on a thread of its own, where signal handlers cannot be installed). ``on_stop``
    runs first (kubelite ends its watch streams there), then granian stops accepting and waits
    for in-flight requests. At most ``max_connections`` are served at once; ``backlog`` is the
    one ``sock`` listens with."""
    server = _Embedded(app, sock, tls, max_connections, backlog, header_read_seconds)
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
