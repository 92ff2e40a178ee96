"""The resource.k8s.io group, dynamic resource allocation (kube's ``pkg/registry/resource``):
DeviceClasses, ResourceClaims and their templates, ResourceSlices and DeviceTaintRules differ
from the default strategy only in kube's flags."""

from __future__ import annotations

from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.strategy import STATUS_KEEPS_METADATA

GROUP = "resource.k8s.io"

RESOURCES: tuple[Resource, ...] = (
    Resource(
        GROUP,
        "deviceclasses",
        BuiltinStrategy(tracks_generation=True, returns_deleted_object=True),
    ),
    Resource(
        GROUP,
        "resourceclaims",
        BuiltinStrategy(returns_deleted_object=True, status_keeps=STATUS_KEEPS_METADATA),
    ),
    Resource(GROUP, "resourceclaimtemplates", BuiltinStrategy(returns_deleted_object=True)),
    Resource(
        GROUP,
        "resourceslices",
        BuiltinStrategy(tracks_generation=True, returns_deleted_object=True),
    ),
    Resource(
        GROUP,
        "devicetaintrules",
        BuiltinStrategy(
            tracks_generation=True,
            allow_unconditional_update=False,
            status_keeps=STATUS_KEEPS_METADATA,
        ),
    ),
)
