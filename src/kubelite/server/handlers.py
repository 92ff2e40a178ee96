"""One handler per verb, generic over storages (kube-apiserver's ``endpoints/handlers``): parse the
request's query and body into options, call the storage, encode the answer.

The verb comes from the request info; the storage serving the resource or subresource decides
whether it is served: a verb whose interface the storage does not implement is a 405
(:func:`kubelite.api.machinery.rest.verbs`). Nothing here knows any kind.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import orjson

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import decoding, jsoncodec
from kubelite.api.errors import Cause, go_quote
from kubelite.api.machinery import deletion, updates, validation
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.patching import APPLY_PATCH, decode_apply
from kubelite.api.machinery.rest import (
    CollectionDeleter,
    Connecter,
    Context,
    Creater,
    DeleteOptions,
    GetOptions,
    Getter,
    GracefulDeleter,
    Lister,
    NamedCreater,
    ObjectUpdate,
    Patcher,
    ResetFields,
    Storage,
    Streamed,
    Streamer,
    Updater,
    Warnings,
    Watcher,
    WatchOptions,
    WriteOptions,
    implements,
)
from kubelite.api.machinery.selectors import object_matcher
from kubelite.api.machinery.watchoptions import parse_send_initial_events, validate_watch_options
from kubelite.server.faults import Faults
from kubelite.server.messages import PATCH_TYPES, Request, Send, send_json
from kubelite.server.responses import send_list, send_object, stream_bytes, stream_watch

Obj = dict[str, Any]
MAX_FIELD_MANAGER = 128


class Target:
    """What one resource request works on: the resource, the storage serving it (or its
    subresource), and the context (namespace, user, request info) storages take."""

    def __init__(self, request: Request, info: ResourceInfo, storage: Storage) -> None:
        ri = request.info
        self.info = info
        self.storage = storage
        self.name = ri.name
        self.namespace = ri.namespace if info.namespaced and ri.namespace else None
        self.ctx = Context(self.namespace, request.user, ri, request.audit_annotations)

    def serving(self, interface: type) -> Any:
        """The storage as ``interface``; 405 when it does not implement it."""
        if not implements(self.storage, interface):
            raise errors.method_not_allowed()
        return self.storage

    @property
    def object_info(self) -> ResourceInfo | None:
        return self.storage.object_info

    @property
    def body_kind(self) -> ResourceInfo | None:
        """The kind request bodies are decoded as: the objects' kind, or a view's (Scale)."""
        return self.storage.object_info or getattr(self.storage, "apply_info", None)


VerbHandler = Callable[[Request, Send, Target], Awaitable[None]]


class Handlers:
    """The verb handlers; ``stopping`` ends watch streams when the server shuts down."""

    def __init__(self, stopping: asyncio.Event, faults: Faults | None = None) -> None:
        self.stopping = stopping
        self._stopped: asyncio.Future[Any] | None = None
        self.faults = faults
        conflicts = faults is not None and faults.spec.conflicts > 0
        self.by_verb: dict[str, VerbHandler] = {
            "get": get,
            "list": list_objects,
            "watch": self.watch,
            "create": create,
            # --inject conflicts: the handlers that may meet one
            "update": partial(update, faults=faults) if conflicts else update,
            "patch": partial(patch, faults=faults) if conflicts else patch,
            "delete": delete,
            "deletecollection": delete_collection,
        }

    async def serve(self, request: Request, send: Send, target: Target) -> None:
        verb, storage, ctx = request.info.verb, target.storage, target.ctx
        if verb in ("get", "create") and implements(storage, Connecter):
            connecter: Connecter = target.serving(Connecter)
            await self.send_streamed(
                request, send, await connecter.connect(ctx, target.name, request.query)
            )
            return
        if verb == "get" and implements(storage, Streamer):
            streamer: Streamer = target.serving(Streamer)
            await self.send_streamed(
                request, send, await streamer.stream(ctx, target.name, request.query)
            )
            return
        handler = self.by_verb.get(verb)
        if handler is None:
            raise errors.method_not_allowed()
        try:
            await handler(request, send, target)
        except RecursionError:
            # an object holding a free-form value nested deeper than Python's default stack
            # walks (kube reads 10000 levels): the request again, all of it on a large stack
            if request.status:  # too late: the response has begun
                raise
            await jsoncodec.on_large_stack(handler(request, send, target))

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
        faults = None if self.faults is None else self.faults.stream(q, send_initial)
        events = watcher.watch(target.ctx, options)
        await stream_watch(
            request, send, target.info, events, _watch_timeout(q), self._stopping(), faults
        )

    def _stopping(self) -> asyncio.Future[Any]:
        """Done once the server stops: one waiter shared by every watch stream, not one each."""
        loop = asyncio.get_running_loop()
        if self._stopped is None or self._stopped.get_loop() is not loop:
            self._stopped = loop.create_task(self.stopping.wait())
        return self._stopped

    async def send_streamed(self, request: Request, send: Send, streamed: Streamed) -> None:
        """Bytes as a storage answered them, with their content type; a followed stream's
        until it ends, the client goes or the server stops."""
        if streamed.follow is not None:
            await stream_bytes(
                request,
                send,
                streamed.content_type,
                streamed.body,
                streamed.follow,
                self._stopping(),
            )
            return
        await send_streamed(send, streamed)


async def send_streamed(send: Send, streamed: Streamed) -> None:
    """Bytes as a storage answered them, with their content type."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", streamed.content_type.encode()),
                (b"content-length", str(len(streamed.body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": streamed.body})


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
    body = await request.json_object(_kind(target))
    warnings = _decode(request, target, "create", body)
    manager = _field_manager(request, "CreateOptions")
    options = WriteOptions(_dry_run(request), manager, warnings=warnings, sent=_sent(request))
    if target.name:
        named: NamedCreater = target.serving(NamedCreater)
        obj = await named.create_named(target.ctx, target.name, body, options)
    else:
        creater: Creater = target.serving(Creater)
        obj = await creater.create(target.ctx, body, options)
    headers = tuple(validation.warning_headers(warnings.texts))
    await send_object(request, send, target.object_info, obj, 201, headers)


async def update(
    request: Request, send: Send, target: Target, *, faults: Faults | None = None
) -> None:
    updater: Updater = target.serving(Updater)
    body = await request.json_object(_kind(target))
    warnings = _decode(request, target, "update", body)
    put = updates.put(target.info, target.namespace, target.name, body)
    manager = _field_manager(request, "UpdateOptions")
    options = WriteOptions(_dry_run(request), manager, warnings=warnings, sent=_sent(request))
    if faults is not None:
        options = faults.conflicting(options, "", body)
    obj, created = await updater.update(target.ctx, target.name, put, options)
    headers = tuple(validation.warning_headers(warnings.texts))
    await send_object(request, send, target.object_info, obj, 201 if created else 200, headers)


async def patch(
    request: Request, send: Send, target: Target, *, faults: Faults | None = None
) -> None:
    patcher: Patcher = target.serving(Patcher)
    content_type = request.headers.get("content-type", "").split(";")[0].strip()
    if content_type not in PATCH_TYPES:
        raise errors.unsupported_media_type(list(PATCH_TYPES))
    applying = content_type == APPLY_PATCH
    force, manager = _patch_options(request, applying)
    mode = validation.directive(request.query, "patch")
    warnings = Warnings()
    dry_run = _dry_run(request)
    patched: ObjectUpdate
    if applying:
        storage = target.storage
        applied_kind = target.body_kind
        if applied_kind is None:  # a view without a schema of its own (a TokenRequest...)
            raise errors.unsupported_media_type([t for t in PATCH_TYPES if t != APPLY_PATCH])
        reset = storage.reset_fields() if isinstance(storage, ResetFields) else ()
        applied = decode_apply(await request.body(), mode)
        sent: Any = applied.config
        patched = updates.apply(
            applied_kind, target.namespace, target.name, applied, manager,
            force=force, decode_as=target.object_info, field_validation=mode,
            warnings=warnings, subresource=request.info.subresource, reset=reset,
        )  # fmt: skip
    else:
        sent = await request.json()
        patched = updates.patch(
            target.info, target.name, content_type, sent, schema=target.object_info,
            decode_as=target.body_kind, field_validation=mode, warnings=warnings,
        )  # fmt: skip
    options = WriteOptions(
        dry_run, manager, apply=applying, patch=True, warnings=warnings, sent=_sent(request)
    )
    if faults is not None:
        options = faults.conflicting(options, content_type, sent)
    obj, created = await patcher.update(target.ctx, target.name, patched, options)
    headers = tuple(validation.warning_headers(warnings.texts))
    await send_object(request, send, target.object_info, obj, 201 if created else 200, headers)


async def delete(request: Request, send: Send, target: Target) -> None:
    deleter: GracefulDeleter = target.serving(GracefulDeleter)
    warnings = Warnings()
    options = (await _delete_options(request))._replace(warnings=warnings)
    answer, gone = await deleter.delete(target.ctx, target.name, options)
    # kube answers 202 only for the deprecated orphanDependents=false on an object kept
    accepted = not gone and options.orphan_dependents is False
    headers = tuple(validation.warning_headers(warnings.texts))
    await send_json(send, 202 if accepted else 200, answer, headers)


async def delete_collection(request: Request, send: Send, target: Target) -> None:
    deleter: CollectionDeleter = target.serving(CollectionDeleter)
    warnings = Warnings()
    options = (await _delete_options(request))._replace(warnings=warnings)
    listing = await deleter.delete_collection(target.ctx, options, list_options(request))
    await send_json(send, 200, listing, tuple(validation.warning_headers(warnings.texts)))


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


_GO_INT = re.compile(r"[+-]?[0-9]+")


def _watch_timeout(query: dict[str, str]) -> float:
    """``timeoutSeconds``: absent or 0 is a random 30 to 60 minutes, as kube-apiserver. Read as
    the parameter codec reads an int64 (``strconv.ParseInt``): 400 with its error otherwise."""
    text = query.get("timeoutSeconds")
    if not text:
        return random.uniform(1800, 3600)
    if not _GO_INT.fullmatch(text):
        raise errors.bad_request(f"strconv.ParseInt: parsing {go_quote(text)}: invalid syntax")
    seconds = int(text)
    if not -(2**63) <= seconds < 2**63:
        raise errors.bad_request(f"strconv.ParseInt: parsing {go_quote(text)}: value out of range")
    return float(seconds) if seconds > 0 else random.uniform(1800, 3600)


def _patch_options(request: Request, applying: bool) -> tuple[bool, str]:
    """PatchOptions: ``force`` (only for an apply; ``0`` and ``false``, any case, are false)
    and the field manager, every problem in one 422 as kube's ValidatePatchOptions gives."""
    causes: list[Cause] = []
    value = request.query.get("force")
    if value is not None and not applying:
        forbidden = "Forbidden: may not be specified for non-apply patch"
        causes.append(Cause("FieldValueForbidden", forbidden, "force"))
    name = request.query.get("fieldManager", "")
    if applying and not name:
        causes.append(Cause("FieldValueRequired", "Required value: is required for apply patch",
                            "fieldManager"))  # fmt: skip
    causes += _manager_causes(name)
    if causes:
        raise errors.invalid("PatchOptions", "meta.k8s.io", "", causes)
    force = value is not None and not (value == "0" or value.lower() == "false")
    return force, name or _user_agent_prefix(request)


def _field_manager(request: Request, options: str) -> str:
    """The manager a create or update is recorded under: ``fieldManager`` (validated), else
    the User-Agent up to its first ``/`` (kube's managerOrUserAgent)."""
    name = request.query.get("fieldManager", "")
    causes = _manager_causes(name)
    if causes:
        raise errors.invalid(options, "meta.k8s.io", "", causes)
    return name or _user_agent_prefix(request)


def _manager_causes(name: str) -> list[Cause]:
    """apimachinery's ValidateFieldManager: at most 128 bytes, printable characters only."""
    causes: list[Cause] = []
    if len(name.encode()) > MAX_FIELD_MANAGER:
        causes.append(Cause("FieldValueTooLong",
                            f"Too long: may not be more than {MAX_FIELD_MANAGER} bytes",
                            "fieldManager"))  # fmt: skip
    position = 0
    for char in name:
        if not char.isprintable():
            causes.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {go_quote(name)}: invalid character U+{ord(char):04X} "
                    f"(at position {position})",
                    "fieldManager",
                )
            )
        position += len(char.encode())
    return causes


def _user_agent_prefix(request: Request) -> str:
    """The User-Agent up to its first ``/``, printable characters only, at most 128 bytes."""
    prefix = ""
    for char in request.headers.get("user-agent", "").split("/")[0]:
        if not char.isprintable():
            continue
        if len((prefix + char).encode()) > MAX_FIELD_MANAGER:
            break
        prefix += char
    return prefix


def _sent(request: Request) -> Obj:
    """The write's CreateOptions, UpdateOptions or PatchOptions fields kube's handlers pass to
    admission, as the client sent them (a field manager left to the User-Agent is not one)."""
    q = request.query
    sent: Obj = {}
    if _dry_run(request):
        sent["dryRun"] = ["All"]
    for key in ("fieldManager", "fieldValidation"):
        if q.get(key):
            sent[key] = q[key]
    return sent


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


def _kind(target: Target) -> str:
    info = target.object_info
    return info.kind if info is not None else target.info.kind


def _decode(request: Request, target: Target, operation: str, body: Obj) -> Warnings:
    """A create/update body decoded as kube-apiserver decodes it: wrong types 400
    (:mod:`kubelite.api.encoding.decoding`), then strict decoding (400 under Strict, warnings under
    Warn: the request's warnings, which the write may add to); unknown fields and nulls are dropped
    from what is stored."""
    mode = validation.directive(request.query, operation)
    info = target.body_kind

    def run() -> Warnings:
        found = _decoded_strictly(request, info, mode, body)
        if found and mode == validation.STRICT and info is not None:
            raise validation.field_validation_error(info, found, body)
        return Warnings(validation.warnings_for(found))

    return jsoncodec.deep(run) if request.deep else run()


def _decoded_strictly(
    request: Request, info: ResourceInfo | None, mode: str, body: Obj
) -> list[str]:
    """Decode ``body`` in place; the strict decoding errors of what was sent (none under
    Ignore, or for a kind without a schema)."""
    raw = request.raw
    if mode == validation.IGNORE or info is None or not (info.schema_ref or info.schema):
        decoding.decode(info, body, raw)
        return []
    # repeated keys are seen in JSON text only (YAML's are refused when read; protobuf has none)
    textual = request.content_type() in ("", "application/json")
    repeats = textual and validation.may_repeat_keys(raw, body)
    if textual and not repeats and decoding.builtin(info):
        # a built-in kind's unknown fields are the ones its decoder drops (as in Go, where
        # strict decoding is the same decoder): the schema is walked only when there are some
        unknown = decoding.decode(info, body, raw)
        return validation.strict_errors(info, raw) if unknown else []
    found = validation.strict_errors(info, raw if repeats else body)
    decoding.decode(info, body, raw)
    return found
