"""``AsyncClient``: the asyncio client (aiohttp), the one informers and controllers use.

The same operations as :class:`~kubelite.client.Client` (see :mod:`kubelite.client.operations`),
driven with ``await``. ``AsyncClient(app=...)`` talks to an ASGI application in this process
instead of over the network.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from kubelite.client.core import ApiRequest, Op, Sleep, WatchDecoder, WatchEvent
from kubelite.client.discovery import ResourceType
from kubelite.client.kubeconfig import Connection, load_kubeconfig
from kubelite.client.objects import Object, Ref
from kubelite.client.operations import Mutate, Operations
from kubelite.client.retry import DEFAULT_RETRY, Backoff
from kubelite.client.transports import (
    DEFAULT_TIMEOUT,
    AiohttpTransport,
    ASGIApp,
    ASGITransport,
    AsyncTransport,
)

T = TypeVar("T")


class AsyncWatch:
    """A watch stream: ``async for event in watch``; an ERROR event raises its
    :class:`~kubelite.client.errors.ApiError` (``Expired`` for 410). The request is sent on the
    first iteration. ``async with`` (or ``aclose``) drops the connection early."""

    def __init__(self, client: AsyncClient, opening: Op[ApiRequest]) -> None:
        self._client = client
        self._opening: Op[ApiRequest] | None = opening
        self._chunks: AsyncGenerator[bytes, None] | None = None
        self._decoder = WatchDecoder()
        self._ready: list[WatchEvent] = []

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __anext__(self) -> WatchEvent:
        if self._chunks is None:
            if self._opening is None:
                raise StopAsyncIteration
            request = await self._client._run(self._opening)
            self._opening = None
            self._chunks = self._client.transport.stream(request)
        while not self._ready:
            self._decoder.raise_error()  # an ERROR that came after the events handed out
            self._ready = self._decoder.feed(await self._chunks.__anext__())
            self._ready.reverse()
        return self._ready.pop()

    async def aclose(self) -> None:
        self._opening = None
        if self._chunks is not None:
            await self._chunks.aclose()

    async def __aenter__(self) -> AsyncWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class AsyncClient:
    """An asyncio Kubernetes client.

    ``AsyncClient(connection)`` with a :class:`Connection` or a URL;
    ``AsyncClient.from_kubeconfig()``; ``AsyncClient(app=asgi_app)`` in process. ``namespace``
    is the default for namespaced kinds; ``"*"`` lists or watches across namespaces. Use it
    inside the loop it will run on, and close it (``async with``) when done.
    """

    def __init__(
        self,
        connection: Connection | str | None = None,
        *,
        app: ASGIApp | None = None,
        headers: dict[str, str] | None = None,
        transport: AsyncTransport | None = None,
        namespace: str | None = None,
        field_manager: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if isinstance(connection, str):
            connection = Connection(server=connection.rstrip("/"))
        if transport is None:
            if app is not None:
                transport = ASGITransport(app, headers)
            elif connection is not None:
                transport = AiohttpTransport(connection, timeout)
            else:
                raise TypeError("AsyncClient needs a connection, a URL, an app or a transport")
        default_namespace = namespace or (connection.namespace if connection else "default")
        self.transport = transport
        self.ops = Operations(default_namespace, field_manager)

    @classmethod
    def from_kubeconfig(
        cls, path: str | Path | None = None, context: str | None = None, **options: Any
    ) -> AsyncClient:
        return cls(load_kubeconfig(path, context), **options)

    @property
    def namespace(self) -> str:
        return self.ops.namespace

    async def _run(self, op: Op[T]) -> T:
        try:
            step = next(op)
            while True:
                if isinstance(step, Sleep):
                    await asyncio.sleep(step.seconds)
                    step = op.send(None)
                else:
                    step = op.send(await self.transport.send(step))
        except StopIteration as stop:
            result: T = stop.value
            return result
        finally:
            op.close()

    async def close(self) -> None:
        await self.transport.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- verbs (see Operations for what each does) -------------------------------------------

    async def resource(self, api_version: str, kind: str) -> ResourceType:
        return await self._run(self.ops.resolve(api_version, kind))

    async def request(
        self, method: str, path: str, query: list[tuple[str, str]] | None = None, body: Any = None
    ) -> Any:
        return await self._run(self.ops.request(method, path, query, body))

    async def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Object:
        return await self._run(self.ops.get(api_version, kind, name, namespace, subresource))

    async def list(
        self, api_version: str, kind: str, namespace: str | None = None, **options: Any
    ) -> Object:
        """``label_selector``, ``field_selector``, ``limit`` (page size, 0 for one request)."""
        return await self._run(self.ops.list(api_version, kind, namespace, **options))

    async def create(
        self, obj: Mapping[str, Any], namespace: str | None = None, dry_run: bool = False
    ) -> Object:
        return await self._run(self.ops.create(obj, namespace, dry_run))

    async def update(
        self,
        target: Mapping[str, Any] | Ref,
        mutate: Mutate | None = None,
        *,
        backoff: Backoff = DEFAULT_RETRY,
        subresource: str | None = None,
    ) -> Object:
        """``update(obj)``: PUT ``obj`` as it is (409 if its resourceVersion is stale).
        ``update(ref_or_obj, mutate)``: read, mutate, write, retried on conflict."""
        if mutate is not None:
            return await self._run(self.ops.update_with(target, mutate, backoff, subresource))
        if isinstance(target, Ref):
            raise TypeError("update(ref) needs a mutate function")
        return await self._run(self.ops.replace(target, subresource))

    async def update_three_way(
        self, base: Mapping[str, Any], mine: Mapping[str, Any], backoff: Backoff = DEFAULT_RETRY
    ) -> Object:
        return await self._run(self.ops.update_three_way(base, mine, backoff))

    async def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        **options: Any,
    ) -> Object:
        """``patch_type`` (merge, json, strategic, apply), ``subresource``, ``force``,
        ``dry_run``, ``field_manager``. For server-side apply, prefer :meth:`apply`."""
        return await self._run(self.ops.patch(api_version, kind, name, patch, namespace, **options))

    async def apply(
        self,
        obj: Mapping[str, Any],
        *,
        field_manager: str,
        force: bool = False,
        dry_run: bool = False,
        subresource: str | None = None,
    ) -> Object:
        """Server-side apply ``obj`` (created if missing) as ``field_manager`` (required);
        returns the object. A field another manager owns raises ``Conflict`` with ``causes``
        naming each field and owner, unless ``force=True`` (take them over). See
        :meth:`Operations.apply <kubelite.client.operations.Operations.apply>`."""
        return await self._run(
            self.ops.apply(
                obj,
                field_manager=field_manager,
                force=force,
                dry_run=dry_run,
                subresource=subresource,
            )
        )

    async def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, **options: Any
    ) -> Object:
        """``propagation_policy``, ``grace_period_seconds``, ``preconditions``, ``dry_run``."""
        return await self._run(self.ops.delete(api_version, kind, name, namespace, **options))

    def watch(
        self, api_version: str, kind: str, namespace: str | None = None, **options: Any
    ) -> AsyncWatch:
        """``name``, ``resource_version``, ``label_selector``, ``field_selector``,
        ``timeout_seconds``, ``allow_bookmarks``, ``send_initial_events``."""
        return AsyncWatch(self, self.ops.watch_request(api_version, kind, namespace, **options))
