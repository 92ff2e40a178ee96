"""The listener for x509 client certificates: the same ASGI app, on a port of its own.

kube-apiserver authenticates a client certificate its client CA signed (the subject's CN is the
user, each O a group). granian, which serves kubelite's main port, verifies client certificates
but does not hand them to the application (its ASGI scope has no ``tls`` extension), so a
request's certificate cannot be read there. This listener terminates TLS in Python's ``ssl``
instead, asks every client for a certificate (optional, verified against the data dir's CA, as
kube's ``--client-ca-file``), and passes the verified leaf to the app as the ASGI TLS extension
(``scope["extensions"]["tls"]["client_cert_chain"]``); HTTP/1.1 is uvicorn's httptools protocol.
It serves everything the main port serves; ``kubelite kubeconfig --user`` names it.

A certificate another CA signed fails the TLS handshake here, where kube-apiserver (which only
requests certificates during the handshake) answers 401. Everything else (expiry, the CN, the
user it names) is the authentication filter's (:func:`kubelite.api.authn.certificate_user`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from typing import Any

from uvicorn import Config, Server
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from kubelite.server.http import DRAIN_SECONDS
from kubelite.server.tls import ServingFiles

#: Go's http.Server closes idle keep-alive connections after its IdleTimeout (kube: 90 s).
IDLE_SECONDS = 90


class _TLSExtensionProtocol(HttpToolsProtocol):
    """uvicorn's protocol, whose scopes carry the connection's TLS extension (the peer's
    verified certificate as PEM, leaf first)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        self._tls: dict[str, Any] = {
            "client_cert_chain": [ssl.DER_cert_to_PEM_cert(der)] if der else [],
            "client_cert_name": None,
            "client_cert_error": None,
            "server_cert": None,
            "tls_version": None,
            "cipher_suite": None,
        }

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.scope["extensions"] = {"tls": self._tls}  # type: ignore[dict-item]


class ClientCertListener:
    """Serves ``app`` on ``sock`` with TLS that asks for client certificates; :meth:`close`
    stops accepting and waits for the requests in flight (up to the drain time)."""

    def __init__(self, app: Any, sock: socket.socket, tls: ServingFiles) -> None:
        for name in ("uvicorn", "uvicorn.error"):
            logging.getLogger(name).setLevel(logging.WARNING)  # no start-up banner
        config = Config(
            app,
            http=_TLSExtensionProtocol,
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
            timeout_graceful_shutdown=DRAIN_SECONDS,
        )
        config.load()
        self._server = Server(config)
        # what Server.serve sets before its startup (lifespan "off": nothing runs)
        self._server.lifespan = config.lifespan_class(config)
        self._sock = sock
        self._started = False

    async def start(self) -> None:
        await self._server.startup(sockets=[self._sock])
        self._started = True

    async def close(self) -> None:
        """uvicorn's ``Server.shutdown`` without its fixed 0.1 s pause (a test server stops as
        often as it starts): stop accepting, close idle connections, let requests in flight
        finish for up to the drain time, then cancel what is left."""
        if not self._started:
            return
        self._started = False
        state = self._server.server_state
        for server in self._server.servers:
            server.close()
        for connection in list(state.connections):
            connection.shutdown()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_SECONDS
        # uvicorn signals no event when its connections and tasks are done: poll, as it does
        while (state.connections or state.tasks) and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        for task in list(state.tasks):
            task.cancel()
        for server in self._server.servers:
            await server.wait_closed()
