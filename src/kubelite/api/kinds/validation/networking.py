"""Validation: Ingress, NetworkPolicy (pkg/apis/networking/validation)."""

from __future__ import annotations

from kubelite.api.kinds.rules import Kind, Validator

VALIDATORS: dict[Kind, Validator] = {}
