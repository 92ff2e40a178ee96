"""The node.k8s.io group (kube's ``pkg/registry/node``): RuntimeClasses, created on update and
never updated unconditionally."""

from __future__ import annotations

from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy

RESOURCES: tuple[Resource, ...] = (
    Resource(
        "node.k8s.io",
        "runtimeclasses",
        BuiltinStrategy(allow_create_on_update=True, allow_unconditional_update=False),
    ),
)
