"""The Namespace kind: its strategy, its storage (DELETE starts termination), the ``finalize``
subresource, the NamespaceLifecycle admission plugin and the namespaces every cluster has.

How a namespace goes (kube-apiserver's pkg/registry/core/namespace storage and strategy, and
the NamespaceLifecycle admission plugin):

1. Create: ``status.phase`` is ``Active`` whatever was sent, and ``spec.finalizers`` includes
   ``kubernetes``.
2. DELETE: the first one sets ``metadata.deletionTimestamp`` and ``status.phase: Terminating``
   (and the propagation policy's finalizer, if any) and answers 200 with the object. From then
   on creates in it are refused (403, admission). Another DELETE while ``spec.finalizers`` is
   non-empty answers 409; ``default``, ``kube-system`` and ``kube-public`` answer 403.
3. The namespace controller (:mod:`kubelite.api.controllers.namespace`) deletes the content,
   then removes ``kubernetes`` through ``finalize``; the write that leaves both finalizer lists
   empty deletes the namespace.
"""

from __future__ import annotations

import copy
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import clone, now
from kubelite.api.errors import APIError, Cause
from kubelite.api.kinds.core.defaults import default_namespace
from kubelite.api.kinds.resource import Resource, Wiring
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.admission import CREATE, DELETE, Attributes
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.deletion import gc_finalizers
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.names import label_errors
from kubelite.api.machinery.objectmeta import precondition_failure
from kubelite.api.machinery.reads import ReadsOf
from kubelite.api.machinery.registry import Registry, Storages
from kubelite.api.machinery.rest import (
    Context,
    DeleteOptions,
    ObjectUpdate,
    WriteOptions,
)
from kubelite.api.machinery.strategy import (
    StatusStrategy,
    Strategy,
    keep_generation,
    keep_stored,
)
from kubelite.api.machinery.subresources import StatusREST, UpdateThrough
from kubelite.api.machinery.writesteps import Purge

Obj = dict[str, Any]

GROUP, PLURAL = "", "namespaces"
#: The finalizer the namespace controller owns (``spec.finalizers``, not metadata's).
KUBERNETES_FINALIZER = "kubernetes"
#: Namespaces that may never be deleted (kube's NamespaceLifecycle admission plugin).
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
#: Namespaces a new server creates.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
#: The label every Namespace carries, its name (kube's v1.LabelMetadataName).
METADATA_NAME_LABEL = "kubernetes.io/metadata.name"
TERMINATING_CONFLICT = (
    "The system is ensuring all content is removed from this namespace.  Upon completion, this "
    "namespace will automatically be purged by the system."
)


def deletion_held(obj: Obj) -> bool:
    """Whether ``spec.finalizers`` keeps a deleting Namespace stored."""
    return bool((obj.get("spec") or {}).get("finalizers"))


