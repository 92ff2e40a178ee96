"""The core group's kinds with rules of their own (kube-apiserver's ``pkg/registry/core``):
strategies, and the storages of ``serviceaccounts/<n>/token``, ``bindings`` (and
``pods/<n>/binding``) and the read-only ``componentstatuses``.

Namespaces have a module of their own (:mod:`kubelite.api.kinds.namespaces`). Sources: each
kind's ``strategy.go`` and ``storage/storage.go``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kubelite.api import errors
from kubelite.api.auth import authn
from kubelite.api.auth.authn import AccountLookup
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import Cause
from kubelite.api.kinds import allocation
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.kinds.validation import podephemeral, pods, services
from kubelite.api.machinery.admission import CREATE, Attributes
from kubelite.api.machinery.generic import Backing, GenericStore, Purge, ReadsOf, Written
from kubelite.api.machinery.names import label_errors
from kubelite.api.machinery.objectmeta import precondition_failure
from kubelite.api.machinery.registry import Registry, Storages
from kubelite.api.machinery.rest import Context, GetOptions, WriteOptions
from kubelite.api.machinery.strategy import ORPHAN_DEPENDENTS, UNSUPPORTED, Strategy, keep_stored
from kubelite.api.machinery.subresources import ReadThrough, generic_subresources
from kubelite.api.machinery.writehooks import WriteHooks

Obj = dict[str, Any]


class PodStrategy(BuiltinStrategy):
    """Pods: generation moves on spec changes (1.33+), DELETE answers the pod, and /status
    cannot touch ownerReferences (kube guards them against old kubelets). A new pod's status is
    the server's: phase Pending, its QoS class, and PodScheduled False while scheduling gates
    hold it; pod affinity terms' matchLabelKeys join their selectors (kube's
    podStrategy.PrepareForCreate)."""

    def __init__(self) -> None:
        super().__init__(
            tracks_generation=True,
            returns_deleted_object=True,
            status_keeps=("ownerReferences",),
        )

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        from kubelite.api.kinds.defaults.pods import pod_qos  # this class's only imports
        from kubelite.api.kinds.validation.podscheduling import apply_match_label_keys

        super().prepare_for_create(info, obj)
        apply_match_label_keys(obj)
        status: Obj = {"phase": "Pending", "qosClass": pod_qos(obj)}
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("schedulingGates"):
            status["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }
            ]
        obj["status"] = status


class EphemeralContainersStrategy(BuiltinStrategy):
    """``pods/<name>/ephemeralcontainers`` (kube's podEphemeralContainersStrategy): the stored
    pod with only ``spec.ephemeralContainers`` taken from the request (and the request's
    managedFields, which record this write); generation moves when they change. Validated as
    ValidatePodEphemeralContainersUpdate: the pod spec, and no ephemeral container removed or
    changed."""

    def __init__(self, main: Strategy) -> None:
        super().__init__(tracks_generation=True, returns_deleted_object=True)
        self.main = main

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        self.main.default(info, obj)

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        spec = new.get("spec")
        wanted = spec.get("ephemeralContainers") if isinstance(spec, dict) else None
        for key in (new.keys() | old.keys()) - {"metadata", "apiVersion", "kind"}:
            keep_stored(new, old, key)
        meta, old_meta = new["metadata"], old["metadata"]
        for key in (meta.keys() | old_meta.keys()) - _EPHEMERAL_REQUEST_METADATA:
            keep_stored(meta, old_meta, key)
        spec = new.get("spec")
        if isinstance(spec, dict):
            if wanted is None:
                spec.pop("ephemeralContainers", None)
            else:
                spec["ephemeralContainers"] = wanted
        self.set_generation(new, old)

    def validate_update(self, info: ResourceInfo, new: Obj, old: Obj) -> list[Cause]:
        return pods.validate_pod(new, old) + podephemeral.update_causes(new, old)

    def reset_fields(self, info: ResourceInfo) -> tuple[str, ...]:
        return ("status",)


#: what a write through ephemeralcontainers takes from the request's metadata
_EPHEMERAL_REQUEST_METADATA = frozenset(
    {"name", "namespace", "resourceVersion", "uid", "managedFields"}
)


class ServiceStrategy(BuiltinStrategy):
    """Services: DNS-1123 label names, create-on-update, DELETE answers the Service,
    SetDefaults_Service (:func:`services.default_service`), and before validation what the
    Service storage does first in kube (alloc.go, strategy.go): clusterIP and clusterIPs kept in
    step, values the server allocated kept when an update leaves them out, fields a type change
    makes meaningless dropped, and the IP family fields set. Allocation itself is
    :class:`ServiceAllocation`'s."""

    def __init__(self) -> None:
        super().__init__(allow_create_on_update=True, returns_deleted_object=True)

    def name_errors(self, name: str) -> list[str]:
        return label_errors(name)

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        super().default(info, obj)
        services.default_service(obj)

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        super().prepare_for_create(info, obj)
        if isinstance(obj.get("spec"), dict):
            allocation.normalize_cluster_ips(obj, None)
            allocation.init_ip_family_fields(obj, None)

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        super().prepare_for_update(info, new, old)
        if isinstance(new.get("spec"), dict) and isinstance(old.get("spec"), dict):
            allocation.patch_allocated_values(new, old)
            allocation.normalize_cluster_ips(new, old)
            allocation.drop_type_dependent_fields(new, old)
            allocation.init_ip_family_fields(new, old)


class ServiceAllocation(WriteHooks):
    """The Service storage's hooks (kube's service REST: beginCreate, beginUpdate,
    afterDelete): cluster IPs and node ports allocated (:mod:`kubelite.api.kinds.allocation`)
    once a new or updated Service passed validation, on each try of its write (an earlier try's
    reverted), reverted when the write fails; what an update frees is released once it is
    stored, and a removed Service's allocations when it is gone. A write through a
    subresource (``status``) allocates nothing."""

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
    info: ResourceInfo, backing: Backing, ranges: allocation.ServiceRanges
) -> Storages:
    allocator = allocation.ServiceAllocator(backing.store, ranges.cidr, ranges.node_ports)
    store = GenericStore(
        info, STRATEGIES[("", "services")], backing, hooks=ServiceAllocation(allocator)
    )
    return {"": store, **generic_subresources(store)}


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


