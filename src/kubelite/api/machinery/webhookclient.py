"""Calling out to webhooks: admission webhooks and CRD conversion webhooks share this one pooled
async HTTP client (aiohttp, as ``kubelite.client``'s async transport), so a slow webhook holds
only its own request.

A webhook's ``clientConfig`` names it by ``url`` (HTTPS) or by ``service {namespace, name,
path, port (443)}``. kube-apiserver reaches a service through the cluster's network; kubelite
runs none, so a service is reached at the address its Endpoints (or EndpointSlices) list, as
kube-apiserver does with ``--enable-aggregator-routing``, with TLS verified for the service's
DNS name ``<name>.<namespace>.svc``. ``caBundle`` (PEM) is what the server's certificate must
chain to; without one, the system's roots.

:meth:`WebhookClient.call` returns the HTTP status, body and content type (:meth:`post` the status
and body); a call that does not complete raises :class:`CallFailed` whose text is what kube
writes after ``failed calling webhook "<name>": `` (``failed to call webhook: Post "<url>":
<why>``), the why in Go's words for the common failures (``dial tcp 127.0.0.1:1: connect:
connection refused``, ``context deadline exceeded``, ``tls: failed to verify certificate: x509:
certificate signed by unknown authority``, ``EOF``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import errno
import ssl
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # imported when the first webhook is called: ~110 ms off every start-up
    import aiohttp

Obj = dict[str, Any]

DEFAULT_PORT = 443
#: (namespace, service name, service port) -> the (host, port) serving it, or None
ServiceResolver = Callable[[str, str, int], Awaitable[tuple[str, int] | None]]


class CallFailed(Exception):
    """The webhook could not be called, or did not answer in time."""


class Response(NamedTuple):
    """What a webhook answered: its HTTP status, body and media type (``application/json``)."""

    status: int
    body: bytes
    content_type: str


class Target(NamedTuple):
    """Where a call goes: the URL kube would name (in error texts), the address connected to,
    and the name the server's certificate must carry."""

    url: str
    connect_url: str
    server_hostname: str | None
    host_header: str | None


class WebhookClient:
    """One connection pool for every webhook call of a server (``limit`` connections to each
    webhook); :meth:`close` at shutdown."""

    def __init__(self, resolve_service: ServiceResolver, *, limit: int = 100) -> None:
        self.resolve_service = resolve_service
        self.limit = limit
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[str, ssl.SSLContext] = {}

    def _pool(self) -> aiohttp.ClientSession:
        import aiohttp

        if self._session is None or self._session.closed:
            # connections limited per webhook, not in all: a slow webhook queues its own calls
            connector = aiohttp.TCPConnector(limit=0, limit_per_host=self.limit)
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def ssl_context(self, client_config: Obj) -> ssl.SSLContext:
        """The TLS context verifying the webhook's certificate against ``caBundle``."""
        bundle = client_config.get("caBundle") or ""
        key = bundle if isinstance(bundle, str) else ""
        context = self._contexts.get(key)
        if context is None:
            if key:
                try:
                    pem = base64.b64decode(key, validate=True).decode()
                except (binascii.Error, UnicodeDecodeError):
                    raise CallFailed("could not get REST client: invalid caBundle") from None
                context = ssl.create_default_context(cadata=pem)
            else:
                context = ssl.create_default_context()
            self._contexts[key] = context
        return context

    async def target(self, client_config: Obj, query: str = "") -> Target:
        """Where ``client_config`` points, with ``query`` (``timeout=10s``) appended."""
        suffix = f"?{query}" if query else ""
        url = client_config.get("url")
        if isinstance(url, str) and url:
            return Target(f"{url}{suffix}", f"{url}{suffix}", None, None)
        service = client_config.get("service") or {}
        namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
        port = service.get("port")
        port = port if isinstance(port, int) and not isinstance(port, bool) else DEFAULT_PORT
        path = str(service.get("path") or "")
        if path and not path.startswith("/"):
            path = f"/{path}"
        host = f"{name}.{namespace}.svc"
        named = f"https://{host}:{port}{path}{suffix}"
        address = await self.resolve_service(namespace, name, port)
        if address is None:
            raise CallFailed(
                f'failed to call webhook: Post "{named}": service "{namespace}/{name}" has no '
                "endpoint this server can reach"
            )
        ip, target_port = address
        shown = f"[{ip}]" if ":" in ip else ip
        return Target(named, f"https://{shown}:{target_port}{path}{suffix}", host, f"{host}:{port}")

    async def post(
        self, client_config: Obj, body: bytes, seconds: float, query: str = ""
    ) -> tuple[int, bytes]:
        """POST ``body`` (JSON) to the webhook, waiting at most ``seconds``; its HTTP status
        and body."""
        response = await self.call(client_config, body, seconds, query)
        return response.status, response.body

    async def call(
        self, client_config: Obj, body: bytes, seconds: float, query: str = ""
    ) -> Response:
        """:meth:`post`, with the answer's media type."""
        import aiohttp

        target = await self.target(client_config, query)
        context = self.ssl_context(client_config)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if target.host_header:
            headers["Host"] = target.host_header
        try:
            async with asyncio.timeout(seconds):
                async with self._pool().post(
                    target.connect_url,
                    data=body,
                    headers=headers,
                    ssl=context,
                    server_hostname=target.server_hostname,
                ) as response:
                    data = await response.read()
                    return Response(response.status, data, response.content_type)
        except TimeoutError:
            raise CallFailed(
                f'failed to call webhook: Post "{target.url}": context deadline exceeded'
            ) from None
        except (aiohttp.ClientError, OSError, ssl.SSLError) as exc:
            raise CallFailed(f'failed to call webhook: Post "{target.url}": {_why(exc)}') from None


def _why(exc: BaseException) -> str:
    """A failed call's cause as Go's net/http words it, where kubelite knows the words."""
    import aiohttp

    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return _tls_why(exc.certificate_error)
    if isinstance(exc, aiohttp.ClientConnectorError):
        address = f"[{exc.host}]:{exc.port}" if ":" in exc.host else f"{exc.host}:{exc.port}"
        if exc.os_error.errno == errno.ECONNREFUSED:
            return f"dial tcp {address}: connect: connection refused"
        if isinstance(exc.os_error, ssl.SSLError):
            return _tls_why(exc.os_error)
        return f"dial tcp {address}: {exc.os_error.strerror or exc.os_error}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "EOF"
    return str(exc)


def _tls_why(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, ssl.SSLCertVerificationError):
        if "Hostname mismatch" in text or "IP address mismatch" in text:
            return f"tls: failed to verify certificate: x509: {exc.verify_message}"
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    return f"remote error: tls: {text}"
