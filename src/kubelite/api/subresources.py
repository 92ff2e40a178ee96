"""The subresources every kind may have, served over its generic store: ``status`` (the
kind's status strategy) and ``scale`` (an autoscaling/v1 Scale view of the replica count).
Both write through the generic store's update, so they get everything a write gets: the
optimistic loop, the kind's generation rule, admission and dry-run."""

from __future__ import annotations

from typing import Any

from kubelite.api import errors
from kubelite.api import resourceversion as rv
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.generic import GenericStore
from kubelite.api.rest import Context, GetOptions, ObjectUpdate, Storage, WriteOptions
from kubelite.api.scale import scale_paths, set_path, to_scale
from kubelite.api.stored import clone
from kubelite.api.strategy import Strategy

Obj = dict[str, Any]


class UpdateThrough:
    """A subresource that updates the object through a strategy of its own (``finalize``);
    the generic store runs the write, so it gets the optimistic loop, admission and dry-run."""

    def __init__(self, store: GenericStore, strategy: Strategy, subresource: str) -> None:
        self.store = store
        self.info = store.info
        self.strategy = strategy
        self.subresource = subresource

    @property
    def object_info(self) -> ResourceInfo:
        return self.info

    def reset_fields(self) -> tuple[str, ...]:
        return self.strategy.reset_fields(self.info)

    async def update(
        self, ctx: Context, name: str, update: ObjectUpdate, opts: WriteOptions
    ) -> tuple[Obj, bool]:
        return await self.store.update(
            ctx, name, update, opts, strategy=self.strategy, subresource=self.subresource
        )


class StatusREST(UpdateThrough):
    """``<resource>/status``: get, update and patch through the kind's status strategy."""

    def __init__(self, store: GenericStore) -> None:
        super().__init__(store, store.strategy.status_strategy(), "status")

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Obj:
        return await self.store.get(ctx, name, opts)


class ScaleREST:
    """``<resource>/scale``: the Scale view of ``spec.replicas`` (or a CRD's scale paths).
    A write maps the new Scale back onto the object and updates it with the kind's own strategy,
    so a replica change moves the generation as a spec change does."""

    object_info = None

    def __init__(self, store: GenericStore) -> None:
        self.store = store
        self.info = store.info

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Obj:
        return to_scale(await self.store.get(ctx, name, opts), self.info)

    async def update(
        self, ctx: Context, name: str, update: ObjectUpdate, opts: WriteOptions
    ) -> tuple[Obj, bool]:
        info = self.info

        async def onto_parent(current: Obj | None) -> Obj:
            if current is None:
                raise errors.not_found(info.plural, info.group, name)
            scale = to_scale(current, info)
            new = await update(clone(scale))
            if not isinstance(new, dict):
                raise errors.bad_request("the patched Scale is not a JSON object")
            requested = rv.of(new)
            if requested and requested != scale["metadata"].get("resourceVersion"):
                raise errors.conflict(info.plural, info.group, name)
            parent = clone(current)
            set_path(parent, scale_paths(info)[0], _replicas(new, name))
            return parent

        obj, _ = await self.store.update(ctx, name, onto_parent, opts, subresource="scale")
        return to_scale(obj, info), False


def _replicas(scale: Obj, name: str) -> int:
    replicas = (scale.get("spec") or {}).get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        raise errors.invalid(
            "Scale",
            "autoscaling",
            name,
            [
                errors.Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {replicas}: must be greater than or equal to 0",
                    "spec.replicas",
                )
            ],
        )
    return replicas


def generic_subresources(store: GenericStore) -> dict[str, Storage]:
    """The storages of ``store``'s kind's served generic subresources, by name."""
    found: dict[str, Storage] = {}
    if "status" in store.info.subresources:
        found["status"] = StatusREST(store)
    if "scale" in store.info.subresources:
        found["scale"] = ScaleREST(store)
    return found