class SecretStrategy(BuiltinStrategy):
    """Secrets: ``type`` defaults to Opaque, and an update that leaves it empty keeps the
    stored one."""

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        super().default(info, obj)
        if not obj.get("type"):
            obj["type"] = "Opaque"

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        if not new.get("type") and old.get("type"):
            new["type"] = old["type"]
        super().prepare_for_update(info, new, old)


class NodeStrategy(BuiltinStrategy):
    """Nodes: the status sent on create is kept (kubelets register with it)."""

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        pass


class ReplicationControllerStrategy(BuiltinStrategy):
    """ReplicationControllers: generation on spec changes; deleting one at v1 (its only
    version) orphans its pods unless the request says otherwise."""

    def __init__(self) -> None:
        super().__init__(tracks_generation=True)

    def default_gc_policy(self, info: ResourceInfo) -> str:
        return ORPHAN_DEPENDENTS if info.version == "v1" else super().default_gc_policy(info)


class EventStrategy(BuiltinStrategy):
    """Events (core and events.k8s.io share it): create-on-update, and never a
    garbage-collection finalizer."""

    def __init__(self) -> None:
        super().__init__(allow_create_on_update=True)

    def default_gc_policy(self, info: ResourceInfo) -> str:
        return UNSUPPORTED


STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("", "pods"): PodStrategy(),
    ("", "services"): ServiceStrategy(),
    ("", "secrets"): SecretStrategy(),
    ("", "nodes"): NodeStrategy(),
    ("", "replicationcontrollers"): ReplicationControllerStrategy(),
    ("", "events"): EventStrategy(),
    ("events.k8s.io", "events"): EventStrategy(),
    ("", "endpoints"): BuiltinStrategy(allow_create_on_update=True),
    ("", "limitranges"): BuiltinStrategy(allow_create_on_update=True),
    ("", "serviceaccounts"): BuiltinStrategy(returns_deleted_object=True),
    ("", "resourcequotas"): BuiltinStrategy(returns_deleted_object=True),
    ("", "persistentvolumes"): BuiltinStrategy(returns_deleted_object=True),
    ("", "persistentvolumeclaims"): BuiltinStrategy(returns_deleted_object=True),
    ("", "podtemplates"): BuiltinStrategy(tracks_generation=True, returns_deleted_object=True),
}


# -- serviceaccounts/<name>/token -----------------------------------------------------------------


class TokenREST:
    """``POST .../serviceaccounts/<name>/token`` (``kubectl create token``): a TokenRequest
    answered with a token for the account; nothing is stored."""

    object_info = None

    def __init__(self, accounts: GenericStore, tokens: authn.ServiceAccountTokens) -> None:
        self.accounts = accounts
        self.info = accounts.info
        self.tokens = tokens

    async def create_named(self, ctx: Context, name: str, body: Obj, opts: WriteOptions) -> Obj:
        account = await self.accounts.get(ctx, name, GetOptions())
        return authn.token_request_response(self.tokens, account, body)


def service_account_storages(
    info: ResourceInfo, backing: Backing, tokens: authn.ServiceAccountTokens | None
) -> Storages:
    store = GenericStore(info, STRATEGIES[("", "serviceaccounts")], backing)
    found: Storages = {"": store}
    if tokens is not None:
        found["token"] = TokenREST(store, tokens)
    return found


