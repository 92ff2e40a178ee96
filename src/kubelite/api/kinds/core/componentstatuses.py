"""ComponentStatuses (kube's pkg/registry/core/componentstatus): read only."""

from __future__ import annotations

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.resource import Resource, Wiring
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.reads import ReadsOf
from kubelite.api.machinery.registry import Storages
from kubelite.api.machinery.strategy import Strategy


def read_only_storages(
    info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring
) -> Storages:
    """A resource clients may only read (ComponentStatus: get, list and watch)."""
    return {"": ReadsOf(GenericStore(info, strategy, backing))}


RESOURCE = Resource("", "componentstatuses", Strategy(), read_only_storages)
