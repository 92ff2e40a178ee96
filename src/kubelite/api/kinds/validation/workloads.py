"""Validation: apps/v1 workloads: selector required and matching the template, immutable selector,
replicas (pkg/apis/apps/validation)."""

from __future__ import annotations

from kubelite.api.kinds.rules import Kind, Validator

VALIDATORS: dict[Kind, Validator] = {}
