"""The policy group (kube's ``pkg/registry/policy``): PodDisruptionBudgets, whose generation
moves on spec changes, never updated unconditionally."""

from __future__ import annotations

from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy

RESOURCES: tuple[Resource, ...] = (
    Resource(
        "policy",
        "poddisruptionbudgets",
        BuiltinStrategy(tracks_generation=True, allow_unconditional_update=False),
    ),
)
