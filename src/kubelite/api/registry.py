"""The generic registry: Kubernetes verbs turned into storage calls, for every kind alike.

One :class:`Registry` serves every resource in the catalogue; per-kind behaviour comes from the
kind's :class:`~kubelite.api.catalogue.ResourceInfo` (does it track generation, allow
unconditional update or create-on-update, have a status subresource). Optimistic concurrency lives
here in exactly one place, :meth:`Registry.guaranteed_update` (kube-apiserver's
GuaranteedUpdate): read, apply a function, compare-and-swap on the revision read, and on losing
the race read again and re-apply. Only explicit resourceVersion or UID preconditions surface as
409; internal contention never does.

Where objects live and how they are encoded: :mod:`kubelite.api.stored`; lists and continue
tokens: :mod:`kubelite.api.listing`; patch formats: :mod:`kubelite.api.patching`.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from kubelite.api import errors, namespaces
from kubelite.api import resourceversion as rv
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.customresources import CustomResourceHooks
from kubelite.api.defaults import apply_defaults
from kubelite.api.errors import APIError, Cause
from kubelite.api.hooks import KindHooks
from kubelite.api.listing import ListOptions, ListScan
from kubelite.api.names import generate_name, name_errors
from kubelite.api.patching import apply_patch
from kubelite.api.recent import RecentValues
from kubelite.api.stored import (
    NAMESPACE_KEY_PREFIX,
    Obj,
    clone,
    decode,
    encode,
    meta_of,
    now,
    same_stored,
    storage_key,
)
from kubelite.storage import (
    Compacted,
    Conflict,
    FutureRevision,
    KeyExists,
    KeyValue,
    NotFound,
    Store,
)

UpdateFn = Callable[[Obj], Awaitable[Obj | None]]

GENERATE_NAME_ATTEMPTS = 8


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
