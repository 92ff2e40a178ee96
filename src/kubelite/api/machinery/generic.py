"""The generic store: every verb of one resource turned into storage calls, with the kind's
strategy plugged in at fixed points (kube-apiserver's ``Store``, k8s.io/apiserver
``pkg/registry/generic/registry/store.go``).

It never names a kind: what differs between kinds is its
:class:`~kubelite.api.machinery.strategy.Strategy`. Every write runs inside
:meth:`GenericStore.guaranteed_update`, the one optimistic-concurrency loop (kube's
GuaranteedUpdate): read, compute the new object, compare-and-swap on the revision read, and on
losing the race compute again from the value the store returns. Only explicit resourceVersion or UID
preconditions surface as 409; internal contention never does.

A write, step by step, in kube-apiserver's order (k8s.io/apiserver
``pkg/endpoints/handlers/create.go``, ``update.go`` and ``delete.go`` over ``store.go``)::

    create:  object metadata (objectmeta.prepare_new; a generated name) -> strategy.default
             -> managedFields -> mutating admission -> strategy.prepare_for_create
             -> strategy.default again -> metadata and strategy validation
             -> strategy.canonicalize -> validating admission -> store.create (a taken
             generated name: the whole create again)
    update:  strategy.default(current) -> ObjectUpdate(current) -> preconditions (uid,
             resourceVersion) -> the request's ``preconditions_held`` (injected conflicts)
             -> objectmeta.prepare_update -> strategy.default -> mutating admission
             -> strategy.prepare_for_update (status kept, generation rule)
             -> metadata and strategy validation -> strategy.canonicalize
             -> validating admission -> store.update (or store.delete when the update removed the
                last finalizer of a deleting object, or store.create for create-on-update)
    delete:  mutating admission -> preconditions -> validating admission
             -> the propagation policy's finalizers
             -> store.update marking it deleting (finalizers hold it) or store.delete

What a kind adds to this (a Service's allocations, RBAC's escalation check, a write that
answers once a follower holds it) is its
:class:`~kubelite.api.machinery.writehooks.WriteHooks`, called at fixed points of these steps
(kube's BeginCreate, BeginUpdate, AfterCreate...; the module shows where), never a subclass that
re-declares a verb.

Dry-run is decided in one place, :class:`kubelite.api.machinery.dryrun.Writes`: the same steps,
the store left alone.

Beside it: what every storage shares (:mod:`~kubelite.api.machinery.backing`), a write step's
answers (:mod:`~kubelite.api.machinery.writesteps`), and the reads of a store for storages that
serve only some verbs (:mod:`~kubelite.api.machinery.reads`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from typing import TYPE_CHECKING, Any

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import resourceversion as rv
from kubelite.api.encoding.stored import (
    Codec,
    VersionConverter,
    clone,
    clone_value,
    decode,
    meta_of,
    same_content,
    same_stored,
    storage_key,
)
from kubelite.api.errors import APIError, Cause
from kubelite.api.fieldmanager import managedfields
from kubelite.api.fieldmanager.conflictcauses import Explainer
from kubelite.api.fieldmanager.fieldpath import FieldSet
from kubelite.api.machinery import deletion, metavalidation, objectmeta
from kubelite.api.machinery.admission import (
    CREATE,
    DELETE,
    UPDATE,
    Attributes,
    request_namespace,
)
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.dryrun import Writes
from kubelite.api.machinery.listing import ListOptions, ListScan, parse_rv_query, wait_for_revision
from kubelite.api.machinery.names import generate_name
from kubelite.api.machinery.reads import collect
from kubelite.api.machinery.rest import (
    Context,
    DeleteOptions,
    GetOptions,
    ObjectUpdate,
    WatchOptions,
    WriteOptions,
)
from kubelite.api.machinery.strategy import Strategy
from kubelite.api.machinery.writehooks import Tries, WriteHooks
from kubelite.api.machinery.writesteps import Purge, Step, Written, stamped
from kubelite.storage import Conflict, KeyExists, NotFound

if TYPE_CHECKING:
    from kubelite.api.machinery.watchevents import WatchEvent

Obj = dict[str, Any]

GENERATE_NAME_ATTEMPTS = 8


class _NameTaken(Exception):
    """A create found its name taken: ``error`` is the 409 AlreadyExists to answer."""

    def __init__(self, error: APIError) -> None:
        super().__init__(error.message)
        self.error = error


class GenericStore:
    """The storage of one resource: get, list, watch, create, update (PUT and PATCH), delete
    and deletecollection, with ``strategy`` deciding what is special about the kind and
    ``hooks`` what its writes add (:mod:`kubelite.api.machinery.writehooks`; None: nothing).
    ``converter``: the kind's versions are converted outside the process (a CRD's conversion
    webhook); every read and write then goes through it, and a write answers what it stored
    read back at the request's version, as kube-apiserver's storage decodes what it wrote."""

    def __init__(
        self,
        info: ResourceInfo,
        strategy: Strategy,
        backing: Backing,
        *,
        hooks: WriteHooks | None = None,
        converter: VersionConverter | None = None,
    ) -> None:
        self.info = info
        self.strategy = strategy
        self.backing = backing
        self.store = backing.store
        self.writes = Writes(backing.store, backing.recent)
        self.hooks = hooks
        self.codec = Codec(info, converter)
        self.explainer = Explainer(self.store, self.codec, info)

    @property
    def object_info(self) -> ResourceInfo:
        return self.info

    def namespace(self, ctx: Context) -> str | None:
        return ctx.namespace if self.info.namespaced else None

    def key(self, ctx: Context, name: str) -> str:
        return storage_key(self.info, self.namespace(ctx), name)

    # -- reads -----------------------------------------------------------------------------------

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Obj:
        requested = parse_rv_query(opts.resource_version)
        if requested:
            await wait_for_revision(self.store, requested)
        kv = await self.store.get(self.key(ctx, name))
        if kv is None:
            raise errors.not_found(self.info.plural, self.info.group, name)
        return await self.codec.decode(kv)

    def list(self, ctx: Context, opts: ListOptions) -> ListScan:
        return ListScan(self.store, self.info, self.namespace(ctx), opts, self.codec)

    def watch(self, ctx: Context, opts: WatchOptions) -> AsyncGenerator[WatchEvent, None]:
        codec = self.codec if self.codec.converts else None
        return self.backing.caches.get(self.info, codec).watch(
            self.namespace(ctx),
            parse_rv_query(opts.resource_version),
            opts.matcher,
            send_initial_events=opts.send_initial_events,
            allow_bookmarks=opts.allow_bookmarks,
        )

    # -- create ----------------------------------------------------------------------------------

    async def create(self, ctx: Context, body: Obj, opts: WriteOptions) -> Obj:
        """POST. A generateName gets its name before the strategy and validation see the
        object (kube's BeforeCreate), so what derives from the name (a Namespace's name label,
        a Job's) has it; a generated name already taken makes a new try, up to 8."""
        hooks = self.hooks
        if hooks is None:
            return await self._create(ctx, body, opts, None)
        await hooks.before_create(ctx, body)
        tries = Tries(hooks)
        try:
            stored = await self._create(ctx, body, opts, tries)
        except BaseException:
            await tries.revert()
            raise
        await tries.commit()
        if not opts.dry_run:
            await hooks.after_create(ctx, stored)
        return stored

    async def _create(
        self, ctx: Context, body: Obj, opts: WriteOptions, tries: Tries | None
    ) -> Obj:
        for attempt in range(GENERATE_NAME_ATTEMPTS):
            obj = clone(body)
            objectmeta.prepare_new(self.info, self.namespace(ctx), obj, self.strategy.name_errors)
            meta = obj["metadata"]
            generated = "name" not in meta
            if generated:
                meta["name"] = generate_name(meta["generateName"])
            await self.admit_new(ctx, obj, opts, generated=generated)
            if tries is not None:
                await tries.begin_create(obj, opts)
            try:
                return await self._insert(ctx, obj, opts.dry_run)
            except _NameTaken as taken:
                if generated and attempt + 1 < GENERATE_NAME_ATTEMPTS:
                    continue
                raise taken.error from None
        raise AssertionError("unreachable")

    async def admit_new(
        self, ctx: Context, obj: Obj, opts: WriteOptions, *, generated: bool = False
    ) -> None:
        """A new object through the strategy, field tracking and admission, up to the write.
        ``generated``: its name was generated from ``generateName``; mutating admission, which
        kube runs before the name is generated, sees the prefix as the name (so its refusals
        name the prefix, as kube's do), validating admission the generated name."""
        strategy, info = self.strategy, self.info
        strategy.default(info, obj)
        if not opts.apply:
            managedfields.track_update(
                info, None, obj, opts.field_manager, reset=self.reset_set(strategy)
            )
        meta = obj["metadata"]
        name = meta.get("generateName", "") if generated else meta.get("name", "")
        namespace = request_namespace(info, self.namespace(ctx), "" if generated else name)
        admission = self.backing.admission
        attrs = Attributes(
            CREATE, info, namespace, name, obj, None, ctx.user, "", opts.dry_run,
            ctx.request, opts.warnings, ctx.audit_annotations, opts.field_manager,
            options=opts.sent,
        )  # fmt: skip
        if admission.mutating:
            await self._admit(attrs, obj, opts)
        strategy.prepare_for_create(info, obj)
        # kube defaults what it decodes, the stored object included: what the server set or
        # reset just now (a status) reads with its defaults (a new PVC is Pending)
        strategy.default(info, obj)
        meta_causes = metavalidation.create_causes(info, obj, strategy.name_errors)
        self._raise_invalid(obj, meta_causes + strategy.validate(info, obj))
        strategy.canonicalize(info, obj)
        if admission.validating:
            await admission.validate(attrs._replace(name=obj["metadata"].get("name", "")))

    async def _insert(self, ctx: Context, obj: Obj, dry_run: bool) -> Obj:
        """Store a new object under its name (:class:`_NameTaken` when the name is taken)."""
        info, meta = self.info, obj["metadata"]
        data = await self.codec.encode(obj)
        try:
            revision = await self.writes.create(self.key(ctx, meta["name"]), data, dry_run)
        except KeyExists as exc:
            # only its metadata is read, which no conversion changes
            deleting = "deletionTimestamp" in (decode(exc.current, info).get("metadata") or {})
            raise _NameTaken(
                errors.already_exists(info.plural, info.group, meta["name"], deleting=deleting)
            ) from None
        return await self._answer(obj, data, revision)

    # -- update ----------------------------------------------------------------------------------

    async def update(
        self,
        ctx: Context,
        name: str,
        update: ObjectUpdate,
        opts: WriteOptions,
        *,
        strategy: Strategy | None = None,
        subresource: str = "",
    ) -> tuple[Obj, bool]:
        """Replace the object by what ``update`` makes of the current one, through ``strategy``
        (a subresource's; default the kind's). Returns (the object, whether it was created)."""
        chosen = strategy or self.strategy
        hooks = self.hooks
        tries = None
        if hooks is not None:
            update = hooks.updated(ctx, update, subresource)
            tries = Tries(hooks)

        async def step(current: Obj | None) -> Obj | Purge:
            if current is None:
                if subresource or not (chosen.allow_create_on_update or opts.apply):
                    raise errors.not_found(self.info.plural, self.info.group, name)
                new = await self._create_on_update(ctx, name, await update(None), opts)
                if tries is not None:
                    await tries.begin_create(new, opts)
                return new
            # kube defaults what it reads from storage: an object stored before a default
            # existed is compared (immutable fields, no-ops) as it reads today
            chosen.default(self.info, current)
            new = await update(current)
            if new is current:
                raise TypeError("an ObjectUpdate must return a new object, not change current")
            result = await self._updated(ctx, name, new, current, chosen, subresource, opts)
            if tries is not None:
                if isinstance(result, Purge):
                    await tries.revert()
                else:
                    await tries.begin_update(result, current, opts, subresource)
            return result

        key = self.key(ctx, name)
        try:
            result = await self.guaranteed_update(key, step, opts.dry_run)
        except BaseException as exc:
            if tries is not None:
                await tries.revert()
            if not isinstance(exc, errors.StaleWrite):
                raise
            causes = await self.explainer.explain(key, exc.sent, exc.current)
            raise exc.explained(causes) from None
        if tries is not None:
            await tries.commit()
            if not opts.dry_run:
                if result.created:
                    await tries.hooks.after_create(ctx, result.obj)
                else:
                    await tries.hooks.after_update(ctx, result)
        return result.obj, result.created

    async def _create_on_update(self, ctx: Context, name: str, new: Obj, opts: WriteOptions) -> Obj:
        """A PUT to an absent name of a kind that allows it: a create, through the create path."""
        meta = new.setdefault("metadata", {})
        meta["name"] = name
        meta.pop("resourceVersion", None)  # a create through PUT ignores it
        objectmeta.prepare_new(self.info, self.namespace(ctx), new, self.strategy.name_errors)
        await self.admit_new(ctx, new, opts)
        return new

    async def _updated(
        self,
        ctx: Context,
        name: str,
        new: Obj,
        current: Obj,
        strategy: Strategy,
        subresource: str,
        opts: WriteOptions,
    ) -> Obj | Purge:
        info = self.info
        objectmeta.check_type_meta(info, new)
        requested = self._check_update_preconditions(ctx, name, new, current, strategy, opts)
        if requested and opts.preconditions_held is not None:
            opts.preconditions_held(info, name)
        objectmeta.prepare_update(info, new, current)
        strategy.default(info, new)
        if not opts.apply:
            managedfields.track_update(
                info, current, new, opts.field_manager,
                subresource=subresource, reset=self.reset_set(strategy),
            )  # fmt: skip
        admission = self.backing.admission
        namespace = request_namespace(info, self.namespace(ctx), name)
        attrs = Attributes(
            UPDATE, info, namespace, name, new, current, ctx.user, subresource, opts.dry_run,
            ctx.request, opts.warnings, ctx.audit_annotations, opts.field_manager,
            options=opts.sent,
        )  # fmt: skip
        if admission.mutating:
            await self._admit(attrs, new, opts)
        strategy.prepare_for_update(info, new, current)
        causes = objectmeta.update_causes(new, current)
        causes += metavalidation.update_causes(info, new, current)
        self._raise_invalid(new, causes + strategy.validate_update(info, new, current))
        strategy.canonicalize(info, new)
        managedfields.keep_stored_times(new, current)
        if admission.validating:
            await admission.validate(attrs)
        if strategy.should_delete_during_update(new):
            return Purge(new, at_deletion=False)
        return new

    def _check_update_preconditions(
        self,
        ctx: Context,
        name: str,
        new: Obj,
        current: Obj,
        strategy: Strategy,
        opts: WriteOptions,
    ) -> int:
        """The uid (a storage precondition for a PUT's body; a patch's is checked as immutable)
        and the resourceVersion, in kube's order. Returns the resourceVersion the update asks
        for (0: none, an unconditional update)."""
        info = self.info
        meta, current_meta = meta_of(new), current["metadata"]
        uid = "" if opts.patch else meta.get("uid") or ""
        failed = objectmeta.precondition_failure(current_meta, uid, "")
        if failed:
            raise errors.conflict(
                info.plural,
                info.group,
                name,
                f"StorageError: invalid object, Code: 4, Key: {self.key(ctx, name)}, "
                f"ResourceVersion: 0, AdditionalErrorMsg: {failed}",
            )
        requested = objectmeta.requested_version(new)
        if not requested and not strategy.allow_unconditional_update:
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
        stored = int(current_meta["resourceVersion"])
        if requested and requested != stored:
            raise errors.StaleWrite(info.plural, info.group, name, requested, stored)
        return requested

    # -- delete ----------------------------------------------------------------------------------

    async def delete(self, ctx: Context, name: str, opts: DeleteOptions) -> tuple[Obj, bool]:
        """DELETE. Returns (the answer, gone): the answer is the object while finalizers keep
        it (or when the kind returns deleted objects), else a Status."""

        async def step(current: Obj | None) -> Obj | Purge:
            if current is None:
                raise errors.not_found(self.info.plural, self.info.group, name)
            admission = self.backing.admission
            namespace = request_namespace(self.info, self.namespace(ctx), name)
            attrs = Attributes(
                DELETE, self.info, namespace, name, None, current, ctx.user, "",
                opts.dry_run, ctx.request, opts.warnings, ctx.audit_annotations,
                options=opts.sent,
            )  # fmt: skip
            if admission.mutating:
                await admission.admit(attrs)
            self.check_delete_preconditions(current, opts)
            if admission.validating:
                await admission.validate(attrs)
            return self.deletion(current, opts)

        result = await self.guaranteed_update(self.key(ctx, name), step, opts.dry_run)
        if self.hooks is not None and not opts.dry_run:
            await self.hooks.after_delete(ctx, name, result)
        if not result.purged:
            return result.obj, False
        if self.strategy.returns_deleted_object:
            return result.obj, True
        return deletion.success_status(self.info, result.obj), True

    def check_delete_preconditions(self, current: Obj, opts: DeleteOptions) -> None:
        deletion.check_preconditions(self.info, current, opts)

    def deletion(self, current: Obj, opts: DeleteOptions) -> Obj | Purge:
        """What a DELETE makes of the stored object: kept and marked as being deleted while
        finalizers (those it has, and the one its propagation policy adds) hold it, else
        purged."""
        meta = current["metadata"]
        period = None
        if not meta.get("deletionTimestamp"):
            period = self.strategy.check_graceful_delete(current, opts.grace_period_seconds)
        graceful = deletion.graceful_deletion(current, opts, period)
        if graceful is current:
            return current  # a graceful deletion pending: nothing to change (kube's finalizeDelete)
        policy = self.strategy.default_gc_policy(self.info)
        before = list(meta.get("finalizers") or [])
        finalizers = deletion.gc_finalizers(policy, opts, before)
        if graceful is not None:
            graceful["metadata"]["finalizers"] = finalizers
            if not finalizers:
                del graceful["metadata"]["finalizers"]
            graceful["metadata"].pop("resourceVersion", None)
            if finalizers or graceful["metadata"].get("deletionGracePeriodSeconds"):
                return graceful  # the grace period (or the finalizers) hold it
            return Purge(graceful)
        if not finalizers:
            return Purge(current)
        marked = clone(current)
        marked["metadata"]["finalizers"] = finalizers
        deletion.mark_deleting(marked)
        marked["metadata"].pop("resourceVersion", None)
        return marked

    async def delete_collection(
        self, ctx: Context, opts: DeleteOptions, list_opts: ListOptions
    ) -> Obj:
        """Delete every object the list selects (each as a DELETE would); answers the list."""
        listing = await collect(self.list(ctx, list_opts))
        for item in listing["items"]:
            meta = item["metadata"]
            item_ctx = Context(meta.get("namespace"), ctx.user, ctx.request, ctx.audit_annotations)
            try:
                await self.delete(item_ctx, meta["name"], opts)
            except APIError as exc:
                if exc.code != 404:
                    raise
        return listing

    # -- the optimistic loop -----------------------------------------------------------------

    async def guaranteed_update(self, key: str, step: Step, dry_run: bool) -> Written:
        """Apply ``step`` to the current object (None when absent) and compare-and-swap what it
        returns: a new object (stored, or created when absent), or :class:`Purge` (deleted). On
        a lost race, ``step`` runs again on the value the store returns. Equal bytes are not
        written (no-op: the current object, same resourceVersion, no event).

        It starts from the value this server last wrote, when it has one (:mod:`recent`), and
        reads the store only when it has none, when the CAS says the guess was stale, or before
        it lets an error or a no-op computed from the guess stand. A dry run always reads."""
        info, writes = self.info, self.writes
        kv = writes.starting_guess(key, dry_run)
        guessed = kv is not None
        if kv is None:
            kv = await self.store.get(key)
        codec = self.codec
        while True:
            # a conversion failure is the webhook's, not the guess's: it is not read again
            current = None if kv is None else await codec.decode(kv)
            try:
                new = await step(current)
            except APIError:
                if not guessed:
                    raise
                kv, guessed = await self.store.get(key), False
                continue
            try:
                if isinstance(new, Purge):
                    assert kv is not None
                    revision = await writes.delete(key, kv, dry_run)
                    stamp = revision if new.at_deletion else kv.mod_revision
                    return Written(rv.stamp(new.answer, stamp), written=True, purged=True)
                if codec.converts and current is not None and same_content(new, current):
                    assert kv is not None
                    data = kv.value  # unchanged: nothing to convert
                else:
                    data = await codec.encode(new)
                if kv is None:
                    revision = await writes.create(key, data, dry_run)
                    answer = await self._answer(new, data, revision)
                    return Written(answer, written=True, created=True)
                if same_stored(data, kv.value, info) or (
                    current is not None and same_content(new, current)
                ):
                    if guessed:
                        kv, guessed = await self.store.get(key), False
                        continue
                    return Written(await codec.decode(kv))
                revision = await writes.update(key, data, kv, dry_run)
                return Written(await self._answer(new, data, revision), written=True)
            except (Conflict, KeyExists) as exc:
                kv, guessed = exc.current, False
            except NotFound:
                writes.forget(key)
                kv, guessed = None, False

    # -- helpers ---------------------------------------------------------------------------------

    async def _answer(self, new: Obj, data: bytes, revision: int) -> Obj:
        """What a write answers: the object it stored; read back through the converter when
        the kind has one (kube decodes what it wrote)."""
        if not self.codec.converts:
            return stamped(new, revision)
        stored = await self.codec.read(data, revision)
        return stored if revision else rv.strip(stored)

    async def _admit(self, attrs: Attributes, obj: Obj, opts: WriteOptions) -> None:
        """Mutating admission of a create or update; managedFields it leaves undecodable are
        restored, with a warning (apiserver's fieldmanager admission)."""
        tracked = obj["metadata"].get("managedFields")
        if tracked is not None:
            tracked = clone_value(tracked)  # a plugin may change the list in place
        await self.backing.admission.admit(attrs)
        warning = managedfields.restore_after_admission(obj, tracked)
        if warning and opts.warnings is not None:
            opts.warnings.texts.append(warning)

    def reset_fields(self) -> tuple[str, ...]:
        return self.strategy.reset_fields(self.info)

    def reset_set(self, strategy: Strategy) -> FieldSet:
        return managedfields.reset_set(strategy.reset_fields(self.info))

    def _raise_invalid(self, obj: Obj, causes: Sequence[Cause]) -> None:
        if causes:
            name = str((obj.get("metadata") or {}).get("name", ""))
            raise errors.invalid(self.info.kind, self.info.group, name, list(causes))
