"""Defaults: the other groups: autoscaling (HPA), policy (PodDisruptionBudget), rbac (subjects),
storage, scheduling, ... (their defaults.go)."""

from __future__ import annotations

from kubelite.api.kinds.rules import Defaulter, Kind

DEFAULTERS: dict[Kind, Defaulter] = {}
