"""The generic registry: Kubernetes verbs turned into storage calls, for every kind alike.

One :class:`Registry` serves every resource in the catalogue; per-kind behaviour comes from the
kind's :class:`~kubelite.api.catalogue.ResourceInfo` (does it track generation, allow
unconditional update or create-on-update, have a status subresource). Optimistic concurrency lives
here in exactly one place, :meth:`Registry.guaranteed_update` (kube-apiserver's
GuaranteedUpdate): read, apply a function, compare-and-swap on the revision read, and on losing
the race read again and re-apply. Only explicit resourceVersion or UID preconditions surface as
409; internal contention never does.

Storage keys: ``/registry/<plural>/<namespace>/<name>`` for the core group and
``/registry/<group>/<plural>/<namespace>/<name>`` otherwise (cluster-scoped kinds have no
namespace segment). Stored bodies are JSON without ``metadata.resourceVersion``; it is stamped
from the storage revision on every read.
"""

from __future__ import annotations

import base64
import copy
import functools
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from kubelite.api import errors, namespaces
from kubelite.api import resourceversion as rv
from kubelite.api.catalogue import ResourceInfo, load_schema_definitions
from kubelite.api.conversion import to_version
from kubelite.api.customresources import CustomResourceHooks
from kubelite.api.defaults import apply_defaults
from kubelite.api.errors import APIError, Cause
from kubelite.api.hooks import KindHooks
from kubelite.api.merge_patch import json_merge_patch
from kubelite.api.names import generate_name, name_errors
from kubelite.api.recent import RecentValues
from kubelite.api.strategic_merge import Schema, StrategicMergeError, strategic_merge
from kubelite.storage import (
    Compacted,
    Conflict,
    FutureRevision,
    KeyExists,
    KeyValue,
    NotFound,
    Store,
)

Obj = dict[str, Any]
UpdateFn = Callable[[Obj], Awaitable[Obj | None]]

GENERATE_NAME_ATTEMPTS = 8
NAMESPACE_KEY_PREFIX = "/registry/namespaces/"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def storage_prefix(info: ResourceInfo, namespace: str | None) -> str:
    group = info.key_group
    base = f"/registry/{group}/{info.plural}/" if group else f"/registry/{info.plural}/"
    if info.namespaced and namespace:
        return f"{base}{namespace}/"
    return base


def storage_key(info: ResourceInfo, namespace: str | None, name: str) -> str:
    return storage_prefix(info, namespace) + name


def clone(obj: Obj) -> Obj:
    """A deep copy of a JSON object: through orjson, several times faster than copy.deepcopy."""
    copied: Obj = orjson.loads(orjson.dumps(obj))
    return copied


def encode(obj: Obj, info: ResourceInfo) -> bytes:
    """The stored bytes of ``obj``: at the kind's storage version, without resourceVersion."""
    body = (
        to_version(obj, info.storage_api_version, builtin=info.builtin)
        if info.storage_version
        else copy.copy(obj)
    )
    body["metadata"] = dict(body.get("metadata") or {})
    body["metadata"].pop("resourceVersion", None)
    return orjson.dumps(body)


def from_storage(value: bytes, info: ResourceInfo) -> Obj:
    """A stored value as ``info``'s version serves it (no resourceVersion stamped)."""
    obj: Obj = orjson.loads(value)
    if not info.storage_version:
        return obj
    return to_version(obj, info.group_version, builtin=info.builtin)


def decode(kv: KeyValue, info: ResourceInfo) -> Obj:
    return rv.stamp(from_storage(kv.value, info), kv.mod_revision)


def same_stored(a: bytes, b: bytes, info: ResourceInfo) -> bool:
    """Whether two stored values hold the same object. Bytes compare for a kind stored at its
    own version; a converted one may come back with its keys in another order."""
    return a == b or (bool(info.storage_version) and orjson.loads(a) == orjson.loads(b))


