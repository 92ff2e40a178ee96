"""The apiregistration.k8s.io group (kube-aggregator's ``pkg/registry/apiservice``):
APIServices, never updated unconditionally, their status kept apart from their metadata."""

from __future__ import annotations

from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.strategy import STATUS_KEEPS_METADATA

RESOURCES: tuple[Resource, ...] = (
    Resource(
        "apiregistration.k8s.io",
        "apiservices",
        BuiltinStrategy(allow_unconditional_update=False, status_keeps=STATUS_KEEPS_METADATA),
    ),
)
