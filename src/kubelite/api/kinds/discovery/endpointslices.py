"""EndpointSlices (kube's pkg/registry/discovery/endpointslice): generation on any change
outside metadata or of labels; defaults from pkg/apis/discovery/v1/defaults.go."""

from __future__ import annotations

from kubelite.api.kinds.core.poddefaults import items, set_if_nil
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy, Obj
from kubelite.api.machinery.strategy import content_changed


def default_endpoint_slice(obj: Obj) -> None:
    """SetDefaults_EndpointPort: name "" and protocol TCP."""
    for port in items(obj, "ports"):
        set_if_nil(port, "name", "")
        set_if_nil(port, "protocol", "TCP")


class EndpointSliceStrategy(BuiltinStrategy):
    """EndpointSlices: generation moves on any change outside metadata, or a label change."""

    defaulters = (default_endpoint_slice,)

    def __init__(self) -> None:
        super().__init__(tracks_generation=True)

    def generation_changed(self, old: Obj, new: Obj) -> bool:
        labels_before = old["metadata"].get("labels") or {}
        return content_changed(old, new) or labels_before != (new["metadata"].get("labels") or {})


RESOURCE = Resource("discovery.k8s.io", "endpointslices", EndpointSliceStrategy())
