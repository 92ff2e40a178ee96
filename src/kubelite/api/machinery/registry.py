"""The registry: which storage serves each resource and subresource, built once per kind from
the kind table, and the calls controllers inside kubelite make through those storages.

A :class:`Registry` holds what every storage shares
(:class:`~kubelite.api.machinery.backing.Backing`: the store, this server's recent writes, the watch
caches, the admission chain) and asks its :class:`Kinds` table for the storages of a resource the
first time it is served (again when a CRD changes the kind's ResourceInfo). The table lives in
``kubelite.api.kinds``; nothing here knows any kind.

The verbs below (get, list, create, update, patch, apply, mutate, delete) are for code inside
kubelite (controllers, bootstrap, tests): they go through the same storages as an HTTP request,
as the cluster's administrator, with their ObjectUpdates built where a request's are
(:mod:`kubelite.api.machinery.updates`), so a controller's write gets the strategy, admission and
the optimistic loop exactly as a client's does. Their writes are recorded in managedFields under
``field_manager`` (default :data:`SERVER_MANAGER`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.machinery import updates
from kubelite.api.machinery.admission import Admission
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.patching import Applied
from kubelite.api.machinery.reads import collect
from kubelite.api.machinery.recent import RecentValues
from kubelite.api.machinery.rest import (
    Context,
    Creater,
    DeleteOptions,
    GetOptions,
    Getter,
    GracefulDeleter,
    Lister,
    NamedCreater,
    Patcher,
    ResetFields,
    Storage,
    Updater,
    WriteOptions,
    implements,
)
from kubelite.api.machinery.watchcache import WatchCacheSet
from kubelite.storage import Compacted, FutureRevision, Store

Obj = dict[str, Any]
#: The manager the server's own writes are recorded under in managedFields (kube-apiserver's).
SERVER_MANAGER = "kube-apiserver"
#: A resource's storages by subresource name ("" is the resource itself).
Storages = dict[str, Storage]


class Kinds(Protocol):
    """The kind table: the storages that serve one resource and its subresources."""

    def storages(self, info: ResourceInfo, backing: Backing) -> Storages: ...


class Registry:
    def __init__(
        self,
        store: Store,
        kinds: Kinds,
        *,
        caches: WatchCacheSet | None = None,
        admission: Admission | None = None,
    ) -> None:
        self.store = store
        self.kinds = kinds
        self.recent = RecentValues()
        # ``is None``: an empty WatchCacheSet is falsy (it has a length)
        self.caches = caches if caches is not None else WatchCacheSet(store)
        self.admission = admission if admission is not None else Admission()
        self.backing = Backing(store, self.recent, self.caches, self.admission)
        self._built: dict[tuple[str, str, str], tuple[ResourceInfo, Storages]] = {}

    # -- storages --------------------------------------------------------------------------------

    def storages(self, info: ResourceInfo) -> Storages:
        """The storages serving ``info`` (built on first use, and again when a CRD change gave
        the kind a new ResourceInfo)."""
        key = (info.group, info.version, info.plural)
        built = self._built.get(key)
        if built is None or (built[0] is not info and built[0] != info):
            built = (info, self.kinds.storages(info, self.backing))
            self._built[key] = built
        return built[1]

    def storage(self, info: ResourceInfo, subresource: str = "") -> Storage | None:
        return self.storages(info).get(subresource)

    def _serving(self, info: ResourceInfo, subresource: str, interface: type) -> Any:
        storage = self.storage(info, subresource)
        if not implements(storage, interface):
            raise errors.method_not_allowed()
        return storage

    # -- verbs for code inside kubelite -----------------------------------------------------------

    async def get(self, info: ResourceInfo, namespace: str | None, name: str) -> Obj:
        getter: Getter = self._serving(info, "", Getter)
        return await getter.get(Context(namespace), name, GetOptions())

    async def list(
        self, info: ResourceInfo, namespace: str | None, opts: ListOptions | None = None
    ) -> Obj:
        lister: Lister = self._serving(info, "", Lister)
        return await collect(lister.list(Context(namespace), opts or ListOptions()))

    async def create(
        self,
        info: ResourceInfo,
        namespace: str | None,
        body: Obj,
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str = SERVER_MANAGER,
    ) -> Obj:
        """POST; with ``subresource``, a create on the subresource of the object the body's
        ``metadata.name`` names (``pods/<name>/binding``), as ``POST .../<name>/<subresource>``."""
        options = WriteOptions(dry_run, field_manager)
        if subresource:
            named: NamedCreater = self._serving(info, subresource, NamedCreater)
            name = str((body.get("metadata") or {}).get("name") or "")
            return await named.create_named(Context(namespace), name, body, options)
        creater: Creater = self._serving(info, "", Creater)
        return await creater.create(Context(namespace), body, options)

    async def update(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        body: Obj,
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_manager: str = SERVER_MANAGER,
    ) -> tuple[Obj, bool]:
        """PUT. Returns (object, created)."""
        updater: Updater = self._serving(info, subresource, Updater)
        put = updates.put(info, namespace if info.namespaced else None, name, body)
        options = WriteOptions(dry_run, field_manager)
        return await updater.update(Context(namespace), name, put, options)

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
        field_manager: str = SERVER_MANAGER,
    ) -> Obj:
        patcher: Patcher = self._serving(info, subresource, Patcher)
        schema = self.storages(info)[subresource].object_info
        update = updates.patch(info, name, patch_type, patch, schema=schema)
        options = WriteOptions(dry_run, field_manager, patch=True)
        obj, _ = await patcher.update(Context(namespace), name, update, options)
        return obj

    async def apply(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        config: Obj,
        *,
        field_manager: str,
        force: bool = False,
        dry_run: bool = False,
    ) -> tuple[Obj, bool]:
        """Server-side apply of ``config`` (an apply configuration: apiVersion, kind,
        metadata.name and the fields ``field_manager`` means to own) to the resource itself,
        as ``PATCH`` with ``application/apply-patch+yaml``: conflicts are 409 unless ``force``;
        a missing object is created. Returns (object, created). The configuration is taken as
        already decoded (a caller inside kubelite builds it), so it is not type-checked the way
        an HTTP body is before the apply."""
        patcher: Patcher = self._serving(info, "", Patcher)
        storage = self.storages(info)[""]
        reset = storage.reset_fields() if isinstance(storage, ResetFields) else ()
        update = updates.apply(
            info, namespace, name, Applied(config), field_manager, force=force, reset=reset
        )
        options = WriteOptions(dry_run, field_manager, apply=True, patch=True)
        return await patcher.update(Context(namespace), name, update, options)

    async def mutate(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        change: Callable[[Obj], None],
        *,
        subresource: str = "",
        field_manager: str = SERVER_MANAGER,
    ) -> Obj:
        """A read-modify-write (:func:`kubelite.api.machinery.updates.mutation`): ``change`` edits a
        copy of the stored object in place, again on each try of the optimistic loop, and may raise
        an APIError of its own (a uid it expects); 404 when there is no object."""
        updater: Updater = self._serving(info, subresource, Updater)
        update = updates.mutation(info, name, change)
        options = WriteOptions(field_manager=field_manager)
        obj, _ = await updater.update(Context(namespace), name, update, options)
        return obj

    async def delete(
        self,
        info: ResourceInfo,
        namespace: str | None,
        name: str,
        opts: DeleteOptions | None = None,
    ) -> tuple[Obj, bool]:
        """DELETE. Returns (the answer, gone)."""
        deleter: GracefulDeleter = self._serving(info, "", GracefulDeleter)
        return await deleter.delete(Context(namespace), name, opts or DeleteOptions())

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