def meta_of(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    return meta


@dataclass(frozen=True, slots=True)
class ListOptions:
    label_selector: Callable[[Obj], bool] | None = None
    limit: int = 0
    continue_token: str = ""
    resource_version: str | None = None
    resource_version_match: str = ""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str  # ADDED, MODIFIED, DELETED
    object: Obj
    revision: int


class ListScan:
    """One list request, read page by page from one storage snapshot, so that a large list
    can be sent as it is read instead of held whole. ``metadata`` (resourceVersion, continue) is
    complete once :meth:`pages` is exhausted."""

    PAGE = 500

    def __init__(
        self, store: Store, info: ResourceInfo, namespace: str | None, opts: ListOptions
    ) -> None:
        self.store = store
        self.info = info
        self.opts = opts
        self.prefix = storage_prefix(info, namespace)
        self.revision: int | None = None
        self.start_after: str | None = None
        self.metadata: dict[str, Any] = {}
        if opts.continue_token:
            if opts.resource_version not in (None, "", "0"):
                raise errors.bad_request(
                    "specifying resource version is not allowed when using continue"
                )
            self.revision, self.start_after = _decode_continue(opts.continue_token, self.prefix)
        else:
            requested = parse_rv_query(opts.resource_version)
            exact = opts.resource_version_match == "Exact" or (
                requested and opts.limit and opts.resource_version_match != "NotOlderThan"
            )
            if requested and exact:
                self.revision = requested
        self.limit = opts.limit if opts.limit > 0 else None
        if opts.resource_version == "0" and not opts.continue_token:
            self.limit = None  # kube-apiserver serves RV=0 from its cache, ignoring limit

    async def pages(self) -> AsyncGenerator[list[Obj], None]:
        """Pages of matching objects; raises APIError 410/504 for compacted or future RVs."""
        opts, limit, sent = self.opts, self.limit, 0
        try:
            while True:
                # With a selector a page may match fewer than asked: ask only for what is left,
                # so a list never holds more than ``limit`` items (kube may return fewer).
                page = self.PAGE if limit is None else min(self.PAGE, limit - sent)
                result = await self.store.list(self.prefix, self.revision, page, self.start_after)
                self.revision = result.revision
                matched = [decode(kv, self.info) for kv in result.items]
                if opts.label_selector is not None:
                    matched = [obj for obj in matched if opts.label_selector(obj)]
                sent += len(matched)
                if result.items:
                    self.start_after = result.items[-1].key
                more = result.more
                if matched:
                    yield matched
                if not more or (limit is not None and sent >= limit):
                    break
        except Compacted:
            if opts.continue_token:
                raise errors.expired(CONTINUE_EXPIRED)
            raise errors.expired("The resourceVersion for the provided list is too old.")
        except FutureRevision as exc:
            raise errors.timeout(
                f"Too large resource version: {exc.requested_revision}, "
                f"current: {exc.current_revision}",
                [Cause("ResourceVersionTooLarge", "Too large resource version")],
                retry_after=1,
            )
        assert self.revision is not None
        self.metadata = {"resourceVersion": str(self.revision)}
        if limit is not None and more:
            last_key = self.start_after or self.prefix
            self.metadata["continue"] = _encode_continue(self.revision, last_key, self.prefix)


class Registry:
    """The generic registry. ``hooks`` add a built-in kind's strategy by (group, plural);
    ``custom`` is every custom resource's (schema, pruning, defaulting, CEL)."""

    def __init__(
        self,
        store: Store,
        hooks: dict[tuple[str, str], KindHooks] | None = None,
        custom: CustomResourceHooks | None = None,
    ) -> None:
        self.store = store
        self.recent = RecentValues()
        self.hooks: dict[tuple[str, str], KindHooks] = dict(hooks or {})
        self.custom = custom or CustomResourceHooks()

    def hooks_for(self, info: ResourceInfo) -> KindHooks | None:
        if not info.builtin:
            return self.custom
        return self.hooks.get((info.group, info.plural))

    # -- reads ----------------------------------------------------------------------------

    async def get(self, info: ResourceInfo, namespace: str | None, name: str) -> Obj:
        kv = await self.store.get(storage_key(info, namespace, name))
        if kv is None:
            raise errors.not_found(info.plural, info.group, name)
        return decode(kv, info)

    async def list(self, info: ResourceInfo, namespace: str | None, opts: ListOptions) -> Obj:
        scan = ListScan(self.store, info, namespace, opts)
        items = [obj async for page in scan.pages() for obj in page]
        return {
            "kind": info.list_kind,
            "apiVersion": info.group_version,
            "metadata": scan.metadata,
            "items": items,
        }

    # -- writes ---------------------------------------------------------------------------

    async def create(
        self, info: ResourceInfo, namespace: str | None, body: Obj, *, dry_run: bool = False
    ) -> Obj:
        obj = self._prepare_create(info, namespace, body)
        if info.namespaced and namespace:
            await self._check_namespace(namespace, info, obj)
        meta = obj["metadata"]
        generated = "name" not in meta
        for _ in range(GENERATE_NAME_ATTEMPTS if generated else 1):
            if generated:
                meta["name"] = generate_name(meta["generateName"])
            key = storage_key(info, namespace, meta["name"])
            if dry_run:
                if await self.store.get(key) is not None:
                    raise errors.already_exists(info.plural, info.group, meta["name"])
                return rv.stamp(obj, await self.store.current_revision() or 1)
            data = encode(obj, info)
            try:
                revision = await self.store.create(key, data)
            except KeyExists as exc:
                if generated:
                    continue
                deleting = "deletionTimestamp" in (
                    orjson.loads(exc.current.value).get("metadata") or {}
                )
                raise errors.already_exists(
                    info.plural, info.group, meta["name"], deleting=deleting
                )
            self.recent.put(KeyValue(key, data, revision, revision, 1))
            stored = rv.stamp(obj, revision)
            await self._after_write(info, stored)
            return stored
        raise errors.already_exists(info.plural, info.group, meta["name"])

    async def _after_write(self, info: ResourceInfo, obj: Obj) -> None:
        hooks = self.hooks_for(info)
        if hooks is not None:
            await hooks.after_write(info, obj)

    def _prepare_create(self, info: ResourceInfo, namespace: str | None, body: Obj) -> Obj:
        obj = clone(body)
        _check_type_meta(info, obj)
        meta = meta_of(obj)
        body_rv = meta.get("resourceVersion")
        if isinstance(body_rv, str) and body_rv not in ("", "0") and body_rv.isdigit():
            raise errors.internal("resourceVersion should not be set on objects to be created")
        meta.pop("resourceVersion", None)
        _check_namespace_field(info, namespace, meta)
        name = meta.get("name") or ""
        if not name:
            meta.pop("name", None)
            if not meta.get("generateName"):
                raise errors.invalid(
                    info.kind,
                    info.group,
                    "",
                    [
                        Cause(
                            "FieldValueRequired",
                            "Required value: name or generateName is required",
                            "metadata.name",
                        )
                    ],
                )
        else:
            _validate_name(info, name)
        for field in ("uid", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            meta.pop(field, None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now()
        if info.tracks_generation:
            meta["generation"] = 1
        if "status" in info.subresources:
            obj.pop("status", None)
        obj["apiVersion"], obj["kind"] = info.group_version, info.kind
        apply_defaults(info.group, info.kind, obj)
        if _is_namespace(info):
            namespaces.prepare_create(obj)
        hooks = self.hooks_for(info)
        if hooks is not None:
            hooks.on_create(info, obj)
        return obj

    async def _check_namespace(self, namespace: str, info: ResourceInfo, obj: Obj) -> None:
        kv = await self.store.get(NAMESPACE_KEY_PREFIX + namespace)
        if kv is None:
            raise errors.not_found("namespaces", "", namespace)
        ns = orjson.loads(kv.value)
        if ns.get("metadata", {}).get("deletionTimestamp"):
            name = obj["metadata"].get("name") or obj["metadata"].get("generateName", "")
            raise errors.forbidden(
                info.plural,
                info.group,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
                [
                    Cause(
                        "NamespaceTerminating",
                        f"namespace {namespace} is being terminated",
                        "metadata.namespace",
                    )
                ],
            )

    async def guaranteed_update(
        self, info: ResourceInfo, namespace: str | None, name: str, fn: UpdateFn
    ) -> tuple[Obj, bool]:
        """Apply ``fn`` to the current object and compare-and-swap the result, re-reading and
        re-applying when another writer got there first. ``fn`` returns the new object, or None
        to delete it. Returns (object, written). Equal bytes are not written (no-op).

        It starts from the value this server last wrote, when it has one (:mod:`recent`), and
        reads the store only when it has none, when the CAS says the guess was stale, or before
        it lets an error or a no-op computed from the guess stand."""
        key = storage_key(info, namespace, name)
        kv = self.recent.get(key)
        guessed = kv is not None
        if kv is None:
            kv = await self.store.get(key)
        while True:
            if kv is None:
                raise errors.not_found(info.plural, info.group, name)
            current = decode(kv, info)
            try:
                new = await fn(decode(kv, info))
            except APIError:
                if not guessed:
                    raise
                kv, guessed = await self.store.get(key), False
                continue
            try:
                if new is None:
                    revision, _ = await self.store.delete(key, kv.mod_revision)
                    self.recent.drop(key)
                    return rv.stamp(current, revision), True
                data = encode(new, info)
                if same_stored(data, kv.value, info):
                    if guessed:
                        kv, guessed = await self.store.get(key), False
                        continue
                    return current, False
                revision = await self.store.update(key, data, kv.mod_revision)
                self.recent.put(KeyValue(key, data, kv.create_revision, revision, kv.version + 1))
                return rv.stamp(new, revision), True
            except Conflict as exc:
                kv, guessed = exc.current, False
            except NotFound:
                self.recent.drop(key)
                kv, guessed = None, False

    async def update(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        body: Obj,
        *,
        subresource: str = "",
        dry_run: bool = False,
    ) -> tuple[Obj, bool]:
        """PUT. Returns (object, created)."""
        _check_type_meta(info, body)
        meta = meta_of(body)
        if meta.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                f"({name})"
            )
        if info.namespaced and meta.get("namespace", namespace) != namespace:
            raise errors.bad_request(
                f"the namespace of the object ({meta.get('namespace')}) does not match the "
                f"namespace on the request ({namespace})"
            )
        try:
            requested = rv.parse(meta.get("resourceVersion") or "")
        except rv.BadResourceVersion as exc:
            raise errors.internal(str(exc))
        key = storage_key(info, namespace, name)
        creatable = info.allow_create_on_update and not subresource
        if creatable and await self.store.get(key) is None:
            body = {**body, "metadata": {**meta, "name": name}}
            return await self.create(info, namespace, body, dry_run=dry_run), True

        async def apply(current: Obj) -> Obj | None:
            cur_meta = current["metadata"]
            if meta.get("uid") and meta["uid"] != cur_meta.get("uid"):
                raise errors.conflict(
                    info.plural,
                    info.group,
                    name,
                    "StorageError: invalid object, Code: 4, Key: "
                    f"{key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in "
                    f"precondition: {meta['uid']}, UID in object meta: {cur_meta.get('uid')}",
                )
            if not requested and not info.allow_unconditional_update:
                raise errors.invalid(
                    info.plural,
                    info.group,
                    name,
                    [
                        Cause(
                            "FieldValueInvalid",
                            "Invalid value: 0: must be specified for an update",
                            "metadata.resourceVersion",
                        )
                    ],
                )
            if requested and requested != int(cur_meta["resourceVersion"]):
                raise errors.conflict(info.plural, info.group, name)
            return self.updated_object(info, current, body, subresource)

        if dry_run:
            current = await self.get(info, namespace, name)
            return rv.stamp(await apply(current) or current, int(rv.of(current))), False
        obj, _ = await self.guaranteed_update(info, namespace, name, apply)
        if _purgeable(info, obj):
            await self._finish_deletion(info, namespace, name)
        await self._after_write(info, obj)
        return obj, False

    def updated_object(self, info: ResourceInfo, current: Obj, body: Obj, subresource: str) -> Obj:
        """The stored object after a PUT of ``body``: server-owned fields kept, generation
        bumped on spec changes, and the other half kept when a status subresource exists."""
        new = clone(body)
        new["apiVersion"], new["kind"] = info.group_version, info.kind
        meta = new["metadata"] = dict(new.get("metadata") or {})
        cur_meta = current["metadata"]
        if subresource == "status":
            new = {**clone(current), "status": new.get("status")}
            if new["status"] is None:
                new.pop("status")
            meta = new["metadata"]
        elif "status" in info.subresources:
            if "status" in current:
                new["status"] = current["status"]
            else:
                new.pop("status", None)
        for field in ("uid", "creationTimestamp", "namespace", "name"):
            if field in cur_meta:
                meta[field] = cur_meta[field]
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if field in cur_meta:
                meta[field] = cur_meta[field]
            else:
                meta.pop(field, None)
        meta.pop("resourceVersion", None)
        if info.tracks_generation:
            generation = int(cur_meta.get("generation", 1))
            changed = _spec_changed if info.builtin else _content_changed
            if subresource != "status" and changed(current, new):
                generation += 1
            meta["generation"] = generation
        else:
            meta.pop("generation", None)
        if _is_namespace(info) and not subresource:
            namespaces.prepare_update(current, new)
        new = apply_defaults(info.group, info.kind, new)
        hooks = self.hooks_for(info)
        if hooks is not None:
            hooks.on_update(info, current, new, subresource)
        return new

    async def patch(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        patch_type: str,
        patch: Any,
        *,
        subresource: str = "",
        dry_run: bool = False,
        check: Callable[[Obj], None] | None = None,
    ) -> Obj:
        """PATCH: the patch is re-applied to the current object on every internal retry, so a
        patch without a resourceVersion never conflicts; one that sets it is checked as a PUT."""

        async def apply(current: Obj) -> Obj | None:
            patched = apply_patch(info, current, patch_type, patch)
            if not isinstance(patched, dict):
                raise errors.bad_request("the patched object is not a JSON object")
            if check is not None:
                check(patched)
            requested = rv.of(patched)
            if requested and requested != current["metadata"]["resourceVersion"]:
                raise errors.conflict(info.plural, info.group, name)
            patched.setdefault("metadata", {})
            if not isinstance(patched["metadata"], dict):
                raise errors.bad_request("metadata must be an object")
            return self.updated_object(info, current, patched, subresource)

        if dry_run:
            current = await self.get(info, namespace, name)
            result = await apply(clone(current))
            return rv.stamp(result or current, int(rv.of(current)))
        obj, _ = await self.guaranteed_update(info, namespace, name, apply)
        if _purgeable(info, obj):
            await self._finish_deletion(info, namespace, name)
        await self._after_write(info, obj)
        return obj

    async def delete(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        *,
        precondition_uid: str = "",
        precondition_rv: str = "",
        dry_run: bool = False,
    ) -> tuple[Obj, bool]:
        """DELETE. Returns (object, gone): gone is False when finalizers keep it."""

        async def mark_or_delete(current: Obj) -> Obj | None:
            meta = current["metadata"]
            if precondition_uid and precondition_uid != meta.get("uid"):
                raise errors.conflict(
                    info.kind,
                    info.group,
                    name,
                    f"the UID in the precondition ({precondition_uid}) does not match the UID in "
                    f"record ({meta.get('uid')}). The object might have been deleted and then "
                    "recreated",
                )
            if precondition_rv and precondition_rv != meta.get("resourceVersion"):
                raise errors.conflict(
                    info.kind,
                    info.group,
                    name,
                    f"the ResourceVersion in the precondition ({precondition_rv}) does not match "
                    f"the ResourceVersion in record ({meta.get('resourceVersion')}). The object "
                    "might have been modified",
                )
            if meta.get("finalizers"):
                if "deletionTimestamp" not in meta:
                    meta["deletionTimestamp"] = now()
                    meta["deletionGracePeriodSeconds"] = 0
                    if int(meta.get("generation", 0)) > 0:
                        meta["generation"] = int(meta["generation"]) + 1
                meta.pop("resourceVersion", None)
                return current
            return None

        if dry_run:
            current = await self.get(info, namespace, name)
            result = await mark_or_delete(clone(current))
            return (result or current), result is None
        obj, _ = await self.guaranteed_update(info, namespace, name, mark_or_delete)
        gone = not obj["metadata"].get("finalizers")
        await self._after_write(info, obj)
        return obj, gone

    async def remove_finalizer(
        self, info: ResourceInfo, namespace: str | None, name: str, finalizer: str
    ) -> None:
        """Drop ``finalizer`` from the object (a controller's last step), purging it when it was
        being deleted and nothing else holds it."""

        async def drop(current: Obj) -> Obj | None:
            meta = current["metadata"]
            finalizers = [f for f in meta.get("finalizers") or [] if f != finalizer]
            if finalizers:
                meta["finalizers"] = finalizers
            else:
                meta.pop("finalizers", None)
            meta.pop("resourceVersion", None)
            return None if _purgeable(info, current) else current

        obj, _ = await self.guaranteed_update(info, namespace, name, drop)
        await self._after_write(info, obj)

    async def _finish_deletion(self, info: ResourceInfo, namespace: str | None, name: str) -> None:
        async def drop(current: Obj) -> Obj | None:
            return None if _purgeable(info, current) else current

        try:
            await self.guaranteed_update(info, namespace, name, drop)
        except APIError as exc:
            if exc.code != 404:
                raise

    async def compact(self, revision: int) -> None:
        """Drop history below ``revision``: watches and exact lists below it then get 410."""
        try:
            await self.store.compact(revision)
        except Compacted as exc:
            raise errors.bad_request(
                f"revision {revision} is already compacted (compacted revision "
                f"{exc.compacted_revision})"
            )
        except FutureRevision as exc:
            raise errors.bad_request(
                f"revision {revision} is in the future (current revision {exc.current_revision})"
            )


def apply_patch(
    info: ResourceInfo, current: Obj, patch_type: str, patch: Any, *, schema: bool = True
) -> Any:
    """``current`` patched by one of the three patch formats (never mutates ``current``).
    ``schema=False`` applies a strategic merge patch without the kind's field rules (views such
    as Scale, whose schema is not the kind's)."""
    if patch_type == "application/json-patch+json":
        if not isinstance(patch, list):
            raise errors.bad_request("json patch must be a list of operations")
        if len(patch) > 10000:
            raise errors.too_large(
                "The allowed maximum operations in a JSON patch is 10000, got " + str(len(patch))
            )
        try:
            return jsonpatch.apply_patch(current, patch)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException, TypeError):
            raise APIError(
                422, "Invalid", "the server rejected our request due to an error in our request", {}
            )
    if patch_type == "application/merge-patch+json":
        return json_merge_patch(current, patch)
    if schema and not info.strategic_merge:
        raise errors.unsupported_media_type(
            [
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ]
        )
    if not isinstance(patch, dict):
        raise errors.bad_request("a strategic merge patch must be a JSON object")
    try:
        return strategic_merge(current, patch, _patch_schema(info.schema_ref) if schema else None)
    except StrategicMergeError as exc:
        if exc.code == 422:
            raise APIError(422, "Invalid", str(exc), {})
        raise errors.bad_request(str(exc))


@functools.cache
def _patch_schema(name: str) -> Schema:
    return Schema.from_definitions(load_schema_definitions(), name)


CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


def _encode_continue(revision: int, last_key: str, prefix: str) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": revision, "start": last_key[len(prefix) :] + "\x00"}
    return base64.urlsafe_b64encode(orjson.dumps(token)).decode().rstrip("=")


def _decode_continue(token: str, prefix: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        revision, start = int(data["rv"]), str(data["start"])
        if data.get("v") != "meta.k8s.io/v1" or not start.endswith("\x00") or revision < 1:
            raise ValueError
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise errors.bad_request(
            "invalid continue token: continue key is not valid: the continue token is invalid"
        )
    return revision, prefix + start[:-1]


def parse_rv_query(value: str | None) -> int:
    """A ``resourceVersion`` query parameter; 400 with kube-apiserver's text if malformed."""
    try:
        return rv.parse(value)
    except rv.BadResourceVersion:
        raise errors.bad_request(f"invalid resource version: {value}")


def _check_type_meta(info: ResourceInfo, obj: Obj) -> None:
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version and api_version != info.group_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({info.group_version})"
        )
    if kind and kind != info.kind:
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({info.kind})"
        )


