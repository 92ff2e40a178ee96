"""Events (kube's pkg/registry/core/event; events.k8s.io's Event is served with the same
strategy)."""

from __future__ import annotations

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.strategy import UNSUPPORTED


class EventStrategy(BuiltinStrategy):
    """Events (core and events.k8s.io share it): create-on-update, and never a
    garbage-collection finalizer."""

    def __init__(self) -> None:
        super().__init__(allow_create_on_update=True)

    def default_gc_policy(self, info: ResourceInfo) -> str:
        return UNSUPPORTED


RESOURCES = (
    Resource("", "events", EventStrategy()),
    Resource("events.k8s.io", "events", EventStrategy()),
)
