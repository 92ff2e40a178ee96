"""Validation: Pod spec validation (pkg/apis/core/validation: ValidatePodSpec, containers, volumes,
ports, resources, probes), shared by every pod template."""

from __future__ import annotations

from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.rules import Kind, Validator

VALIDATORS: dict[Kind, Validator] = {}


def pod_spec_causes(spec: Any, path: str) -> list[Cause]:
    """The causes of a 422 for a pod spec at ``path`` (``spec`` for a Pod,
    ``spec.template.spec`` for a workload's template)."""
    return []