def _check_namespace_field(info: ResourceInfo, namespace: str | None, meta: dict[str, Any]) -> None:
    if not info.namespaced:
        meta.pop("namespace", None)
        return
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    meta["namespace"] = namespace


def _validate_name(info: ResourceInfo, name: str) -> None:
    problems = name_errors(info.kind, name)
    if problems:
        raise errors.invalid(
            info.kind,
            info.group,
            name,
            [
                Cause("FieldValueInvalid", f'Invalid value: "{name}": {p}', "metadata.name")
                for p in problems
            ],
        )


def _is_namespace(info: ResourceInfo) -> bool:
    return info.group == "" and info.plural == "namespaces"


def _purgeable(info: ResourceInfo, obj: Obj) -> bool:
    """A deleting object that nothing holds any more: no finalizers (and, for a Namespace, no
    ``spec.finalizers``, which its controller clears once the namespace is empty)."""
    meta = obj.get("metadata") or {}
    if not meta.get("deletionTimestamp") or meta.get("finalizers"):
        return False
    return not (_is_namespace(info) and namespaces.deletion_held(obj))


def _content_changed(old: Obj, new: Obj) -> bool:
    """A custom resource's generation rule: anything outside metadata changed."""
    strip = ("metadata", "apiVersion", "kind")
    return {k: v for k, v in old.items() if k not in strip} != {
        k: v for k, v in new.items() if k not in strip
    }


def _spec_changed(old: Obj, new: Obj) -> bool:
    """Anything outside metadata and status changed, or (as for Deployments) annotations."""
    strip = ("metadata", "status", "apiVersion", "kind")
    if {k: v for k, v in old.items() if k not in strip} != {
        k: v for k, v in new.items() if k not in strip
    }:
        return True
    return (old["metadata"].get("annotations") or {}) != (new["metadata"].get("annotations") or {})
