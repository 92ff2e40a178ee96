"""Pods (kube's pkg/registry/core/pod): the strategy, and the storages of pods and of their
``binding``, ``eviction`` and ``ephemeralcontainers`` subresources. Defaults and validation are
the core group's (pkg/apis/core/v1/defaults.go, pkg/apis/core/validation)."""

from __future__ import annotations

from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import Cause
from kubelite.api.kinds.core.bindings import BindingREST, scheduled_condition
from kubelite.api.kinds.core.evictions import EvictionREST
from kubelite.api.kinds.core.poddefaults import default_pod
from kubelite.api.kinds.core.podlogs import CONNECT_KINDS, PodConnectREST, PodLogREST
from kubelite.api.kinds.core.validation import podephemeral, pods
from kubelite.api.kinds.core.validation.podupdate import validate_pod_update
from kubelite.api.kinds.resource import Resource, Wiring
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.registry import Storages
from kubelite.api.machinery.strategy import Strategy, keep_stored
from kubelite.api.machinery.subresources import ReadThrough, generic_subresources

Obj = dict[str, Any]


class PodStrategy(BuiltinStrategy):
    """Pods: generation moves on spec changes (1.33+), DELETE answers the pod, and /status
    cannot touch ownerReferences (kube guards them against old kubelets). A new pod's status is
    the server's: phase Pending, its QoS class, and PodScheduled False while scheduling gates
    hold it; pod affinity terms' matchLabelKeys join their selectors (kube's
    podStrategy.PrepareForCreate)."""

    defaulters = (default_pod,)
    validators = (pods.validate_pod, validate_pod_update)

    def __init__(self) -> None:
        super().__init__(
            tracks_generation=True,
            returns_deleted_object=True,
            status_keeps=("ownerReferences",),
        )

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        from kubelite.api.kinds.core.poddefaults import pod_qos  # this class's only imports
        from kubelite.api.kinds.core.validation.podscheduling import apply_match_label_keys

        super().prepare_for_create(info, obj)
        apply_match_label_keys(obj)
        status: Obj = {"phase": "Pending", "qosClass": pod_qos(obj)}
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("schedulingGates"):
            status["conditions"] = scheduled_condition(
                None,
                "False",
                reason="SchedulingGated",
                message="Scheduling is blocked due to non-empty scheduling gates",
            )
        obj["status"] = status

    def check_graceful_delete(self, obj: Obj, grace_period_seconds: int | None) -> int | None:
        """kube's podStrategy.CheckGracefulDelete (pkg/registry/core/pod/strategy.go): the
        request's grace period, else ``spec.terminationGracePeriodSeconds`` (else 0); 0 for a
        pod not bound to a node or already terminal (Succeeded, Failed); a negative one is 1.
        A bound pod then keeps its deletionTimestamp until its kubelet deletes it."""
        spec = obj.get("spec") or {}
        period = grace_period_seconds
        if period is None:
            period = int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName"):
            period = 0
        if (obj.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
            period = 0
        return 1 if period < 0 else period


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


def pod_storages(
    info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring
) -> Storages:
    store = GenericStore(info, strategy, backing)
    found: Storages = {"": store, **generic_subresources(store)}
    if "binding" in info.subresources:
        found["binding"] = BindingREST(store, info)
    if "eviction" in info.subresources:
        pdbs = wiring.catalogue.require("policy", "v1", "poddisruptionbudgets")
        pdb_store = GenericStore(pdbs, wiring.strategy("policy", "poddisruptionbudgets"), backing)
        found["eviction"] = EvictionREST(store, info, pdb_store)
    if "log" in info.subresources:
        found["log"] = PodLogREST(store, info)
        for name in CONNECT_KINDS:  # served once logs are: the containers are simulated
            found[name] = PodConnectREST(store, info, name)
    if "ephemeralcontainers" in info.subresources:
        ephemeral = EphemeralContainersStrategy(strategy)
        found["ephemeralcontainers"] = ReadThrough(store, ephemeral, "ephemeralcontainers")
    return found


RESOURCE = Resource("", "pods", PodStrategy(), pod_storages)
