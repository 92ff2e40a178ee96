"""The policy group (kube's ``pkg/registry/policy``): PodDisruptionBudgets, whose generation
moves on spec changes, never updated unconditionally (kinds/policy/poddisruptionbudgets.py)."""

from __future__ import annotations

from kubelite.api.kinds.policy.poddisruptionbudgets import PodDisruptionBudgetStrategy
from kubelite.api.kinds.resource import Resource

RESOURCES: tuple[Resource, ...] = (
    Resource("policy", "poddisruptionbudgets", PodDisruptionBudgetStrategy()),
)
