"""Validation: ConfigMap and Secret: keys and size (ValidateConfigMap, ValidateSecret)."""

from __future__ import annotations

from kubelite.api.kinds.rules import Kind, Validator

VALIDATORS: dict[Kind, Validator] = {}
