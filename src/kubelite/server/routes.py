"""Routing, after the filter chain: the non-resource paths (health, /version, discovery,
OpenAPI, kubelite's admin endpoint) and resource requests, resolved through the catalogue to the
storage that serves the resource or subresource, then handed to the verb's handler."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Awaitable, Callable

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue
from kubelite.api.catalogue.extra import DEPRECATED_VERSIONS
from kubelite.api.encoding import resourceversion as rv
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.validation import warning_headers
from kubelite.server import discovery, openapi
from kubelite.server.handlers import Handlers, Target
from kubelite.server.healthz import Health
from kubelite.server.messages import Request, Send, send_json

COMPACT_PATH = "/kubelite/v1/compact"
METRICS_PATH = "/metrics"
METRICS_CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
#: Verbs that act on one object: a collection path does not serve them.
NAMED_VERBS = frozenset({"update", "patch"})
#: What a namespaced resource serves across all namespaces (kube routes nothing else there).
ALL_NAMESPACES_VERBS = frozenset({"list", "watch"})


class Routes:
    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        handlers: Handlers,
        health: Health,
        metrics: Callable[[], Awaitable[bytes]] | None = None,
    ) -> None:
        self.registry = registry
        self.catalogue = catalogue
        self.handlers = handlers
        self.health = health
        #: the ``/metrics`` document (none: the path is not served)
        self.metrics = metrics

    async def __call__(self, request: Request, send: Send) -> None:
        if request.info.is_resource_request:
            target = self.target(request)
            deprecated = DEPRECATED_VERSIONS.get(
                (target.info.group, target.info.version, target.info.plural)
            )
            if deprecated is not None:
                # apiserver's installer: every request to a deprecated version, errors too
                request.extra_headers = (*request.extra_headers, *warning_headers([deprecated]))
            await self.handlers.serve(request, send, target)
            return
        path = request.path.rstrip("/") or "/"
        if self.health.handles(path):
            await self.health.serve(request, send, path)
            return
        if path == "/version":
            await send_json(send, 200, discovery.version())
            return
        if path == METRICS_PATH and self.metrics is not None:
            await self.serve_metrics(request, send, self.metrics)
            return
        if path == COMPACT_PATH:
            await self.compact(request, send)
            return
        if path == openapi.V2_PATH:
            await self.openapi_v2(request, send)
            return
        if path.startswith(openapi.ROOT_PATH + "/"):
            await self.openapi_v3(request, send)
            return
        if path == openapi.ROOT_PATH:
            await send_json(send, 200, openapi.root(self.catalogue))
            return
        document = discovery.document(self.catalogue, self.registry.storages, path)
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
            await _empty(send, 406, [vary])
            return
        # Building the document (first request after a change) and its protobuf form takes a
        # fraction of a second: off the event loop, from a snapshot of the catalogue.
        document = await asyncio.to_thread(openapi.swagger, tuple(self.catalogue))
        etag = f'"{document.etag}"'.encode()
        headers = [vary, (b"etag", etag)]
        if _matches(request.headers.get("if-none-match", ""), etag.decode()):
            await _empty(send, 304, headers)
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

    async def openapi_v3(self, request: Request, send: Send) -> None:
        """``GET /openapi/v3/<group-version>`` as kube-openapi's handler3 serves it: 404 with an
        empty body for a group-version not served, 406 for an ``Accept`` without JSON, the
        quoted ETag, a 301 to the current ``?hash=`` when the one asked for is stale, and with a
        current hash ``Cache-Control: public, immutable`` for a year; 304 when
        ``If-None-Match`` names the ETag."""
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed()
        found = await asyncio.to_thread(
            openapi.group_version_document, self.catalogue, request.path
        )
        if found is None:
            await _empty(send, 404, [])
            return
        media = openapi.negotiate_v3(request.headers.get("accept", ""))
        if media is None:
            await _empty(send, 406, [])
            return
        etag = f'"{found.etag}"'
        headers = [(b"etag", etag.encode())]
        wanted_hash = request.query.get("hash", "")
        if wanted_hash:
            if wanted_hash != found.etag:
                location = f"{request.path.rstrip('/')}?hash={found.etag}"
                page = f'<a href="{location}">Moved Permanently</a>.\n\n'.encode()
                headers += [
                    (b"location", location.encode()),
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(len(page)).encode()),
                ]
                await send({"type": "http.response.start", "status": 301, "headers": headers})
                body = b"" if request.method == "HEAD" else page
                await send({"type": "http.response.body", "body": body})
                return
            expires = email.utils.formatdate(time.time() + 365 * 86400, usegmt=True)
            headers += [
                (b"vary", b"Accept"),
                (b"cache-control", b"public, immutable"),
                (b"expires", expires.encode()),
            ]
        headers.append(
            (b"last-modified", email.utils.formatdate(found.built, usegmt=True).encode())
        )
        if _matches(request.headers.get("if-none-match", ""), etag):
            await _empty(send, 304, headers)
            return
        headers += [
            (b"content-type", media.encode()),
            (b"content-length", str(len(found.json)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = b"" if request.method == "HEAD" else found.json
        await send({"type": "http.response.body", "body": body})

    async def serve_metrics(
        self, request: Request, send: Send, document: Callable[[], Awaitable[bytes]]
    ) -> None:
        """``GET /metrics``: the Prometheus text format (kube's legacyregistry handler)."""
        if request.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed()
        body = await document()
        headers = [
            (b"content-type", METRICS_CONTENT_TYPE),
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


def _matches(if_none_match: str, etag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``etag`` (quoted; weak tags compare equal,
    as net/http's ServeContent has it) or is ``*``."""
    return any(
        tag.strip().removeprefix("W/") in (etag, "*") for tag in if_none_match.split(",") if tag
    )


async def _empty(send: Send, status: int, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
