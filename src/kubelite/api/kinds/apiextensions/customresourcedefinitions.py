"""The CustomResourceDefinition kind: its strategy (defaults, validation with apiextensions'
texts, the cleanup finalizer, and the status computed in the same write so a CRD is established
when stored) and its storage, whose writes answer only once this server's CRD controller has
applied them (:meth:`kubelite.api.controllers.crd.CRDController.caught_up`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding import resourceversion as rv
from kubelite.api.encoding.stored import now
from kubelite.api.errors import Cause
from kubelite.api.kinds.apiextensions import crdvalidation as crds
from kubelite.api.kinds.resource import Resource, Wiring
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.registry import Storages
from kubelite.api.machinery.rest import Context
from kubelite.api.machinery.strategy import Obj, Strategy
from kubelite.api.machinery.subresources import generic_subresources
from kubelite.api.machinery.writehooks import WriteHooks
from kubelite.api.machinery.writesteps import Written

CaughtUp = Callable[[int], Awaitable[None]]
GROUP, PLURAL = "apiextensions.k8s.io", "customresourcedefinitions"


class CRDStrategy(Strategy):
    def __init__(self, catalogue: Catalogue) -> None:
        super().__init__(tracks_generation=True, allow_unconditional_update=False)
        self.catalogue = catalogue

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        super().prepare_for_create(info, obj)
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if crds.CLEANUP_FINALIZER not in finalizers:
            finalizers.append(crds.CLEANUP_FINALIZER)

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        crds.apply_defaults(obj)

    def validate(self, info: ResourceInfo, obj: Obj) -> list[Cause]:
        crds.validate(obj)  # raises the 422 with apiextensions' texts
        return []

    def validate_update(self, info: ResourceInfo, new: Obj, old: Obj) -> list[Cause]:
        crds.validate(new, old)
        return []

    def canonicalize(self, info: ResourceInfo, obj: Obj) -> None:
        """The status the CRD controllers would write (names accepted, established, stored
        versions), set in the same write."""
        crds.set_status(obj, self.catalogue, now())


class CRDStorages(WriteHooks):
    """Builds the CRD resource's storages, whose hooks make a stored write (not a no-op)
    answer once the CRD controller applied it; ``caught_up`` is the controller's, set once it
    exists (it needs the registry these storages belong to)."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.strategy = CRDStrategy(catalogue)
        self.caught_up: CaughtUp | None = None

    async def after_create(self, ctx: Context, obj: Obj) -> None:
        await self._written(obj)

    async def after_update(self, ctx: Context, result: Written) -> None:
        if result.written:
            await self._written(result.obj)

    async def after_delete(self, ctx: Context, name: str, result: Written) -> None:
        if result.written:
            await self._written(result.obj)

    async def _written(self, obj: Obj) -> None:
        if self.caught_up is not None:
            await self.caught_up(int(rv.of(obj) or 0))

    def resource(self) -> Resource:
        """The CRD resource of the table: its strategy reads this catalogue."""
        return Resource(GROUP, PLURAL, self.strategy, self._storages)

    def _storages(
        self, info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring
    ) -> Storages:
        store = GenericStore(info, strategy, backing, hooks=self)
        return {"": store, **generic_subresources(store)}
