"""The other built-in groups' kinds (networking, discovery, admissionregistration, flowcontrol,
resource, storage, certificates, rbac, coordination, scheduling, node, apiregistration): most
differ from the default strategy only in kube's flags, a few in one rule each. Sources: each
kind's ``strategy.go`` and ``storage/storage.go`` in kube-apiserver (and kube-aggregator for
APIServices)."""

from __future__ import annotations

from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.names import path_segment_errors
from kubelite.api.machinery.strategy import STATUS_KEEPS_METADATA, Strategy, content_changed

Obj = dict[str, Any]


class EndpointSliceStrategy(BuiltinStrategy):
    """EndpointSlices: generation moves on any change outside metadata, or a label change."""

    def __init__(self) -> None:
        super().__init__(tracks_generation=True)

    def generation_changed(self, old: Obj, new: Obj) -> bool:
        labels_before = old["metadata"].get("labels") or {}
        return content_changed(old, new) or labels_before != (new["metadata"].get("labels") or {})


class FirstGenerationOnly(BuiltinStrategy):
    """PriorityClasses: generation 1 on create, never moved afterwards."""

    def __init__(self) -> None:
        super().__init__(tracks_generation=True)

    def generation_changed(self, old: Obj, new: Obj) -> bool:
        return False


class CSIDriverStrategy(BuiltinStrategy):
    """CSIDrivers: no generation on create, but spec changes move it (from 0)."""

    def __init__(self) -> None:
        super().__init__(allow_unconditional_update=False, returns_deleted_object=True)

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        super().prepare_for_update(info, new, old)
        generation = int(old["metadata"].get("generation") or 0)
        if self.generation_changed(old, new):
            generation += 1
        if generation:
            new["metadata"]["generation"] = generation
        else:
            new["metadata"].pop("generation", None)


class RBACStrategy(BuiltinStrategy):
    """Roles, ClusterRoles and their bindings: create-on-update, and names that need only be
    valid path segments (ValidateRBACName), so ``system:discovery`` is a valid name."""

    def __init__(self) -> None:
        super().__init__(allow_create_on_update=True)

    def name_errors(self, name: str) -> list[str]:
        return path_segment_errors(name)


_GENERATION = BuiltinStrategy(tracks_generation=True)
_GENERATION_CONDITIONAL = BuiltinStrategy(tracks_generation=True, allow_unconditional_update=False)
_RETURNS_DELETED = BuiltinStrategy(returns_deleted_object=True)
_CONDITIONAL = BuiltinStrategy(allow_unconditional_update=False)
_ADMISSION = "admissionregistration.k8s.io"
_FLOWCONTROL = "flowcontrol.apiserver.k8s.io"
_RBAC = "rbac.authorization.k8s.io"

STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("networking.k8s.io", "ingresses"): _GENERATION,
    ("networking.k8s.io", "ingressclasses"): _GENERATION,
    ("networking.k8s.io", "networkpolicies"): _GENERATION,
    ("discovery.k8s.io", "endpointslices"): EndpointSliceStrategy(),
    (_ADMISSION, "validatingwebhookconfigurations"): _GENERATION_CONDITIONAL,
    (_ADMISSION, "mutatingwebhookconfigurations"): _GENERATION_CONDITIONAL,
    (_ADMISSION, "validatingadmissionpolicies"): BuiltinStrategy(
        tracks_generation=True,
        allow_unconditional_update=False,
        status_keeps=STATUS_KEEPS_METADATA,
    ),
    (_ADMISSION, "validatingadmissionpolicybindings"): _GENERATION_CONDITIONAL,
    (_ADMISSION, "mutatingadmissionpolicies"): _GENERATION_CONDITIONAL,
    (_ADMISSION, "mutatingadmissionpolicybindings"): _GENERATION_CONDITIONAL,
    (_FLOWCONTROL, "flowschemas"): BuiltinStrategy(
        tracks_generation=True, status_keeps=(*STATUS_KEEPS_METADATA, "generateName")
    ),
    (_FLOWCONTROL, "prioritylevelconfigurations"): BuiltinStrategy(
        tracks_generation=True, status_keeps=(*STATUS_KEEPS_METADATA, "generateName")
    ),
    ("resource.k8s.io", "deviceclasses"): BuiltinStrategy(
        tracks_generation=True, returns_deleted_object=True
    ),
    ("resource.k8s.io", "resourceclaims"): BuiltinStrategy(
        returns_deleted_object=True, status_keeps=STATUS_KEEPS_METADATA
    ),
    ("resource.k8s.io", "resourceclaimtemplates"): _RETURNS_DELETED,
    ("resource.k8s.io", "resourceslices"): BuiltinStrategy(
        tracks_generation=True, returns_deleted_object=True
    ),
    ("resource.k8s.io", "devicetaintrules"): BuiltinStrategy(
        tracks_generation=True,
        allow_unconditional_update=False,
        status_keeps=STATUS_KEEPS_METADATA,
    ),
    ("storage.k8s.io", "storageclasses"): _RETURNS_DELETED,
    ("storage.k8s.io", "volumeattachments"): BuiltinStrategy(
        allow_unconditional_update=False,
        returns_deleted_object=True,
        status_keeps=STATUS_KEEPS_METADATA,
    ),
    ("storage.k8s.io", "csidrivers"): CSIDriverStrategy(),
    ("storage.k8s.io", "csinodes"): BuiltinStrategy(
        allow_unconditional_update=False, returns_deleted_object=True
    ),
    ("storage.k8s.io", "csistoragecapacities"): _CONDITIONAL,
    ("storage.k8s.io", "volumeattributesclasses"): _RETURNS_DELETED,
    (_RBAC, "roles"): RBACStrategy(),
    (_RBAC, "clusterroles"): RBACStrategy(),
    (_RBAC, "rolebindings"): RBACStrategy(),
    (_RBAC, "clusterrolebindings"): RBACStrategy(),
    ("coordination.k8s.io", "leases"): BuiltinStrategy(
        allow_create_on_update=True, allow_unconditional_update=False
    ),
    ("scheduling.k8s.io", "priorityclasses"): FirstGenerationOnly(),
    ("node.k8s.io", "runtimeclasses"): BuiltinStrategy(
        allow_create_on_update=True, allow_unconditional_update=False
    ),
    ("apiregistration.k8s.io", "apiservices"): BuiltinStrategy(
        allow_unconditional_update=False, status_keeps=STATUS_KEEPS_METADATA
    ),
}
