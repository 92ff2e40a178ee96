"""A bare ASGI application: the Kubernetes REST API over the registry.

One thin handler per verb: parse the request, call the registry, encode the answer. Every error
becomes a ``Status`` body through :func:`kubelite.api.errors.status_body`; an unexpected
exception becomes a 500 Status and is logged, and the server keeps serving.
"""

from __future__ import annotations

import asyncio
import builtins
import hmac
import logging
import random
from collections.abc import Callable
from typing import Any

import orjson

from kubelite.api import authn, errors, reviews, validation
from kubelite.api import resourceversion as rv
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.errors import APIError
from kubelite.api.listing import ListOptions, ListScan, parse_rv_query
from kubelite.api.namespaces import NamespaceLifecycle
from kubelite.api.registry import Registry
from kubelite.api.scale import get_scale, write_scale
from kubelite.api.selectors import SelectorError, parse_field_selector, parse_label_selector
from kubelite.api.watchcache import (
    WatchCacheSet,
    parse_send_initial_events,
    validate_watch_options,
)
from kubelite.server import discovery
from kubelite.server.messages import (
    JSON,
    PATCH_TYPES,
    Receive,
    Request,
    Scope,
    Send,
    send_error,
    send_json,
)
from kubelite.server.openapi import openapi_document
from kubelite.server.routing import ResourcePath, parse_resource_path
from kubelite.server.streaming import ChunkBatcher
from kubelite.server.table import CONTENT_TYPE as TABLE_CONTENT_TYPE
from kubelite.server.table import table, wants_table
from kubelite.storage import Unavailable

log = logging.getLogger(__name__)

# Core kinds whose DELETE answers with the object rather than a Status (kube-apiserver's
# graceful-deletion and namespace strategies).
RETURN_OBJECT_ON_DELETE = frozenset({"pods", "services"})
PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")  # open, as is /version