class NamespaceStrategy(BuiltinStrategy):
    defaulters = (default_namespace,)

    def __init__(self) -> None:
        super().__init__(returns_deleted_object=True)

    def name_errors(self, name: str) -> list[str]:
        return label_errors(name)

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        """``status`` is ``{"phase": "Active"}`` whatever was sent, and ``spec.finalizers``
        includes ``kubernetes`` (appended if others were given)."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list):
            finalizers = []
        if KUBERNETES_FINALIZER not in finalizers:
            finalizers = [*finalizers, KUBERNETES_FINALIZER]
        spec["finalizers"] = finalizers
        obj["status"] = {"phase": "Active"}

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        """``spec.finalizers`` and ``status`` stay as stored: only ``finalize`` and ``status``
        change them."""
        finalizers = (old.get("spec") or {}).get("finalizers")
        spec = new.get("spec")
        if not isinstance(spec, dict):
            spec = new["spec"] = {}
        if finalizers:
            spec["finalizers"] = copy.deepcopy(finalizers)
        else:
            spec.pop("finalizers", None)
        super().prepare_for_update(info, new, old)  # the status, kept by its subresource

    def should_delete_during_update(self, obj: Obj) -> bool:
        return super().should_delete_during_update(obj) and not deletion_held(obj)

    def validate(self, info: ResourceInfo, obj: Obj) -> list[Cause]:
        return super().validate(info, obj) + finalizer_causes(obj)

    def canonicalize(self, info: ResourceInfo, obj: Obj) -> None:
        """The label ``kubernetes.io/metadata.name: <name>`` on every write, whatever was sent
        (kube's namespaceStrategy.Canonicalize, with SetDefaults_Namespace before admission)."""
        super().canonicalize(info, obj)
        meta = obj["metadata"]
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            return
        labels = meta.get("labels")
        if not isinstance(labels, dict):
            labels = meta["labels"] = {}
        labels[METADATA_NAME_LABEL] = name


class FinalizeStrategy(StatusStrategy):
    """``PUT .../namespaces/<n>/finalize``: the status stays as stored, the rest (in practice
    ``spec.finalizers``, checked: ``kubernetes`` or a qualified name) is the body's."""

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        keep_stored(new, old, "status")
        spec = new.get("spec")
        if isinstance(spec, dict) and not spec.get("finalizers"):
            spec.pop("finalizers", None)  # an empty list is no list (omitempty)
        keep_generation(new, old)

    def validate_update(self, info: ResourceInfo, new: Obj, old: Obj) -> list[Cause]:
        return finalizer_causes(new)


def finalizer_causes(obj: Obj) -> list[Cause]:
    """ValidateNamespace's rule for ``spec.finalizers``: ``kubernetes`` or qualified names."""
    raw = (obj.get("spec") or {}).get("finalizers") or []
    if not isinstance(raw, list):
        raise errors.bad_request("spec.finalizers must be a list")
    return [
        Cause(
            "FieldValueInvalid",
            f'Invalid value: "{value}": name is neither a standard finalizer name nor is it '
            "fully qualified",
            f"spec.finalizers[{i}]",
        )
        for i, value in enumerate(raw)
        if not isinstance(value, str) or (value != KUBERNETES_FINALIZER and "/" not in value)
    ]


class NamespaceStore(GenericStore):
    """The generic store with the Namespace's DELETE: the first one starts termination."""

    def check_delete_preconditions(self, current: Obj, opts: DeleteOptions) -> None:
        """kube's namespace DELETE checks its preconditions in storage, with storage's texts."""
        meta = current["metadata"]
        uid, version = opts.precondition_uid, opts.precondition_resource_version
        failed = precondition_failure(meta, uid, version)
        if failed:
            raise errors.conflict(PLURAL, GROUP, meta.get("name", ""), failed)

    def deletion(self, current: Obj, opts: DeleteOptions) -> Obj | Purge:
        if not current["metadata"].get("deletionTimestamp"):
            marked = clone(current)
            before = marked["metadata"].get("finalizers") or []
            finalizers = gc_finalizers(self.strategy.default_gc_policy(self.info), opts, before)
            if finalizers:
                marked["metadata"]["finalizers"] = finalizers
            else:
                marked["metadata"].pop("finalizers", None)
            marked["metadata"]["deletionTimestamp"] = now()
            status = marked.get("status")
            if not isinstance(status, dict):
                status = marked["status"] = {}
            status["phase"] = "Terminating"
            marked["metadata"].pop("resourceVersion", None)
            return marked
        if deletion_held(current):
            raise errors.conflict(PLURAL, GROUP, current["metadata"]["name"], TERMINATING_CONFLICT)
        return super().deletion(current, opts)


class NamespaceREST(ReadsOf):
    """The Namespace resource: every verb but deletecollection (as in kube-apiserver)."""

    store: NamespaceStore

    async def create(self, ctx: Context, body: Obj, opts: WriteOptions) -> Obj:
        return await self.store.create(ctx, body, opts)

    async def update(
        self, ctx: Context, name: str, update: ObjectUpdate, opts: WriteOptions
    ) -> tuple[Obj, bool]:
        return await self.store.update(ctx, name, update, opts)

    async def delete(self, ctx: Context, name: str, opts: DeleteOptions) -> tuple[Obj, bool]:
        return await self.store.delete(ctx, name, opts)


def storages(info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring) -> Storages:
    store = NamespaceStore(info, strategy, backing)
    finalize = UpdateThrough(store, FinalizeStrategy(store.strategy), "finalize")
    return {"": NamespaceREST(store), "status": StatusREST(store), "finalize": finalize}


RESOURCE = Resource(GROUP, PLURAL, NamespaceStrategy(), storages)


class NamespaceLifecycleAdmission:
    """kube's NamespaceLifecycle admission plugin: no new content in a namespace that does not
    exist (404) or is being terminated (403), and the system namespaces are never deleted. A
    mutating plugin, as kube's is (``Admit``): it answers before the object is validated."""

    def __init__(self, registry: Registry, info: ResourceInfo) -> None:
        self.registry = registry
        self.info = info

    async def admit(self, attrs: Attributes) -> None:
        target = attrs.info
        if attrs.operation == DELETE and (target.group, target.plural) == (GROUP, PLURAL):
            if attrs.name in IMMORTAL_NAMESPACES:
                raise errors.forbidden(
                    PLURAL, GROUP, attrs.name, "this namespace may not be deleted"
                )
            return
        if attrs.operation != CREATE or not target.namespaced or not attrs.namespace:
            return
        if attrs.subresource:
            return
        namespace = await self._namespace(attrs.namespace)
        if (namespace.get("metadata") or {}).get("deletionTimestamp"):
            raise errors.forbidden(
                target.plural,
                target.group,
                attrs.name,
                f"unable to create new content in namespace {attrs.namespace} because it is "
                "being terminated",
                [
                    Cause(
                        "NamespaceTerminating",
                        f"namespace {attrs.namespace} is being terminated",
                        "metadata.namespace",
                    )
                ],
            )

    async def _namespace(self, name: str) -> Obj:
        return await self.registry.get(self.info, None, name)  # 404 namespaces "<name>"


def namespace_info(catalogue: Catalogue) -> ResourceInfo:
    return catalogue.require(GROUP, "v1", PLURAL)


async def ensure_system_namespaces(registry: Registry, catalogue: Catalogue) -> None:
    """Create the namespaces every cluster has, when they are missing."""
    info = namespace_info(catalogue)
    for name in SYSTEM_NAMESPACES:
        try:
            await registry.create(info, None, {"metadata": {"name": name}})
        except APIError as exc:
            if exc.reason != "AlreadyExists":
                raise
