"""How requests travel: urllib3 for the sync client, aiohttp for the async one (each chosen
by measurement against other HTTP clients), and an ASGI transport that hands requests straight to
an application object in the same process, for fast tests.

A transport sends one :class:`~kubelite.client.core.ApiRequest` and returns the status and body,
or opens a stream (a watch) and yields its bytes as they arrive; a non-200 stream raises the
answer's :class:`~kubelite.client.errors.ApiError` before yielding anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    MutableMapping,
)
from typing import Any, Protocol
from urllib.parse import unquote

import aiohttp
import urllib3

from kubelite.client.core import ApiRequest, ApiResponse, error_for
from kubelite.client.kubeconfig import Connection

DEFAULT_TIMEOUT = 30.0
POOL_SIZE = 64
#: asyncio before 3.12.8 (and 3.13.0) can leave a TLS connection's socket open when the
#: connection is closed before the peer completes the TLS shutdown (fixed by CPython PR 118960):
#: a watch dropped mid-stream, a pool closed as the loop ends; the socket then surfaces as a
#: ResourceWarning. aiohttp aborts such sockets when asked (``enable_cleanup_closed``; on later
#: Pythons it warns that the option is useless, so it is asked only where it is needed).
LEAKS_TLS_TRANSPORTS = sys.version_info[:3] < (3, 12, 8) or sys.version_info[:3] == (3, 13, 0)
_END = "kubelite.app-returned"  # queued when the ASGI app's task finishes


class SyncTransport(Protocol):
    def send(self, request: ApiRequest) -> ApiResponse: ...
    def stream(self, request: ApiRequest) -> Iterator[bytes]: ...
    def close(self) -> None: ...


class AsyncTransport(Protocol):
    async def send(self, request: ApiRequest) -> ApiResponse: ...
    def stream(self, request: ApiRequest) -> AsyncGenerator[bytes, None]: ...
    async def close(self) -> None: ...


class Urllib3Transport:
    """A pool of keep-alive connections to one server; safe to share between threads."""

    def __init__(self, connection: Connection, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.connection = connection
        self.timeout = timeout
        options: dict[str, Any] = {}
        if connection.server.startswith("https:"):
            options["ssl_context"] = connection.ssl_context()
            if connection.tls_server_name:
                options["server_hostname"] = connection.tls_server_name
            if connection.insecure_skip_tls_verify:
                options["cert_reqs"] = "CERT_NONE"
                options["assert_hostname"] = False
        self._auth = connection.auth_headers()
        self._pool = urllib3.PoolManager(maxsize=POOL_SIZE, block=False, **options)

    def send(self, request: ApiRequest) -> ApiResponse:
        response = self._pool.request(
            request.method,
            self.connection.server + request.target,
            body=request.body,
            headers={**request.headers(), **self._auth},
            retries=False,
            timeout=self.timeout,
        )
        return ApiResponse(response.status, response.data)

    def stream(self, request: ApiRequest) -> Iterator[bytes]:
        response = self._pool.request(
            request.method,
            self.connection.server + request.target,
            headers={**request.headers(), **self._auth},
            retries=False,
            preload_content=False,
            timeout=urllib3.Timeout(connect=self.timeout, read=None),
        )
        try:
            if response.status != 200:
                raise error_for(response.status, response.read())
            yield from response.stream(None)
        finally:
            # An unfinished stream cannot go back to the pool: close the connection itself.
            response.close()
            response.release_conn()

    def close(self) -> None:
        self._pool.clear()


class AiohttpTransport:
    """One aiohttp session (created on first use, inside the running loop)."""

    def __init__(self, connection: Connection, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.connection = connection
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            https = self.connection.server.startswith("https:")
            connector = aiohttp.TCPConnector(
                ssl=self.connection.ssl_context() if https else False,
                limit=POOL_SIZE,
                enable_cleanup_closed=https and LEAKS_TLS_TRANSPORTS,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                headers=self.connection.auth_headers(),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                auto_decompress=False,
            )
        return self._session

    def _options(self) -> dict[str, Any]:
        name = self.connection.tls_server_name
        return {"server_hostname": name} if name else {}

    async def send(self, request: ApiRequest) -> ApiResponse:
        async with self._open().request(
            request.method,
            self.connection.server + request.target,
            data=request.body,
            headers=request.headers(),
            **self._options(),
        ) as response:
            return ApiResponse(response.status, await response.read())

    async def stream(self, request: ApiRequest) -> AsyncGenerator[bytes, None]:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.timeout)
        async with self._open().request(
            request.method,
            self.connection.server + request.target,
            headers=request.headers(),
            timeout=timeout,
            **self._options(),
        ) as response:
            if response.status != 200:
                raise error_for(response.status, await response.read())
            async for chunk in response.content.iter_any():
                yield chunk

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


ASGIApp = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[MutableMapping[str, Any]]],
        Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]


class _Exchange:
    """One request handed to an ASGI app, its response messages collected in a queue. The app
    sees ``http.disconnect`` once the client is done (a watch's stream closed)."""

    def __init__(self, app: ASGIApp, request: ApiRequest, headers: dict[str, str]) -> None:
        path, _, query = request.target.partition("?")
        all_headers = {**request.headers(), **headers}
        if request.body is not None:
            all_headers["Content-Length"] = str(len(request.body))
        self.scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": "http",
            "path": unquote(path),
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in all_headers.items()],
            "client": ("127.0.0.1", 0),
            "server": ("kubelite.in-process", 80),
        }
        self._body = request.body or b""
        self._body_sent = False
        self._done = asyncio.Event()
        self._messages: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
        self._task = asyncio.ensure_future(app(self.scope, self._receive, self._send))
        self._task.add_done_callback(lambda _: self._messages.put_nowait({"type": _END}))

    async def _receive(self) -> MutableMapping[str, Any]:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self._body, "more_body": False}
        await self._done.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: MutableMapping[str, Any]) -> None:
        await self._messages.put(message)

    async def _next(self) -> MutableMapping[str, Any]:
        message = await self._messages.get()
        if message["type"] == _END:
            self._task.result()  # the app's own exception, if it raised one
            raise RuntimeError("the ASGI app ended without completing its response")
        return message

    async def start(self) -> int:
        message = await self._next()
        if message["type"] != "http.response.start":
            raise RuntimeError(f"the ASGI app sent {message['type']} before its response start")
        return int(message["status"])

    async def chunks(self) -> AsyncIterator[bytes]:
        while True:
            message = await self._next()
            if message.get("body"):
                yield bytes(message["body"])
            if not message.get("more_body"):
                return

    async def close(self) -> None:
        self._done.set()
        if not self._task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            except TimeoutError:
                self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


