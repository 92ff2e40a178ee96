"""Validation: Service (ValidateService: ports, type rules, clusterIP immutability)."""

from __future__ import annotations

from kubelite.api.kinds.rules import Kind, Validator

VALIDATORS: dict[Kind, Validator] = {}
