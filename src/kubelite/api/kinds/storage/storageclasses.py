"""StorageClasses (kube's pkg/registry/storage/storageclass, defaults from
pkg/apis/storage/v1/defaults.go): returned on delete, reclaimPolicy and volumeBindingMode
defaulted."""

from __future__ import annotations

from kubelite.api.kinds.core.poddefaults import set_if_nil
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy, Obj


def default_storage_class(obj: Obj) -> None:
    """SetDefaults_StorageClass."""
    set_if_nil(obj, "reclaimPolicy", "Delete")
    set_if_nil(obj, "volumeBindingMode", "Immediate")


RESOURCE = Resource(
    "storage.k8s.io",
    "storageclasses",
    BuiltinStrategy(defaulters=(default_storage_class,), returns_deleted_object=True),
)
