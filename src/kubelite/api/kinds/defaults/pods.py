"""Defaults: Pods and pod templates (core/v1 SetDefaults_Pod, SetDefaults_PodSpec,
SetDefaults_Container...), and the workloads' templates through them."""

from __future__ import annotations

from kubelite.api.kinds.rules import Defaulter, Kind

DEFAULTERS: dict[Kind, Defaulter] = {}
