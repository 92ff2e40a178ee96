"""``Client``: the blocking client (urllib3), for scripts, tests and threads.

Each method runs one operation from :mod:`kubelite.client.operations`; the async client runs the
same operations, so the two behave alike by construction.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping
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
    ASGIApp,
    ASGITransport,
    SyncTransport,
    ThreadedASGITransport,
    Urllib3Transport,
)

T = TypeVar("T")


class Watch:
    """A watch stream: iterate for :class:`WatchEvent` s; an ERROR event raises its
    :class:`~kubelite.client.errors.ApiError` (``Expired`` for 410). Close it (or use ``with``)
    to drop the connection early."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._decoder = WatchDecoder()
        self._ready: list[WatchEvent] = []

    def __iter__(self) -> Iterator[WatchEvent]:
        return self

    def __next__(self) -> WatchEvent:
        while not self._ready:
            self._decoder.raise_error()  # an ERROR that came after the events handed out
            self._ready = self._decoder.feed(next(self._chunks))
            self._ready.reverse()
        return self._ready.pop()

    def close(self) -> None:
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Client:
    """A blocking Kubernetes client.

    ``Client(connection)`` with a :class:`Connection` or a URL; ``Client.from_kubeconfig()``;
    ``Client.in_process(app, loop)`` for an ASGI app running on ``loop`` in another thread.
    ``namespace`` is the default for namespaced kinds (a kubeconfig's context namespace, else
    ``default``); pass ``"*"`` to list or watch across namespaces.
    """

    def __init__(
        self,
        connection: Connection | str | None = None,
        *,
        transport: SyncTransport | None = None,
        namespace: str | None = None,
        field_manager: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if isinstance(connection, str):
            connection = Connection(server=connection.rstrip("/"))
        if transport is None:
            if connection is None:
                raise TypeError("Client needs a connection, a URL or a transport")
            transport = Urllib3Transport(connection, timeout)
        default_namespace = namespace or (connection.namespace if connection else "default")
        self.transport = transport
        self.ops = Operations(default_namespace, field_manager)

    @classmethod
    def from_kubeconfig(
        cls, path: str | Path | None = None, context: str | None = None, **options: Any
    ) -> Client:
        return cls(load_kubeconfig(path, context), **options)

    @classmethod
    def in_process(
        cls,
        app: ASGIApp,
        loop: asyncio.AbstractEventLoop,
        headers: dict[str, str] | None = None,
        **options: Any,
    ) -> Client:
        transport = ThreadedASGITransport(ASGITransport(app, headers), loop)
        return cls(transport=transport, **options)

    @property
    def namespace(self) -> str:
        return self.ops.namespace

    def _run(self, op: Op[T]) -> T:
        try:
            step = next(op)
            while True:
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                    step = op.send(None)
                else:
                    step = op.send(self.transport.send(step))
        except StopIteration as stop:
            result: T = stop.value
            return result
        finally:
            op.close()

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- verbs (see Operations for what each does) -------------------------------------------

    def resource(self, api_version: str, kind: str) -> ResourceType:
        return self._run(self.ops.resolve(api_version, kind))

    def request(
        self, method: str, path: str, query: list[tuple[str, str]] | None = None, body: Any = None
    ) -> Any:
        return self._run(self.ops.request(method, path, query, body))

    def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Object:
        return self._run(self.ops.get(api_version, kind, name, namespace, subresource))

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, **options: Any
    ) -> Object:
        """``label_selector``, ``field_selector``, ``limit`` (page size, 0 for one request)."""
        return self._run(self.ops.list(api_version, kind, namespace, **options))

    def create(
        self, obj: Mapping[str, Any], namespace: str | None = None, dry_run: bool = False
    ) -> Object:
        return self._run(self.ops.create(obj, namespace, dry_run))

    def update(
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
            return self._run(self.ops.update_with(target, mutate, backoff, subresource))
        if isinstance(target, Ref):
            raise TypeError("update(ref) needs a mutate function")
        return self._run(self.ops.replace(target, subresource))

    def update_three_way(
        self, base: Mapping[str, Any], mine: Mapping[str, Any], backoff: Backoff = DEFAULT_RETRY
    ) -> Object:
        return self._run(self.ops.update_three_way(base, mine, backoff))

    def patch(
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
        return self._run(self.ops.patch(api_version, kind, name, patch, namespace, **options))

    def apply(
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
        return self._run(
            self.ops.apply(
                obj,
                field_manager=field_manager,
                force=force,
                dry_run=dry_run,
                subresource=subresource,
            )
        )

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, **options: Any
    ) -> Object:
        """``propagation_policy``, ``grace_period_seconds``, ``preconditions``, ``dry_run``."""
        return self._run(self.ops.delete(api_version, kind, name, namespace, **options))

    def watch(
        self, api_version: str, kind: str, namespace: str | None = None, **options: Any
    ) -> Watch:
        """``name``, ``resource_version``, ``label_selector``, ``field_selector``,
        ``timeout_seconds``, ``allow_bookmarks``, ``send_initial_events``."""
        request: ApiRequest = self._run(
            self.ops.watch_request(api_version, kind, namespace, **options)
        )
        return Watch(self.transport.stream(request))
