"""One handler per verb, generic over storages (kube-apiserver's ``endpoints/handlers``): parse the
request's query and body into options, call the storage, encode the answer.

The verb comes from the request info; the storage serving the resource or subresource decides
whether it is served: a verb whose interface the storage does not implement is a 405
(:func:`kubelite.api.rest.verbs`). Nothing here knows any kind.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from kubelite.api import deletion, errors, validation
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.listing import ListOptions
from kubelite.api.objectmeta import replacement
from kubelite.api.patching import patch_update
from kubelite.api.rest import (
    CollectionDeleter,
    Context,
    Creater,
    DeleteOptions,
    GetOptions,
    Getter,
    GracefulDeleter,
    Lister,
    NamedCreater,
    Patcher,
    Storage,
    Updater,
    Warnings,
    Watcher,
    WatchOptions,
    WriteOptions,
    implements,
)
from kubelite.api.selectors import object_matcher
from kubelite.api.watchcache import parse_send_initial_events, validate_watch_options
from kubelite.server.messages import PATCH_TYPES, Request, Send, send_json
from kubelite.server.responses import send_list, send_object, stream_watch

Obj = dict[str, Any]
Headers = tuple[tuple[bytes, bytes], ...]


class Target:
    """What one resource request works on: the resource, the storage serving it (or its
    subresource), and the context (namespace, user, request info) storages take."""

    def __init__(self, request: Request, info: ResourceInfo, storage: Storage) -> None:
        ri = request.info
        self.info = info
        self.storage = storage
        self.name = ri.name
        self.namespace = ri.namespace if info.namespaced and ri.namespace else None
        self.ctx = Context(self.namespace, request.user, ri)

    def serving(self, interface: type) -> Any:
        """The storage as ``interface``; 405 when it does not implement it."""
        if not implements(self.storage, interface):
            raise errors.method_not_allowed()
        return self.storage

    @property
    def object_info(self) -> ResourceInfo | None:
        return self.storage.object_info


VerbHandler = Callable[[Request, Send, Target], Awaitable[None]]


class Handlers:
    """The verb handlers; ``stopping`` ends watch streams when the server shuts down."""

    def __init__(self, stopping: asyncio.Event) -> None:
        self.stopping = stopping
        self.by_verb: dict[str, VerbHandler] = {
            "get": get,
            "list": list_objects,
            "watch": self.watch,
            "create": create,
            "update": update,
            "patch": patch,
            "delete": delete,
            "deletecollection": delete_collection,
        }

    async def serve(self, request: Request, send: Send, target: Target) -> None:
        handler = self.by_verb.get(request.info.verb)
        if handler is None:
            raise errors.method_not_allowed()
        await handler(request, send, target)

    async def watch(self, request: Request, send: Send, target: Target) -> None:
        watcher: Watcher = target.serving(Watcher)
        q = request.query
        send_initial = parse_send_initial_events(q.get("sendInitialEvents"))
        validate_watch_options(
            send_initial, q.get("resourceVersionMatch", ""), continue_token=q.get("continue", "")
        )
        options = WatchOptions(
            matcher=object_matcher(
                q.get("labelSelector", ""), q.get("fieldSelector", ""), target.name or None
            ),
            resource_version=q.get("resourceVersion"),
            send_initial_events=send_initial,
            allow_bookmarks=request.flag("allowWatchBookmarks"),
        )
        events = watcher.watch(target.ctx, options)
        await stream_watch(
            request, send, target.info, events, _watch_timeout(q), self.stopping.wait()
        )


async def get(request: Request, send: Send, target: Target) -> None:
    getter: Getter = target.serving(Getter)
    obj = await getter.get(
        target.ctx, target.name, GetOptions(request.query.get("resourceVersion"))
    )
    await send_object(request, send, target.object_info, obj)


async def list_objects(request: Request, send: Send, target: Target) -> None:
    lister: Lister = target.serving(Lister)
    scan = lister.list(target.ctx, list_options(request))
    await send_list(request, send, target.info, scan)


async def create(request: Request, send: Send, target: Target) -> None:
    body = await request.json_object()
    warnings = _check_fields(request, target, "create", body)
    options = WriteOptions(dry_run=_dry_run(request))
    if target.name:
        named: NamedCreater = target.serving(NamedCreater)
        obj = await named.create_named(target.ctx, target.name, body, options)
    else:
        creater: Creater = target.serving(Creater)
        obj = await creater.create(target.ctx, body, options)
    await send_object(request, send, target.object_info, obj, 201, warnings)


async def update(request: Request, send: Send, target: Target) -> None:
    updater: Updater = target.serving(Updater)
    body = await request.json_object()
    warnings = _check_fields(request, target, "update", body)
    put = replacement(target.info, target.namespace, target.name, body)
    options = WriteOptions(dry_run=_dry_run(request))
    obj, created = await updater.update(target.ctx, target.name, put, options)
    await send_object(request, send, target.object_info, obj, 201 if created else 200, warnings)


async def patch(request: Request, send: Send, target: Target) -> None:
    patcher: Patcher = target.serving(Patcher)
    content_type = request.headers.get("content-type", "").split(";")[0].strip()
    if content_type not in PATCH_TYPES:
        raise errors.unsupported_media_type(list(PATCH_TYPES))
    mode = validation.directive(request.query, "patch")
    body = await request.json()
    warnings = Warnings()
    patched = patch_update(
        target.info,
        target.name,
        content_type,
        body,
        schema=target.object_info,
        field_validation=mode,
        warnings=warnings,
    )
    options = WriteOptions(dry_run=_dry_run(request))
    obj, _ = await patcher.update(target.ctx, target.name, patched, options)
    headers = tuple(validation.warning_headers(warnings.texts))
    await send_object(request, send, target.object_info, obj, 200, headers)


async def delete(request: Request, send: Send, target: Target) -> None:
    deleter: GracefulDeleter = target.serving(GracefulDeleter)
    options = await _delete_options(request)
    answer, gone = await deleter.delete(target.ctx, target.name, options)
    # kube answers 202 only for the deprecated orphanDependents=false on an object kept
    accepted = not gone and options.orphan_dependents is False
    await send_json(send, 202 if accepted else 200, answer)


async def delete_collection(request: Request, send: Send, target: Target) -> None:
    deleter: CollectionDeleter = target.serving(CollectionDeleter)
    options = await _delete_options(request)
    listing = await deleter.delete_collection(target.ctx, options, list_options(request))
    await send_json(send, 200, listing)


# -- options from the query and body ---------------------------------------------------------


def list_options(request: Request) -> ListOptions:
    q = request.query
    try:
        limit = int(q.get("limit") or 0)
    except ValueError:
        raise errors.bad_request(f"invalid limit: {q.get('limit')}")
    return ListOptions(
        label_selector=object_matcher(q.get("labelSelector", ""), q.get("fieldSelector", "")),
        limit=limit,
        continue_token=q.get("continue", ""),
        resource_version=q.get("resourceVersion"),
        resource_version_match=q.get("resourceVersionMatch", ""),
        send_initial_events=parse_send_initial_events(q.get("sendInitialEvents")),
    )


def _watch_timeout(query: dict[str, str]) -> float:
    """``timeoutSeconds``: absent or 0 is a random 30 to 60 minutes, as kube-apiserver."""
    text = query.get("timeoutSeconds")
    try:
        seconds = int(text) if text else 0
    except ValueError:
        raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    return float(seconds) if seconds > 0 else random.uniform(1800, 3600)


def _dry_run(request: Request) -> bool:
    value = request.query.get("dryRun")
    if value is None:
        return False
    if value != "All":
        raise errors.bad_request(f'Unsupported value: "{value}": supported values: "All"')
    return True


async def _delete_options(request: Request) -> DeleteOptions:
    """DeleteOptions from the body (JSON, may be empty) and the query."""
    raw = await request.body()
    body: Any = None
    if raw.strip():
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(f"couldn't decode the DeleteOptions: {exc}")
    return deletion.options_from(body, request.query, _dry_run(request))


def _check_fields(request: Request, target: Target, operation: str, body: Obj) -> Headers:
    """Strict decoding of a create/update body: 400 under Strict, warnings under Warn."""
    mode = validation.directive(request.query, operation)
    info = target.object_info
    if mode == validation.IGNORE or info is None or not (info.schema_ref or info.schema):
        return ()
    raw = request.raw
    source: bytes | Obj = raw if validation.may_repeat_keys(raw, body) else body
    found = validation.strict_errors(info, source)
    if found and mode == validation.STRICT:
        raise validation.field_validation_error(info, found, body)
    return tuple(validation.warning_headers(validation.warnings_for(found)))
