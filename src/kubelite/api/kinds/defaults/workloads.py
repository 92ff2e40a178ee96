"""Defaults: apps/v1: Deployment, ReplicaSet, StatefulSet, DaemonSet
(pkg/apis/apps/v1/defaults.go)."""

from __future__ import annotations

from kubelite.api.kinds.rules import Defaulter, Kind

DEFAULTERS: dict[Kind, Defaulter] = {}
