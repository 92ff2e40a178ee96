"""The subresources every kind may have, served over its generic store: ``status`` (the
kind's status strategy) and ``scale`` (an autoscaling/v1 Scale view of the replica count).
Both write through the generic store's update, so they get everything a write gets: the
optimistic loop, the kind's generation rule, admission and dry-run."""

from __future__ import annotations

from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import resourceversion as rv
from kubelite.api.encoding.stored import clone
from kubelite.api.fieldmanager import managedfields
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.rest import Context, GetOptions, ObjectUpdate, Storage, WriteOptions
from kubelite.api.machinery.scale import (
    SCALE_INFO,
    from_scale_entries,
    scale_paths,
    set_path,
    to_scale,
    to_scale_entries,
)
from kubelite.api.machinery.strategy import Strategy

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


class ReadThrough(UpdateThrough):
    """A subresource that also reads: GET answers the whole object (``status``, a pod's
    ``ephemeralcontainers``)."""

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Obj:
        return await self.store.get(ctx, name, opts)


class StatusREST(ReadThrough):
    """``<resource>/status``: get, update and patch through the kind's status strategy."""

    def __init__(self, store: GenericStore) -> None:
        super().__init__(store, store.strategy.status_strategy(), "status")


class ScaleREST:
    """``<resource>/scale``: the Scale view of ``spec.replicas`` (or a CRD's scale paths).
    A write maps the new Scale back onto the object and updates it with the kind's own strategy,
    so a replica change moves the generation as a spec change does. Ownership of the replica
    count maps between the two (apimachinery's ScaleHandler): the Scale shows the parent's
    owners of it, and a server-side apply to the Scale owns it on the parent."""

    object_info = None
    apply_info = SCALE_INFO

    def __init__(self, store: GenericStore) -> None:
        self.store = store
        self.info = store.info

    def reset_fields(self) -> tuple[str, ...]:
        return ("status",)

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
            spec_path = scale_paths(info)[0]
            owners = to_scale_entries(
                current["metadata"].get("managedFields"), managedfields.dotted_path(spec_path)
            )
            if owners:  # what an apply to the Scale checks its conflicts against
                scale["metadata"]["managedFields"] = owners
            new = await update(clone(scale))
            if not isinstance(new, dict):
                raise errors.bad_request("the patched Scale is not a JSON object")
            requested = rv.of(new)
            if requested and requested != scale["metadata"].get("resourceVersion"):
                raise errors.conflict(info.plural, info.group, name)
            parent = clone(current)
            set_path(parent, spec_path, _replicas(new, name))
            if opts.apply:  # the Scale's owners computed by the apply, mapped onto the parent
                meta = parent["metadata"]
                meta["managedFields"] = from_scale_entries(
                    meta.get("managedFields"),
                    (new.get("metadata") or {}).get("managedFields"),
                    managedfields.dotted_path(spec_path),
                    info.group_version,
                )
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