class ASGITransport:
    """Requests handed to an ASGI application in this process (for example kubelite's server
    app, built by the caller: the client never imports the server). ``headers`` are added to
    every request (a bearer token, if the app checks one)."""

    def __init__(self, app: ASGIApp, headers: dict[str, str] | None = None) -> None:
        self.app = app
        self.headers = dict(headers or {})

    async def send(self, request: ApiRequest) -> ApiResponse:
        exchange = _Exchange(self.app, request, self.headers)
        try:
            status = await exchange.start()
            return ApiResponse(status, b"".join([c async for c in exchange.chunks()]))
        finally:
            await exchange.close()

    async def stream(self, request: ApiRequest) -> AsyncGenerator[bytes, None]:
        exchange = _Exchange(self.app, request, self.headers)
        try:
            status = await exchange.start()
            if status != 200:
                raise error_for(status, b"".join([c async for c in exchange.chunks()]))
            async for chunk in exchange.chunks():
                yield chunk
        finally:
            await exchange.close()

    async def close(self) -> None:
        return None


class ThreadedASGITransport:
    """The sync client's in-process transport: the ASGI app runs on ``loop`` in another thread
    (the loop that owns the app's store); each call crosses to it and waits."""

    def __init__(self, transport: ASGITransport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self.loop = loop

    def _wait(self, coroutine: Awaitable[Any]) -> Any:
        async def run() -> Any:
            return await coroutine

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result()

    def send(self, request: ApiRequest) -> ApiResponse:
        response: ApiResponse = self._wait(self.transport.send(request))
        return response

    def stream(self, request: ApiRequest) -> Iterator[bytes]:
        chunks = self.transport.stream(request)
        try:
            while True:
                try:
                    chunk: bytes = self._wait(chunks.__anext__())
                except StopAsyncIteration:
                    return
                yield chunk
        finally:
            self._wait(chunks.aclose())

    def close(self) -> None:
        return None
