"""Validation: where ephemeral containers may not be (they are added to a running Pod through
``pods/<name>/ephemeralcontainers`` only).

Source: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go`` (``ValidatePodCreate``,
``ValidatePodTemplateSpec``).
"""

from __future__ import annotations

from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.validation.fields import as_dict, as_list, forbidden


def on_create_causes(spec: Any, path: str) -> list[Cause]:
    """ValidatePodCreate: a new Pod has none."""
    if as_list(as_dict(spec).get("ephemeralContainers")):
        return [forbidden(f"{path}.ephemeralContainers", "cannot be set on create")]
    return []


def in_template_causes(spec: Any, path: str) -> list[Cause]:
    """ValidatePodTemplateSpec: a pod template has none."""
    if as_list(as_dict(spec).get("ephemeralContainers")):
        detail = "ephemeral containers not allowed in pod template"
        return [forbidden(f"{path}.ephemeralContainers", detail)]
    return []
