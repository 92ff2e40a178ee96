"""Services (kube's pkg/registry/core/service): the strategy, the storage whose write hooks
allocate cluster IPs and node ports, and the ``default/kubernetes`` Service."""

from __future__ import annotations

import asyncio
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import clone
from kubelite.api.kinds.core import serviceallocation as allocation
from kubelite.api.kinds.core import servicefields
from kubelite.api.kinds.core.validation import services
from kubelite.api.kinds.resource import Resource, Wiring
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.names import label_errors
from kubelite.api.machinery.registry import Registry, Storages
from kubelite.api.machinery.rest import Context, WriteOptions
from kubelite.api.machinery.strategy import Strategy
from kubelite.api.machinery.subresources import generic_subresources
from kubelite.api.machinery.writehooks import WriteHooks
from kubelite.api.machinery.writesteps import Written

Obj = dict[str, Any]


class ServiceStrategy(BuiltinStrategy):
    """Services: DNS-1123 label names, create-on-update, DELETE answers the Service,
    SetDefaults_Service (:func:`services.default_service`), and before validation what the
    Service storage does first in kube (alloc.go, strategy.go): clusterIP and clusterIPs kept in
    step, values the server allocated kept when an update leaves them out, fields a type change
    makes meaningless dropped, and the IP family fields set. Allocation itself is
    :class:`ServiceAllocation`'s."""

    defaulters = (services.default_service,)
    validators = (services.validate_service,)

    def __init__(self) -> None:
        super().__init__(allow_create_on_update=True, returns_deleted_object=True)

    def name_errors(self, name: str) -> list[str]:
        return label_errors(name)

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        super().prepare_for_create(info, obj)
        if isinstance(obj.get("spec"), dict):
            servicefields.normalize_cluster_ips(obj, None)
            servicefields.init_ip_family_fields(obj, None)

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        super().prepare_for_update(info, new, old)
        if isinstance(new.get("spec"), dict) and isinstance(old.get("spec"), dict):
            servicefields.patch_allocated_values(new, old)
            servicefields.normalize_cluster_ips(new, old)
            servicefields.drop_type_dependent_fields(new, old)
            servicefields.init_ip_family_fields(new, old)


class ServiceAllocation(WriteHooks):
    """The Service storage's hooks (kube's service REST: beginCreate, beginUpdate, afterDelete):
    cluster IPs and node ports allocated (:mod:`kubelite.api.kinds.core.serviceallocation`) once a
    new or updated Service passed validation, on each try of its write (an earlier try's reverted),
    reverted when the write fails; what an update frees is released once it is stored, and a removed
    Service's allocations when it is gone. A write through a subresource (``status``) allocates
    nothing."""

    def __init__(self, allocator: allocation.ServiceAllocator) -> None:
        self.allocator = allocator

    async def begin_create(self, obj: Obj, opts: WriteOptions) -> allocation.Txn:
        return await self.allocator.allocate(obj, None, opts.dry_run)

    async def begin_update(
        self, new: Obj, old: Obj, opts: WriteOptions, subresource: str
    ) -> allocation.Txn | None:
        if subresource:
            return None
        return await self.allocator.allocate(new, old, opts.dry_run)

    async def after_update(self, ctx: Context, result: Written) -> None:
        if result.purged:  # the update removed the last finalizer of a deleting Service
            await self.allocator.release(result.obj)

    async def after_delete(self, ctx: Context, name: str, result: Written) -> None:
        if result.purged:
            await self.allocator.release(result.obj)


def service_storages(
    info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring
) -> Storages:
    ranges = wiring.service_ranges
    allocator = allocation.ServiceAllocator(backing.store, ranges.cidr, ranges.node_ports)
    store = GenericStore(info, strategy, backing, hooks=ServiceAllocation(allocator))
    return {"": store, **generic_subresources(store)}


RESOURCE = Resource("", "services", ServiceStrategy(), service_storages)


#: The Service every cluster has (kube-apiserver's controlplane "kubernetes" service).
KUBERNETES_SERVICE: Obj = {
    "metadata": {
        "name": "kubernetes",
        "namespace": "default",
        "labels": {"component": "apiserver", "provider": "kubernetes"},
    },
    "spec": {
        "type": "ClusterIP",
        "clusterIP": "10.96.0.1",
        "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
        "sessionAffinity": "None",
    },
}


async def ensure_kubernetes_service(
    registry: Registry,
    catalogue: Catalogue,
    ranges: allocation.ServiceRanges = allocation.ServiceRanges(),  # noqa: B008 (frozen)
) -> None:
    """Create ``default/kubernetes`` (at the range's first address) when it is missing
    (several servers may race: the loser finds the IP or the name taken, and then the
    Service)."""
    info = catalogue.require("", "v1", "services")
    for _ in range(50):
        try:
            await registry.get(info, "default", "kubernetes")
            return
        except errors.APIError as exc:
            if exc.code != 404:
                raise
        try:
            service = clone(KUBERNETES_SERVICE)
            service["spec"]["clusterIP"] = ranges.kubernetes_ip
            await registry.create(info, "default", service)
            return
        except errors.APIError as exc:
            if exc.reason not in ("AlreadyExists", "Invalid"):
                raise
        await asyncio.sleep(0.1)
    raise RuntimeError("could not create the default/kubernetes Service")
