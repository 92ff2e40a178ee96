"""Validation: Job and CronJob (pkg/apis/batch/validation), CronJob schedule syntax."""

from __future__ import annotations

from kubelite.api.kinds.rules import Kind, Validator

VALIDATORS: dict[Kind, Validator] = {}
