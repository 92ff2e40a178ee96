"""Per-kind strategies: what is special about one kind's writes (kube-apiserver's
``rest.RESTCreateStrategy``, ``RESTUpdateStrategy`` and ``RESTDeleteStrategy``).

The generic store (:mod:`kubelite.api.machinery.generic`) calls a strategy at fixed points of every
write and never asks which kind it serves. :class:`Strategy` is the default that built-in kinds with
no rules of their own share; a kind with rules subclasses it in ``kubelite.api.kinds``. A status
subresource writes with a :class:`StatusStrategy`: everything but ``status`` and metadata stays
as stored, and so does the metadata the kind names in ``status_keeps``.

The hooks, in the order the generic store calls them:

- create: defaults (:meth:`Strategy.default`), then (after mutating admission)
  :meth:`Strategy.prepare_for_create` (server-owned fields: status reset, generation 1), then
  :meth:`Strategy.validate`, then :meth:`Strategy.canonicalize`;
- update: defaults, then (after mutating admission) :meth:`Strategy.prepare_for_update` (status
  reset to the stored one, generation bumped by :meth:`Strategy.generation_changed`),
  :meth:`Strategy.validate_update`, canonicalize; then
  :meth:`Strategy.should_delete_during_update` decides whether the write purges a deleting
  object whose last finalizer it removed;
- delete: :meth:`Strategy.default_gc_policy` when the request names no propagation policy.
"""

from __future__ import annotations

from typing import Any

import orjson

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import Cause
from kubelite.api.machinery.names import subdomain_errors

Obj = dict[str, Any]

#: A kind's default garbage-collection policy (kube's GarbageCollectionPolicy values).
DELETE_DEPENDENTS = "DeleteDependents"
ORPHAN_DEPENDENTS = "OrphanDependents"
UNSUPPORTED = "Unsupported"

#: ResetObjectMetaForStatus: the metadata a status write of some kinds cannot change.
STATUS_KEEPS_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")
#: The top-level fields that are not a kind's content: an update that changes only these never
#: moves metadata.generation.
_NOT_CONTENT = frozenset({"metadata", "apiVersion", "kind"})
_NOT_SPEC = frozenset({"metadata", "status", "apiVersion", "kind"})


def changed_outside(old: Obj, new: Obj, ignored: frozenset[str]) -> bool:
    """Whether any top-level field not in ``ignored`` differs between ``old`` and ``new``."""
    keys = (old.keys() | new.keys()) - ignored
    return any(old.get(key) != new.get(key) for key in keys)


def spec_changed(old: Obj, new: Obj) -> bool:
    """The usual generation rule: the desired state (everything but metadata and status)
    changed. Kinds whose desired state is ``spec`` and kinds with other top-level fields
    (``webhooks``, ``rules``) both follow it."""
    return changed_outside(old, new, _NOT_SPEC)


def content_changed(old: Obj, new: Obj) -> bool:
    """Anything outside metadata changed (a custom resource without a status subresource)."""
    return changed_outside(old, new, _NOT_CONTENT)


def has_status_subresource(info: ResourceInfo) -> bool:
    return "status" in info.subresources


