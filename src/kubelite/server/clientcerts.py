"""The listener for x509 client certificates: the same ASGI app, on a port of its own.

kube-apiserver authenticates a client certificate its client CA signed (the subject's CN is the
user, each O a group). granian, which serves kubelite's main port, verifies client certificates
but does not hand them to the application (its ASGI scope has no ``tls`` extension), so a
request's certificate cannot be read there. This listener terminates TLS in Python's ``ssl``
instead, asks every client for a certificate (optional, verified against the data dir's CA, as
kube's ``--client-ca-file``), and passes the verified leaf to the app as the ASGI TLS extension
(``scope["extensions"]["tls"]["client_cert_chain"]``); HTTP/1.1 is uvicorn's httptools protocol.
It serves everything the main port serves; ``kubelite kubeconfig --user`` names it.

It enforces what the main port enforces (:mod:`.listening`), which uvicorn alone does not:
kube's header timeout (the TLS handshake, then a request's headers from the connection's start
or from the first byte of a later request, each within ``header_read_seconds``; then the
connection is dropped without an answer), a request head over 1 MiB or 100 headers answered
431 as granian answers it, and at most ``max_connections`` connections at once: the others wait
in the listen backlog, because the listener accepts only while it has room. An idle kept-alive
connection is closed after kube's 90 s IdleTimeout.

A certificate another CA signed fails the TLS handshake here, where kube-apiserver (which only
requests certificates during the handshake) answers 401. Everything else (expiry, the CN, the
user it names) is the authentication filter's (:func:`kubelite.api.auth.authn.certificate_user`).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import Callable
from email.utils import formatdate
from typing import Any

import httptools
from uvicorn import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from kubelite.server.listening import (
    DRAIN_SECONDS,
    HEADER_READ_SECONDS,
    IDLE_SECONDS,
    MAX_HEADER_BYTES,
    MAX_HEADERS,
    TOO_LARGE_HEAD,
)
from kubelite.server.tls import ServingFiles

log = logging.getLogger(__name__)

#: accept() failures that mean the process is out of descriptors or memory: wait, as asyncio does
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


class _HeadTooLarge(Exception):
    """Raised in a parser callback to stop parsing a request head over the limits."""


class _Connection(HttpToolsProtocol):
    """uvicorn's protocol, whose scopes carry the connection's TLS extension (the peer's
    verified certificate as PEM, leaf first), held to the limits of :mod:`.listening`."""

    def __init__(
        self,
        config: Config,
        state: ServerState,
        header_read_seconds: float,
        release: Callable[[], None],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        super().__init__(config=config, server_state=state, app_state={}, _loop=loop)
        self._header_read_seconds = header_read_seconds
        self._release: Callable[[], None] | None = release
        self._header_timer: asyncio.TimerHandle | None = None
        #: bytes of the current request head read so far; None once its headers are complete
        self._head_bytes: int | None = 0
        self._head_lines = 0
        self._heads = 0
        self._tls: dict[str, Any] = {}

    def release(self) -> None:
        """Give the connection's place back to the listener (once)."""
        if self._release is not None:
            release, self._release = self._release, None
            release()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        self._tls = {
            "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
            "client_cert_name": None,
            "client_cert_error": None,
            "server_cert": None,
            "tls_version": None,
            "cipher_suite": None,
        }
        self._start_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)
        self.release()

    def _start_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(self._header_read_seconds, self._header_timeout)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        """The headers did not come in time: drop the connection (Go answers nothing either)."""
        self._header_timer = None
        self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():  # refused or dropped: what still arrives is not read
            return
        head = self._head_bytes
        if head is None:  # a request body
            self._parse(data)
            return
        if self._header_timer is None:  # the first bytes of a later request
            self._start_header_timer()
        room = MAX_HEADER_BYTES - head
        if len(data) <= room:
            self._head_bytes = head + len(data)
            self._parse(data)
            return
        # the limit falls inside this chunk: the head must end before it
        heads = self._heads
        self._head_bytes = MAX_HEADER_BYTES
        self._parse(data[:room])
        if self._heads == heads:
            self._refuse_head()
        elif not self.transport.is_closing():
            self.data_received(data[room:])

    def _parse(self, data: bytes) -> None:
        """uvicorn's ``data_received``, where a head over the limits gets the main port's 431."""
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, _HeadTooLarge):
                self._refuse_head()
            else:
                self._bad_request()
        except httptools.HttpParserError:
            self._bad_request()
        except httptools.HttpParserUpgrade:
            self._unsupported_upgrade_warning()

    def _bad_request(self) -> None:
        msg = "Invalid HTTP request received."
        self.logger.warning(msg)
        self.send_400_response(msg)

    def _refuse_head(self) -> None:
        self._stop_header_timer()
        if self.transport.is_closing():
            return
        date = b"".join(
            b"date: " + value + b"\r\n"
            for name, value in self.server_state.default_headers
            if name == b"date"
        )
        self.transport.write(TOO_LARGE_HEAD + date + b"\r\n")
        self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_lines = 0
        self.scope["extensions"] = {"tls": self._tls}  # type: ignore[dict-item]

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_lines += 1
        if self._head_lines > MAX_HEADERS:
            raise _HeadTooLarge
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_bytes = None
        self._heads += 1
        self._stop_header_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head_bytes = 0  # what follows is the next request's head

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.cycle.more_body and not self.pipeline:
            # answered before its body came (the request timeout's 504): not kept alive, as
            # granian's hyper closes a connection whose request body is still unread
            self.transport.close()