class KubeliteApp:
    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        token: str | None,
        namespaces: NamespaceLifecycle | None = None,
        caches: WatchCacheSet | None = None,
    ) -> None:
        self.registry = registry
        # ``is None``: an empty WatchCacheSet is falsy (it has a length)
        self.caches = caches if caches is not None else WatchCacheSet(registry.store)
        self.namespaces = (
            namespaces if namespaces is not None else NamespaceLifecycle(registry, catalogue)
        )
        self.catalogue = catalogue
        self.token = token
        self._admin_header = f"Bearer {token}".encode()
        self.service_account_tokens = authn.ServiceAccountTokens(token) if token else None
        self.shutting_down = asyncio.Event()

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
        request = Request(scope, receive)
        try:
            await self.handle(request, send)
        except APIError as exc:
            await send_error(send, exc)
        except Unavailable as exc:  # the store did not answer (etcd lost quorum, say): retry
            log.warning("storage unavailable serving %s %s: %s", request.method, request.path, exc)
            await send_error(send, errors.timeout(str(exc), retry_after=1))
        except Exception as exc:  # never let one request take the server down
            log.exception("internal error serving %s %s", request.method, request.path)
            await send_error(send, errors.internal(f"Internal error occurred: {exc}"))

    async def handle(self, request: Request, send: Send) -> None:
        path = request.path.rstrip("/") or "/"
        if path in HEALTH_PATHS:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", b"text/plain")],
                }
            )
            await send({"type": "http.response.body", "body": b"ok"})
            return
        if path == "/version":
            await send_json(send, 200, discovery.version())
            return
        await self.authenticate(request)
        if path == "/kubelite/v1/compact":
            await self.compact(request, send)
            return
        document = discovery.document(self.catalogue, path)
        if document is None and path.startswith("/openapi/"):
            document = openapi_document(self.catalogue, path, request.query)
        if document is not None:
            await send_json(send, 200, document)
            return
        target = parse_resource_path(path)
        if target is None:
            raise errors.path_not_found()
        info = self.catalogue.lookup(target.group, target.version, target.plural)
        if info is None or (target.subresource and target.subresource not in info.subresources):
            raise errors.path_not_found()
        await self.dispatch(request, send, info, target)

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

    async def authenticate(self, request: Request) -> None:
        """Set ``request.user``: the admin (the kubeconfig's token) or a service account (a
        token from serviceaccounts/<name>/token); anything else is kube-apiserver's 401."""
        if self.token is None:
            return
        header = request.headers.get("authorization", "").encode()
        if hmac.compare_digest(header, self._admin_header):
            return
        user = await self.token_user(header[7:].decode()) if header[:7] == b"Bearer " else None
        if user is None:
            raise errors.unauthorized()
        request.user = user

    async def token_user(self, token: str) -> authn.User | None:
        """The user a bearer token authenticates (also what a TokenReview asks), or None."""
        if self.token is not None and hmac.compare_digest(token.encode(), self.token.encode()):
            return authn.ADMIN
        claim = self.service_account_tokens.verify(token) if self.service_account_tokens else None
        if claim is None or authn.API_AUDIENCE not in claim.audiences:
            return None
        try:
            account = await self.registry.get(
                self.catalogue_service_accounts(), claim.namespace, claim.name
            )
        except APIError:
            return None
        return claim.user() if account["metadata"].get("uid") == claim.uid else None

    async def token_request(self, request: Request, send: Send, ns: str | None, name: str) -> None:
        """``POST .../serviceaccounts/<name>/token``: a TokenRequest answered with a token."""
        assert self.service_account_tokens is not None
        body = await request.json_object()
        account = await self.registry.get(self.catalogue_service_accounts(), ns, name)
        response = authn.token_request_response(self.service_account_tokens, account, body)
        await send_json(send, 201, response)

    def catalogue_service_accounts(self) -> ResourceInfo:
        info = self.catalogue.lookup("", "v1", "serviceaccounts")
        assert info is not None
        return info

    async def dispatch(
        self, request: Request, send: Send, info: ResourceInfo, target: ResourcePath
    ) -> None:
        _check_verb(request, info, target)
        method, name, ns = request.method, target.name, target.namespace
        if info.namespaced and name is not None and ns is None:
            raise errors.path_not_found()
        if not info.namespaced and ns is not None:
            raise errors.path_not_found()
        if name is None:
            await self.collection(request, send, info, target.legacy_watch, ns)
            return
        if target.subresource == "scale":
            await self.scale(request, send, info, ns, name)
            return
        if target.subresource == "token" and self.service_account_tokens is not None:
            await self.token_request(request, send, ns, name)
            return
        is_namespace = info.group == "" and info.plural == "namespaces"
        if is_namespace and await self.namespace_verb(request, send, name, target.subresource):
            return
        if method == "GET":
            if target.legacy_watch or request.flag("watch"):
                await self.watch(request, send, info, ns, name=name)
                return
            obj = await self.registry.get(info, ns, name)
            await self.send_objects(request, send, info, [obj], obj, rv.of(obj))
            return
        if method == "PUT":
            mode = validation.directive(request.query, "update")
            body = await request.json_object()
            warnings = _check_fields(info, mode, request.raw, body)
            obj, created = await self.registry.update(
                info, ns, name, body, subresource=target.subresource, dry_run=_dry_run(request)
            )
            await send_json(send, 201 if created else 200, obj, warnings)
            return
        if method == "PATCH":
            content_type = request.headers.get("content-type", "").split(";")[0].strip()
            if content_type not in PATCH_TYPES:
                raise errors.unsupported_media_type(list(PATCH_TYPES))
            mode = validation.directive(request.query, "patch")
            patch = await request.json()
            found: list[str] = []

            def check(patched: dict[str, Any]) -> None:
                errs = [] if mode == "Ignore" else validation.strict_errors(info, patched)
                if errs and mode == "Strict":
                    raise validation.patch_validation_error(patched, errs)
                found[:] = errs

            obj = await self.registry.patch(
                info,
                ns,
                name,
                content_type,
                patch,
                subresource=target.subresource,
                dry_run=_dry_run(request),
                check=check if info.schema_ref or info.schema else None,
            )
            headers = tuple(validation.warning_headers(validation.warnings_for(found)))
            await send_json(send, 200, obj, headers)
            return
        if method == "DELETE":
            await self.delete(request, send, info, ns, name)
            return
        raise errors.method_not_allowed()

    async def collection(
        self, request: Request, send: Send, info: ResourceInfo, watch: bool, ns: str | None
    ) -> None:
        """The verbs on a collection: list or watch, create, deletecollection."""
        method = request.method
        if method == "GET":
            if watch or request.flag("watch"):
                await self.watch(request, send, info, ns)
            else:
                await self.list(request, send, info, ns)
        elif method == "POST" and reviews.is_review(info):
            body = await request.json_object()
            answer = await reviews.answer(info, ns, body, request.user, self.token_user)
            await send_json(send, 201, answer)
        elif method == "POST":
            mode = validation.directive(request.query, "create")
            body = await request.json_object()
            warnings = _check_fields(info, mode, request.raw, body)
            obj = await self.registry.create(info, ns, body, dry_run=_dry_run(request))
            await send_json(send, 201, obj, warnings)
        elif method == "DELETE":
            await self.delete_collection(request, send, info, ns)
        else:
            raise errors.method_not_allowed()

    async def namespace_verb(
        self, request: Request, send: Send, name: str, subresource: str
    ) -> bool:
        """DELETE of a namespace and PUT of its ``finalize``, which the namespace lifecycle owns;
        False when the request is an ordinary one."""
        if request.method == "DELETE":
            options = await _delete_options(request)
            pre = options.get("preconditions") or {}
            obj = await self.namespaces.delete(
                name,
                precondition_uid=pre.get("uid") or "",
                precondition_rv=pre.get("resourceVersion") or "",
                dry_run=_dry_run(request),
            )
        elif request.method == "PUT" and subresource == "finalize":
            body = await request.json_object()
            obj = await self.namespaces.finalize(name, body, dry_run=_dry_run(request))
        else:
            return False
        await send_json(send, 200, obj)
        return True

    def list_options(self, request: Request) -> ListOptions:
        q = request.query
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            raise errors.bad_request(f"invalid limit: {q.get('limit')}")
        return ListOptions(
            label_selector=self.matcher(request),
            limit=limit,
            continue_token=q.get("continue", ""),
            resource_version=q.get("resourceVersion"),
            resource_version_match=q.get("resourceVersionMatch", ""),
        )

    def matcher(self, request: Request) -> Callable[[dict[str, Any]], bool] | None:
        label_text = request.query.get("labelSelector", "")
        field_text = request.query.get("fieldSelector", "")
        if not label_text and not field_text:
            return None
        try:
            labels = parse_label_selector(label_text)
            fields = parse_field_selector(field_text)
        except SelectorError as exc:
            raise errors.bad_request(str(exc))

        def matches(obj: dict[str, Any]) -> bool:
            meta = obj.get("metadata") or {}
            return labels.matches(meta.get("labels") or {}) and fields.matches(
                {
                    "metadata.name": meta.get("name", ""),
                    "metadata.namespace": meta.get("namespace", ""),
                }
            )

        return matches

    async def list(self, request: Request, send: Send, info: ResourceInfo, ns: str | None) -> None:
        if not wants_table(request.headers.get("accept", "")):
            await self.stream_list(
                send, info, ListScan(self.registry.store, info, ns, self.list_options(request))
            )
            return
        listing = await self.registry.list(info, ns, self.list_options(request))
        meta = listing["metadata"]
        await self.send_objects(
            request,
            send,
            info,
            listing["items"],
            listing,
            meta["resourceVersion"],
            meta.get("continue", ""),
        )

    async def stream_list(self, send: Send, info: ResourceInfo, scan: ListScan) -> None:
        """A List sent page by page as it is read (chunked), so the server never holds a large
        list whole. ``items`` comes before ``metadata``, whose continue token is known last;
        JSON readers do not care about key order. Errors in the first page are ordinary Status
        answers; a later one (the snapshot compacted away mid-list) cuts the response short."""
        pages = scan.pages()
        first = await anext(pages, None)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", JSON), (b"transfer-encoding", b"chunked")],
            }
        )
        head = orjson.dumps({"kind": info.list_kind, "apiVersion": info.group_version})
        chunk = head[:-1] + b',"items":['
        page, separator = first, b""
        while page is not None:
            chunk += separator + b",".join(orjson.dumps(obj) for obj in page)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            chunk, separator = b"", b","
            page = await anext(pages, None)
        tail = b'],"metadata":' + orjson.dumps(scan.metadata) + b"}"
        await send({"type": "http.response.body", "body": chunk + tail, "more_body": False})

    async def send_objects(
        self,
        request: Request,
        send: Send,
        info: ResourceInfo,
        objects: builtins.list[dict[str, Any]],
        plain: dict[str, Any],
        resource_version: str,
        continue_token: str = "",
    ) -> None:
        """``plain`` as JSON, or the objects as a Table when the client asked for one."""
        if not wants_table(request.headers.get("accept", "")):
            await send_json(send, 200, plain)
            return
        include = request.query.get("includeObject", "Metadata")
        body = table(
            info, objects, resource_version, include_object=include, continue_token=continue_token
        )
        await send_json(send, 200, body, content_type=TABLE_CONTENT_TYPE)

    async def scale(
        self, request: Request, send: Send, info: ResourceInfo, ns: str | None, name: str
    ) -> None:
        if request.method == "GET":
            await send_json(send, 200, await get_scale(self.registry, info, ns, name))
        elif request.method == "PUT":
            body = await request.json_object()
            await send_json(send, 200, await write_scale(self.registry, info, ns, name, body=body))
        elif request.method == "PATCH":
            content_type = request.headers.get("content-type", "").split(";")[0].strip()
            if content_type not in PATCH_TYPES:
                raise errors.unsupported_media_type(list(PATCH_TYPES))
            patch = await request.json()
            scale = await write_scale(
                self.registry, info, ns, name, patch_type=content_type, patch=patch
            )
            await send_json(send, 200, scale)
        else:
            raise errors.method_not_allowed()

    async def delete(
        self, request: Request, send: Send, info: ResourceInfo, ns: str | None, name: str
    ) -> None:
        options = await _delete_options(request)
        pre = options.get("preconditions") or {}
        obj, gone = await self.registry.delete(
            info,
            ns,
            name,
            precondition_uid=pre.get("uid") or "",
            precondition_rv=pre.get("resourceVersion") or "",
            dry_run=_dry_run(request) or "All" in (options.get("dryRun") or []),
        )
        if not gone or (info.group == "" and info.plural in RETURN_OBJECT_ON_DELETE):
            await send_json(send, 200, obj)
            return
        details: dict[str, Any] = {"name": name}
        if info.group:
            details["group"] = info.group
        details["kind"] = info.plural
        details["uid"] = obj["metadata"].get("uid", "")
        await send_json(send, 200, errors.success_body(details=details))

    async def delete_collection(
        self, request: Request, send: Send, info: ResourceInfo, ns: str | None
    ) -> None:
        listing = await self.registry.list(info, ns, self.list_options(request))
        dry_run = _dry_run(request)
        for item in listing["items"]:
            meta = item["metadata"]
            try:
                await self.registry.delete(
                    info, meta.get("namespace"), meta["name"], dry_run=dry_run
                )
            except APIError as exc:
                if exc.code != 404:
                    raise
        await send_json(send, 200, listing)

    async def watch(
        self,
        request: Request,
        send: Send,
        info: ResourceInfo,
        ns: str | None,
        name: str | None = None,
    ) -> None:
        matches = self.matcher(request)
        if name is not None:
            matches = _named(name, matches)
        send_initial = parse_send_initial_events(request.query.get("sendInitialEvents"))
        validate_watch_options(
            send_initial,
            request.query.get("resourceVersionMatch", ""),
            continue_token=request.query.get("continue", ""),
        )
        from_revision = parse_rv_query(request.query.get("resourceVersion"))
        timeout_text = request.query.get("timeoutSeconds")
        timeout = float(timeout_text) if timeout_text else random.uniform(1800, 3600)
        events = self.caches.get(info).watch(
            ns,
            from_revision,
            matches,
            send_initial_events=send_initial,
            allow_bookmarks=request.flag("allowWatchBookmarks"),
        )
        as_table = wants_table(request.headers.get("accept", ""))
        include = request.query.get("includeObject", "Metadata")
        out = ChunkBatcher(send)

        async def pump() -> None:
            try:
                async for event in events:
                    obj = event.object
                    if as_table:
                        obj = table(info, [obj], str(event.revision), include_object=include)
                    await out.write(orjson.dumps({"type": event.type, "object": obj}) + b"\n")
            except APIError as exc:  # the stream has begun: errors travel as ERROR events
                await out.write(
                    orjson.dumps({"type": "ERROR", "object": errors.status_body(exc)}) + b"\n"
                )
            await out.flush()

        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", TABLE_CONTENT_TYPE if as_table else JSON),
                    (b"transfer-encoding", b"chunked"),
                ],
            }
        )
        # granian sends the head with the first body chunk: an empty one sends it now, so the
        # client sees 200 before the first event, as from kube-apiserver.
        await send({"type": "http.response.body", "body": b"", "more_body": True})
        pumping = asyncio.ensure_future(pump())
        disconnected = asyncio.ensure_future(_wait_disconnect(request))
        stopping = asyncio.ensure_future(self.shutting_down.wait())
        try:
            done, _ = await asyncio.wait(
                {pumping, disconnected, stopping},
                timeout=timeout,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if pumping in done:
                pumping.result()
        finally:
            for task in (pumping, disconnected, stopping):
                task.cancel()
            await asyncio.gather(pumping, disconnected, stopping, return_exceptions=True)
            await out.aclose()
            await events.aclose()
        await send({"type": "http.response.body", "body": b"", "more_body": False})


_VERBS = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "POST": "create"}
_COLLECTION_VERBS = {"GET": "list", "POST": "create", "DELETE": "deletecollection"}


