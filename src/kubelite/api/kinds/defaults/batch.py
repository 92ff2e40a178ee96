"""Defaults: batch/v1: Job, CronJob (pkg/apis/batch/v1/defaults.go)."""

from __future__ import annotations

from kubelite.api.kinds.rules import Defaulter, Kind

DEFAULTERS: dict[Kind, Defaulter] = {}
