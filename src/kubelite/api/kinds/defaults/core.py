"""Defaults: core/v1 kinds other than pods and services: PersistentVolumeClaim, PersistentVolume,
Secret (stringData), ConfigMap, Namespace, ... (pkg/apis/core/v1/defaults.go)."""

from __future__ import annotations

from kubelite.api.kinds.rules import Defaulter, Kind

DEFAULTERS: dict[Kind, Defaulter] = {}
