"""Routing, after the filter chain: the non-resource paths (health, /version, discovery,
OpenAPI, kubelite's admin endpoint) and resource requests, resolved through the catalogue to the
storage that serves the resource or subresource, then handed to the verb's handler."""

from __future__ import annotations

import asyncio

from kubelite.api import errors
from kubelite.api import resourceversion as rv
from kubelite.api.catalogue import Catalogue
from kubelite.api.registry import Registry
from kubelite.server import discovery, openapi
from kubelite.server.handlers import Handlers, Target
from kubelite.server.healthz import Health
from kubelite.server.messages import Request, Send, send_json

COMPACT_PATH = "/kubelite/v1/compact"
#: Verbs that act on one object: a collection path does not serve them.
NAMED_VERBS = frozenset({"update", "patch"})
#: What a namespaced resource serves across all namespaces (kube routes nothing else there).
ALL_NAMESPACES_VERBS = frozenset({"list", "watch"})


class Routes:
    def __init__(
        self, registry: Registry, catalogue: Catalogue, handlers: Handlers, health: Health
    ) -> None:
        self.registry = registry
        self.catalogue = catalogue
        self.handlers = handlers
        self.health = health

    async def __call__(self, request: Request, send: Send) -> None:
        if request.info.is_resource_request:
            await self.handlers.serve(request, send, self.target(request))
            return
        path = request.path.rstrip("/") or "/"
        if self.health.handles(path):
            await self.health.serve(request, send, path)
            return
        if path == "/version":
            await send_json(send, 200, discovery.version())
            return
        if path == COMPACT_PATH:
            await self.compact(request, send)
            return
        if path == openapi.V2_PATH:
            await self.openapi_v2(request, send)
            return
        document = discovery.document(self.catalogue, self.registry.storages, path)
        if document is None and path.startswith("/openapi/"):
            document = openapi.openapi_document(self.catalogue, path, request.query)
        if document is None:
            raise errors.path_not_found()
        await send_json(send, 200, document)

    def target(self, request: Request) -> Target:
        """The resource a resource request names and the storage serving it; 404 for paths
        that name none, or name one in a scope it does not have."""
        ri = request.info
        info = self.catalogue.lookup(ri.api_group, ri.api_version, ri.resource)
        storage = None if info is None else self.registry.storage(info, ri.subresource)
        if info is None or storage is None:
            raise errors.path_not_found()
        if info.namespaced and ri.name and not ri.namespace:
            raise errors.path_not_found()
        if not info.namespaced and ri.namespace_path:
            raise errors.path_not_found()
        if ri.verb in NAMED_VERBS and not ri.name:
            raise errors.method_not_allowed()  # PUT or PATCH of a collection
        if info.namespaced and not ri.namespace and ri.verb not in ALL_NAMESPACES_VERBS:
            raise errors.method_not_allowed()  # /api/v1/configmaps serves list and watch only
        return Target(request, info, storage)

    async def openapi_v2(self, request: Request, send: Send) -> None:
        """``GET /openapi/v2`` as kube-openapi's handler serves it: JSON or gnostic protobuf by
        ``Accept`` (406 with an empty body for anything else), ``Vary: Accept``, the quoted
        ETag shared by both forms, and 304 when ``If-None-Match`` names it (or is ``*``)."""
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed()
        media = openapi.negotiate_v2(request.headers.get("accept", ""))
        vary = (b"vary", b"Accept")
        if media is None:
            await send({"type": "http.response.start", "status": 406, "headers": [vary]})
            await send({"type": "http.response.body", "body": b""})
            return
        # Building the document (first request after a change) and its protobuf form takes a
        # fraction of a second: off the event loop, from a snapshot of the catalogue.
        document = await asyncio.to_thread(openapi.swagger, tuple(self.catalogue))
        etag = f'"{document.etag}"'.encode()
        headers = [vary, (b"etag", etag)]
        wanted = request.headers.get("if-none-match", "")
        if wanted and any(
            tag.strip().removeprefix("W/") in (etag.decode(), "*") for tag in wanted.split(",")
        ):
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return
        if media == openapi.V2_JSON:
            body = document.json
        else:
            body = await asyncio.to_thread(lambda: document.protobuf)
        headers += [
            (b"content-type", media.encode()),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b"" if request.method == "HEAD" else body}
        )

    async def compact(self, request: Request, send: Send) -> None:
        """``POST /kubelite/v1/compact?revision=N``: drop history below N (an admin action)."""
        if request.method != "POST":
            raise errors.method_not_allowed()
        text = request.query.get("revision", "")
        try:
            revision = rv.parse(text)
        except rv.BadResourceVersion:
            revision = 0
        if not revision:
            raise errors.bad_request(f"revision must be a positive integer, not {text!r}")
        await self.registry.compact(revision)
        message = f"history compacted up to revision {revision}"
        await send_json(send, 200, errors.success_body(message))