class Strategy:
    """The default strategy of a built-in kind: no generation, unconditional updates allowed,
    no create-on-update, DELETE answers a Status, dependents deleted in the background; when
    the kind has a status subresource, writes of the main resource keep the stored status.
    Kinds that differ only in these flags are built with keyword arguments; kinds with rules of
    their own subclass it."""

    def __init__(
        self,
        *,
        tracks_generation: bool = False,
        allow_create_on_update: bool = False,
        allow_unconditional_update: bool = True,
        returns_deleted_object: bool = False,
        status_keeps: tuple[str, ...] = (),
    ) -> None:
        #: metadata.generation is 1 on create and moves when :meth:`generation_changed` says so
        self.tracks_generation = tracks_generation
        #: a PUT to an absent name creates the object (201)
        self.allow_create_on_update = allow_create_on_update
        #: a PUT without metadata.resourceVersion writes over the latest version
        self.allow_unconditional_update = allow_unconditional_update
        #: DELETE answers with the deleted object instead of a Status
        self.returns_deleted_object = returns_deleted_object
        #: metadata fields (labels, ownerReferences...) a write through /status cannot change
        self.status_keeps = status_keeps

    # -- create --------------------------------------------------------------------------------

    def name_errors(self, name: str) -> list[str]:
        """Why ``name`` is not a valid name for the kind (most kinds: a DNS-1123 subdomain)."""
        return subdomain_errors(name)

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        """Server-owned fields of a new object: the status is the server's (dropped) when the
        kind has a status subresource; generation starts at 1 when it is tracked."""
        if has_status_subresource(info):
            obj.pop("status", None)
        if self.tracks_generation:
            obj["metadata"]["generation"] = 1

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        """Fill in defaults (in place), on create and on update."""

    def validate(self, info: ResourceInfo, obj: Obj) -> list[Cause]:
        """The kind's own validation of a new object: the causes of a 422."""
        return []

    def canonicalize(self, info: ResourceInfo, obj: Obj) -> None:
        """Put the object in its canonical form just before it is stored."""

    # -- update --------------------------------------------------------------------------------

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        """Fields an update of the main resource may not change: the stored status (when a
        status subresource owns it), and the generation, which moves only on a change the kind
        counts (:meth:`generation_changed`)."""
        if has_status_subresource(info):
            keep_stored(new, old, "status")
        self.set_generation(new, old)

    def set_generation(self, new: Obj, old: Obj) -> None:
        meta = new["metadata"]
        if not self.tracks_generation:
            meta.pop("generation", None)
            return
        generation = int(old["metadata"].get("generation") or 1)
        meta["generation"] = generation + 1 if self.generation_changed(old, new) else generation

    def generation_changed(self, old: Obj, new: Obj) -> bool:
        return spec_changed(old, new)

    def validate_update(self, info: ResourceInfo, new: Obj, old: Obj) -> list[Cause]:
        return self.validate(info, new)

    def should_delete_during_update(self, obj: Obj) -> bool:
        """Whether an update that leaves ``obj`` like this deletes it instead of storing it: it
        is being deleted and nothing holds it any more (kube's ShouldDeleteDuringUpdate)."""
        meta = obj.get("metadata") or {}
        return (
            bool(meta.get("deletionTimestamp"))
            and not meta.get("finalizers")
            and not meta.get("deletionGracePeriodSeconds")  # a graceful deletion still running
        )

    # -- delete --------------------------------------------------------------------------------

    def default_gc_policy(self, info: ResourceInfo) -> str:
        """What a DELETE without a propagation policy does to dependents, for the version it
        was asked at: DeleteDependents (background), OrphanDependents, or Unsupported (no
        garbage-collection finalizers at all)."""
        return DELETE_DEPENDENTS

    def check_graceful_delete(self, obj: Obj, grace_period_seconds: int | None) -> int | None:
        """The grace period a DELETE of ``obj`` waits (kube's RESTGracefulDeleteStrategy
        CheckGracefulDelete): None for kinds deleted at once (the default); a kind that deletes
        gracefully (pods) answers the period, 0 to delete now."""
        return None

    # -- subresources --------------------------------------------------------------------------

    def status_strategy(self) -> StatusStrategy:
        """The strategy of this kind's status subresource."""
        return StatusStrategy(self, self.status_keeps)

    def reset_fields(self, info: ResourceInfo) -> tuple[str, ...]:
        """Top-level fields a write of the main resource resets to the stored value (server-side
        apply does not count them as the writer's)."""
        return ("status",) if has_status_subresource(info) else ()


class StatusStrategy(Strategy):
    """Writes through ``/status``: only ``status`` and metadata come from the request, the rest
    stays as stored; generation never moves. A kind that keeps some metadata too (labels,
    ownerReferences) lists it in ``kept_metadata``."""

    def __init__(self, main: Strategy, kept_metadata: tuple[str, ...] = ()) -> None:
        super().__init__(
            tracks_generation=main.tracks_generation,
            allow_unconditional_update=main.allow_unconditional_update,
            returns_deleted_object=main.returns_deleted_object,
        )
        self.main = main
        self.kept_metadata = kept_metadata

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        for key in (new.keys() | old.keys()) - {"metadata", "status", "apiVersion", "kind"}:
            keep_stored(new, old, key)
        for key in self.kept_metadata:
            keep_stored(new["metadata"], old["metadata"], key)
        keep_generation(new, old)

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        self.main.default(info, obj)

    def validate_update(self, info: ResourceInfo, new: Obj, old: Obj) -> list[Cause]:
        return []

    def should_delete_during_update(self, obj: Obj) -> bool:
        return self.main.should_delete_during_update(obj)

    def reset_fields(self, info: ResourceInfo) -> tuple[str, ...]:
        return ("spec", *(f"metadata.{key}" for key in self.kept_metadata))


def keep_generation(new: Obj, old: Obj) -> None:
    """A write that never moves the generation (a subresource's): the stored one."""
    keep_stored(new["metadata"], old["metadata"], "generation")


def keep_stored(new: Obj, old: Obj, key: str) -> None:
    """``new[key]`` as in ``old`` (absent if absent there): a copy, since later steps may change
    ``new`` and ``old`` is the stored object admission and validation compare with."""
    if key in old:
        value = old[key]
        new[key] = orjson.loads(orjson.dumps(value)) if isinstance(value, dict | list) else value
    else:
        new.pop(key, None)
