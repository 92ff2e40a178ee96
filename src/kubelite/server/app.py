"""The ASGI application: the filter chain (:mod:`filters`) around the routes (:mod:`routes`),
and the lifespan protocol. Built by :func:`kubelite.server.assembly.assemble`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from kubelite.api.auth.authorizer import Authorizer
from kubelite.api.catalogue import Catalogue
from kubelite.api.machinery.registry import Registry
from kubelite.server.faults import Faults
from kubelite.server.filters import (
    Auditor,
    Authenticator,
    Metrics,
    RequestLog,
    build_chain,
)
from kubelite.server.flowcontrol.config import FlowControl
from kubelite.server.handlers import Handlers
from kubelite.server.healthz import Health
from kubelite.server.messages import Receive, Request, Scope, Send
from kubelite.server.overload import Limits
from kubelite.server.routes import Routes


class KubeliteApp:
    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        authenticator: Authenticator | None,
        *,
        authorizer: Authorizer | None = None,
        anonymous: bool = False,
        auditor: Auditor | None = None,
        metrics: Metrics | None = None,
        request_log: RequestLog | None = None,
        metrics_document: Callable[[], Awaitable[bytes]] | None = None,
        limits: Limits | None = None,
        health: Health | None = None,
        shutting_down: asyncio.Event | None = None,
        faults: Faults | None = None,
        flow_control: FlowControl | None = None,
    ) -> None:
        self.registry = registry
        self.catalogue = catalogue
        #: set when the server stops: open watch streams end, /readyz fails
        self.shutting_down = shutting_down or asyncio.Event()
        #: the tasks serving requests now
        self._active: set[asyncio.Task[Any]] = set()
        health = health or Health.standard(registry.store, _synced, self.shutting_down)
        handlers = Handlers(self.shutting_down, faults)
        routes = Routes(registry, catalogue, handlers, health, metrics_document)
        self.handle = build_chain(
            routes,
            authenticator=authenticator,
            authorizer=authorizer,
            anonymous=anonymous,
            auditor=auditor,
            metrics=metrics,
            request_log=request_log,
            limits=limits,
            faults=faults,
            flow_control=flow_control,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        task = asyncio.current_task()
        if task is not None:
            self._active.add(task)
        try:
            await self.handle(Request(scope, receive), send)
        finally:
            if task is not None:
                self._active.discard(task)

    def cut_requests(self) -> int:
        """Cancel every request still being served (a stopping server's drain time is over);
        how many there were."""
        active = list(self._active)
        for task in active:
            task.cancel()
        return len(active)


async def _synced() -> None:
    """informer-sync for an app built without controllers."""
    return
