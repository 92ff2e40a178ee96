"""What a kind adds to the generic store's writes, at fixed points: kube-apiserver's Store hooks
(``registry/generic/registry/store.go``: BeginCreate and BeginUpdate returning a FinishFunc,
AfterCreate, AfterUpdate, AfterDelete), so that no kind's storage re-declares the store's verbs.

The points, in a write's order (:mod:`kubelite.api.machinery.generic` calls them; a store without
hooks
calls nothing)::

    create:  before_create(body as sent) -> ... validating admission -> begin_create(obj)
             -> store.create -> (the write settled) -> after_create(stored)
    update:  updated(the ObjectUpdate) once -> per try: ... validating admission
             -> begin_update(new, old) -> store.update -> (the write settled) -> after_update
    delete:  ... store.update or store.delete -> after_delete

``begin_create`` and ``begin_update`` run once per try of the optimistic loop, when the try's
object passed validation and admission and is about to be stored, and may change it (a
Service's allocated IPs and ports); what they return (a :class:`Finish`, kube's FinishFunc) is
reverted when a later try of the same write begins (a lost race, a generated name already
taken) or when the write fails, and the last try's is committed once the write is stored. A try
that removes the object (the update took its last finalizer) begins nothing, and reverts the
earlier tries'. The after hooks run once the verb succeeded, never for a dry run; the update's
and the delete's are handed what the optimistic loop returned (stored or not, purged or not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from kubelite.api.machinery.rest import Context, ObjectUpdate, WriteOptions

if TYPE_CHECKING:
    from kubelite.api.machinery.writesteps import Written

Obj = dict[str, Any]


class Finish(Protocol):
    """What a begin hook started for one try of a write (kube's FinishFunc, called with
    success true or false): committed once the write is stored, else reverted."""

    async def commit(self) -> None: ...

    async def revert(self) -> None: ...


class WriteHooks:
    """The hooks of one kind's generic store; each default does nothing."""

    async def before_create(self, ctx: Context, body: Obj) -> None:
        """A create as sent, before the store does anything (kube's policy-based storages
        check it in front of the store)."""

    def updated(self, ctx: Context, update: ObjectUpdate, subresource: str) -> ObjectUpdate:
        """The ObjectUpdate an update runs on each try (kube's WrapUpdatedObjectInfo);
        ``subresource`` is the endpoint written ("" for the resource itself)."""
        return update

    async def begin_create(self, obj: Obj, opts: WriteOptions) -> Finish | None:
        """A try's new object (a POST's, or a create through an update), ready to store."""
        return None

    async def begin_update(
        self, new: Obj, old: Obj, opts: WriteOptions, subresource: str
    ) -> Finish | None:
        """A try's updated object, ready to store over ``old``."""
        return None

    async def after_create(self, ctx: Context, obj: Obj) -> None:
        """A create (a create through an update too) was stored: the object it answers."""

    async def after_update(self, ctx: Context, result: Written) -> None:
        """An update succeeded: what it stored, or the object it left as it was (a no-op), or
        the object it removed (``purged``)."""

    async def after_delete(self, ctx: Context, name: str, result: Written) -> None:
        """A DELETE succeeded: the object removed (``purged``), or kept and marked as being
        deleted."""


class Tries:
    """The :class:`Finish` of each try of one write through ``hooks``: an earlier try's is
    reverted when a later one begins (or begins nothing); the last is committed when the write
    is stored, and everything is reverted when it fails."""

    __slots__ = ("hooks", "pending")

    def __init__(self, hooks: WriteHooks) -> None:
        self.hooks = hooks
        self.pending: list[Finish] = []

    async def begin_create(self, obj: Obj, opts: WriteOptions) -> None:
        await self.revert()
        self._keep(await self.hooks.begin_create(obj, opts))

    async def begin_update(self, new: Obj, old: Obj, opts: WriteOptions, subresource: str) -> None:
        await self.revert()
        self._keep(await self.hooks.begin_update(new, old, opts, subresource))

    def _keep(self, finish: Finish | None) -> None:
        if finish is not None:
            self.pending.append(finish)

    async def revert(self) -> None:
        pending, self.pending = self.pending, []
        for finish in pending:
            await finish.revert()

    async def commit(self) -> None:
        """The write was stored: the last try's work is kept."""
        pending, self.pending = self.pending, []
        for finish in pending[:-1]:
            await finish.revert()
        if pending:
            await pending[-1].commit()
