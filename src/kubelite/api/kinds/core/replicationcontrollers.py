"""ReplicationControllers (kube's pkg/registry/core/replicationcontroller)."""

from __future__ import annotations

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.apps.defaults import default_replication_controller
from kubelite.api.kinds.apps.validation import validate_replication_controller
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.strategy import ORPHAN_DEPENDENTS


class ReplicationControllerStrategy(BuiltinStrategy):
    """ReplicationControllers: generation on spec changes; deleting one at v1 (its only
    version) orphans its pods unless the request says otherwise. Defaults and validation are
    the apps workloads' (a pod template, a selector, replicas)."""

    defaulters = (default_replication_controller,)
    validators = (validate_replication_controller,)

    def __init__(self) -> None:
        super().__init__(tracks_generation=True)

    def default_gc_policy(self, info: ResourceInfo) -> str:
        return ORPHAN_DEPENDENTS if info.version == "v1" else super().default_gc_policy(info)


RESOURCE = Resource("", "replicationcontrollers", ReplicationControllerStrategy())
