"""The storage.k8s.io group (kube's ``pkg/registry/storage``): StorageClasses and CSIDrivers
(a module each, with their defaults), and the kinds that differ from the default strategy only
in kube's flags."""

from __future__ import annotations

from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.kinds.storage import csidrivers, storageclasses
from kubelite.api.machinery.strategy import STATUS_KEEPS_METADATA

GROUP = "storage.k8s.io"

RESOURCES: tuple[Resource, ...] = (
    storageclasses.RESOURCE,
    csidrivers.RESOURCE,
    Resource(
        GROUP,
        "volumeattachments",
        BuiltinStrategy(
            allow_unconditional_update=False,
            returns_deleted_object=True,
            status_keeps=STATUS_KEEPS_METADATA,
        ),
    ),
    Resource(
        GROUP,
        "csinodes",
        BuiltinStrategy(allow_unconditional_update=False, returns_deleted_object=True),
    ),
    Resource(GROUP, "csistoragecapacities", BuiltinStrategy(allow_unconditional_update=False)),
    Resource(GROUP, "volumeattributesclasses", BuiltinStrategy(returns_deleted_object=True)),
)