class ClientCertListener:
    """Serves ``app`` on ``sock`` with TLS that asks for client certificates, ``max_connections``
    at a time; :meth:`close` stops accepting and waits for the requests in flight (up to the
    drain time)."""

    def __init__(
        self,
        app: Any,
        sock: socket.socket,
        tls: ServingFiles,
        *,
        max_connections: int,
        header_read_seconds: float = HEADER_READ_SECONDS,
    ) -> None:
        for name in ("uvicorn", "uvicorn.error"):
            logging.getLogger(name).setLevel(logging.WARNING)
        config = Config(
            app,
            http=_Connection,
            ws="none",  # kube serves no websockets here; and "auto" imports a library at start
            lifespan="off",
            log_config=None,
            access_log=False,
            proxy_headers=False,
            server_header=False,
            ssl_certfile=str(tls.cert),
            ssl_keyfile=str(tls.key),
            ssl_ca_certs=str(tls.ca_cert),
            ssl_cert_reqs=ssl.CERT_OPTIONAL,
            timeout_keep_alive=IDLE_SECONDS,
        )
        config.load()
        assert config.ssl is not None
        self._config = config
        self._ssl: ssl.SSLContext = config.ssl
        self._state = ServerState()
        self._sock = sock
        self._header_read_seconds = header_read_seconds
        self._room = asyncio.Semaphore(max_connections)
        self._tasks: set[asyncio.Task[None]] = set()
        self._date: asyncio.TimerHandle | None = None
        self._started = False

    async def start(self) -> None:
        self._sock.setblocking(False)
        self._stamp_date()
        self._spawn(self._accept())
        self._started = True

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _stamp_date(self) -> None:
        """Every answer's Date header, as uvicorn's own server keeps it: once a second."""
        date = formatdate(usegmt=True).encode()
        self._state.default_headers = [(b"date", date)]
        self._date = asyncio.get_running_loop().call_later(1, self._stamp_date)

    async def _accept(self) -> None:
        """Accept while there is room: connections over the cap wait in the listen backlog."""
        loop = asyncio.get_running_loop()
        while True:
            await self._room.acquire()
            try:
                conn, _ = await loop.sock_accept(self._sock)
            except OSError as exc:
                self._room.release()
                if exc.errno in _OUT_OF_RESOURCES:
                    log.warning("client-certificate port: cannot accept (%s); retrying in 1 s", exc)
                    await asyncio.sleep(1)
                continue
            except BaseException:
                self._room.release()
                raise
            self._spawn(self._serve(conn))

    async def _serve(self, conn: socket.socket) -> None:
        """The TLS handshake (within the header timeout, as Go bounds it), then uvicorn's
        protocol; the connection's room is given back when it closes, or here if the handshake
        fails (the protocol then never hears of it)."""
        loop = asyncio.get_running_loop()
        connection = _Connection(
            self._config, self._state, self._header_read_seconds, self._room.release, loop
        )
        try:
            await loop.connect_accepted_socket(
                lambda: connection,
                conn,
                ssl=self._ssl,
                ssl_handshake_timeout=self._header_read_seconds,
            )
        except Exception:  # refused certificate, timeout, reset: the transport closed it
            connection.release()

    async def close(self) -> None:
        """uvicorn's ``Server.shutdown`` without its fixed 0.1 s pause (a test server stops as
        often as it starts): stop accepting, close idle connections, let requests in flight
        finish for up to the drain time, then cancel what is left."""
        if not self._started:
            return
        self._started = False
        if self._date is not None:
            self._date.cancel()
        stopped = list(self._tasks)
        for task in stopped:
            task.cancel()
        await asyncio.gather(*stopped, return_exceptions=True)
        self._sock.close()
        state = self._state
        for connection in list(state.connections):
            connection.shutdown()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_SECONDS
        # uvicorn signals no event when its connections and tasks are done: poll, as it does
        while (state.connections or state.tasks) and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        for task in list(state.tasks):
            task.cancel()