# -- bindings and pods/<name>/binding ------------------------------------------------------------


class BindingREST:
    """A Binding assigns a pod to a node (kube's BindingREST): after admission (a create of
    ``pods/binding``), the pod's ``spec.nodeName`` is set, the binding's annotations merged into
    the pod's and a PodScheduled condition added, written with the optimistic loop but not
    through the pod strategy (no generation move), as kube does. Answers a Status (201).
    ``POST .../namespaces/<ns>/bindings`` takes the pod's name from the body,
    ``POST .../pods/<name>/binding`` from the path."""

    object_info = None

    def __init__(self, pods: GenericStore, info: ResourceInfo) -> None:
        self.pods = pods
        self.info = info

    async def create(self, ctx: Context, body: Obj, opts: WriteOptions) -> Obj:
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            raise errors.bad_request(f"not a Binding object: {body!r}")
        return await self.create_named(ctx, str(meta.get("name") or ""), body, opts)

    async def create_named(self, ctx: Context, name: str, body: Obj, opts: WriteOptions) -> Obj:
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            raise errors.bad_request("name in URL does not match name in Binding object")
        target = body.get("target") or {}
        problems = []
        if target.get("kind") not in (None, "", "Node"):
            problems.append(
                f'target.kind: Unsupported value: "{target.get("kind")}": supported values: '
                '"Node", "<empty>"'
            )
        if not target.get("name"):
            problems.append("target.name: Required value")
        if problems:
            raise errors.internal(problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]")
        node, uid = str(target["name"]), str(meta.get("uid") or "")
        version = str(meta.get("resourceVersion") or "")
        annotations = meta.get("annotations") or {}
        attrs = Attributes(
            CREATE, self.pods.info, ctx.namespace, name, body, None, ctx.user, "binding",
            opts.dry_run,
        )  # fmt: skip
        await self.pods.backing.admission.admit(attrs)
        await self.pods.backing.admission.validate(attrs)

        async def assign(current: Obj | None) -> Obj | Purge:
            if current is None:
                raise errors.not_found("pods", "", name)
            failed = precondition_failure(current["metadata"], uid, version)
            if failed:  # the Binding's uid and resourceVersion are preconditions on the pod
                raise errors.conflict("pods", "", name, failed)
            pod = clone(current)
            _bind(pod, name, node, annotations)
            pod["metadata"].pop("resourceVersion", None)
            return pod

        await self.pods.guaranteed_update(self.pods.key(ctx, name), assign, opts.dry_run)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }


def _bind(pod: Obj, name: str, node: str, annotations: Any) -> None:
    """The pod assigned to ``node``, or kube's 409 on ``pods/binding`` when it cannot be."""
    spec = pod.setdefault("spec", {})
    why = ""
    if pod["metadata"].get("deletionTimestamp"):
        why = f"pod {name} is being deleted, cannot be assigned to a host"
    elif spec.get("nodeName"):
        why = f'pod {name} is already assigned to node "{spec["nodeName"]}"'
    elif spec.get("schedulingGates"):
        why = f"pod {name} has non-empty .spec.schedulingGates"
    if why:
        raise errors.conflict("pods/binding", "", name, why)
    spec["nodeName"] = node
    if isinstance(annotations, dict) and annotations:
        pod["metadata"]["annotations"] = {
            **(pod["metadata"].get("annotations") or {}),
            **annotations,
        }
    status = pod.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True"})
    status["conditions"] = conditions


def pod_storages(info: ResourceInfo, backing: Backing) -> Storages:
    store = GenericStore(info, STRATEGIES[("", "pods")], backing)
    found: Storages = {"": store, **generic_subresources(store)}
    if "binding" in info.subresources:
        found["binding"] = BindingREST(store, info)
    if "ephemeralcontainers" in info.subresources:
        strategy = EphemeralContainersStrategy(STRATEGIES[("", "pods")])
        found["ephemeralcontainers"] = ReadThrough(store, strategy, "ephemeralcontainers")
    return found


# -- componentstatuses ---------------------------------------------------------------------------


def read_only_storages(info: ResourceInfo, backing: Backing) -> Storages:
    """A resource clients may only read (ComponentStatus: get, list and watch)."""
    return {"": ReadsOf(GenericStore(info, BuiltinStrategy(), backing))}


def service_account_lookup(registry: Registry, catalogue: Catalogue) -> AccountLookup:
    """How the token authenticator finds the account a token names (None when it is gone)."""
    info = catalogue.require("", "v1", "serviceaccounts")

    async def lookup(namespace: str, name: str) -> Obj | None:
        try:
            return await registry.get(info, namespace, name)
        except errors.APIError:
            return None

    return lookup