def _check_verb(request: Request, info: ResourceInfo, target: ResourcePath) -> None:
    """405 for a verb the kind (or subresource) does not serve, as kube-apiserver answers:
    ``get`` of a review, ``create`` of a ComponentStatus, ``delete`` of a Namespace's status."""
    method = request.method
    if target.subresource:
        sub = info.subresource(target.subresource)
        verbs = sub.verbs if sub is not None else ()
    else:
        verbs = info.verbs
    if method == "GET" and (target.legacy_watch or request.flag("watch")):
        verb = "watch"
    elif target.name is None and not target.subresource:
        verb = _COLLECTION_VERBS.get(method, "")
    else:
        verb = _VERBS.get(method, "")
    if verb not in verbs:
        raise errors.method_not_allowed()


def _check_fields(
    info: ResourceInfo, mode: str, raw: bytes, body: dict[str, Any]
) -> tuple[tuple[bytes, bytes], ...]:
    """Strict decoding of a create/update body: 400 under Strict, warnings under Warn."""
    if mode == "Ignore" or not (info.schema_ref or info.schema):
        return ()
    source: bytes | dict[str, Any] = raw if validation.may_repeat_keys(raw, body) else body
    errs = validation.strict_errors(info, source)
    if errs and mode == "Strict":
        raise validation.field_validation_error(info, errs, body)
    return tuple(validation.warning_headers(validation.warnings_for(errs)))


