"""CSIDrivers (kube's pkg/registry/storage/csidriver): no generation on create, but spec
changes move it (from 0); spec defaults from pkg/apis/storage/v1/defaults.go."""

from __future__ import annotations

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.core.poddefaults import ensure, set_if_nil
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy, Obj


def default_csi_driver(obj: Obj) -> None:
    """SetDefaults_CSIDriver (SELinuxMountReadWriteOncePod is on: seLinuxMount false)."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    set_if_nil(spec, "attachRequired", True)
    set_if_nil(spec, "podInfoOnMount", False)
    set_if_nil(spec, "storageCapacity", False)
    set_if_nil(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType")
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]
    set_if_nil(spec, "requiresRepublish", False)
    set_if_nil(spec, "seLinuxMount", False)


class CSIDriverStrategy(BuiltinStrategy):
    """CSIDrivers: no generation on create, but spec changes move it (from 0)."""

    defaulters = (default_csi_driver,)

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


RESOURCE = Resource("storage.k8s.io", "csidrivers", CSIDriverStrategy())
