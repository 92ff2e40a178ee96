"""PodDisruptionBudgets (kube's pkg/registry/policy/poddisruptionbudget/strategy.go): generation
moves on spec changes, never updated unconditionally, and a new budget's status is the empty
PodDisruptionBudgetStatus, which policy/v1 writes as four zeros (its counts have no
``omitempty``), until the disruption controller observes it."""

from __future__ import annotations

from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.rules import BuiltinStrategy

Obj = dict[str, Any]


class PodDisruptionBudgetStrategy(BuiltinStrategy):
    def __init__(self) -> None:
        super().__init__(tracks_generation=True, allow_unconditional_update=False)

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        super().prepare_for_create(info, obj)
        obj["status"] = {
            "disruptionsAllowed": 0,
            "currentHealthy": 0,
            "desiredHealthy": 0,
            "expectedPods": 0,
        }