def _named(
    name: str, inner: Callable[[dict[str, Any]], bool] | None
) -> Callable[[dict[str, Any]], bool]:
    """A watch of one object: the path's name, and the selector if there is one."""

    def matches(obj: dict[str, Any]) -> bool:
        same = (obj.get("metadata") or {}).get("name") == name
        return same and (inner is None or inner(obj))

    return matches


async def _wait_disconnect(request: Request) -> None:
    while (await request._receive())["type"] != "http.disconnect":
        pass


def _dry_run(request: Request) -> bool:
    value = request.query.get("dryRun")
    if value is None:
        return False
    if value != "All":
        raise errors.bad_request(f'Unsupported value: "{value}": supported values: "All"')
    return True


async def _delete_options(request: Request) -> dict[str, Any]:
    """DeleteOptions from the body, with ``propagationPolicy`` also taken from the query."""
    raw = await request.body()
    options: Any = {}
    if raw.strip():
        try:
            options = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(f"couldn't decode the DeleteOptions: {exc}")
    if not isinstance(options, dict):
        raise errors.bad_request("DeleteOptions must be a JSON object")
    policy = options.get("propagationPolicy", request.query.get("propagationPolicy"))
    if policy is not None and policy not in PROPAGATION_POLICIES:
        supported = ", ".join(f'"{p}"' for p in PROPAGATION_POLICIES)
        message = f'Unsupported value: "{policy}": supported values: {supported}'
        raise APIError(
            422,
            "Invalid",
            f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: {message}',
            {
                "group": "meta.k8s.io",
                "kind": "DeleteOptions",
                "causes": [
                    {
                        "reason": "FieldValueNotSupported",
                        "message": message,
                        "field": "propagationPolicy",
                    }
                ],
            },
        )
    return options
