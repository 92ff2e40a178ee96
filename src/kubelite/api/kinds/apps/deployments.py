"""Deployments (kube's pkg/registry/apps/deployment)."""

from __future__ import annotations

from typing import Any

from kubelite.api.kinds.apps.defaults import default_deployment
from kubelite.api.kinds.apps.validation import validate_deployment
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.strategy import spec_changed

Obj = dict[str, Any]


class DeploymentStrategy(BuiltinStrategy):
    """Deployments: generation moves on spec **or annotation** changes (rollbacks and pauses are
    annotations to the controller), and /status cannot change labels either."""

    defaulters = (default_deployment,)
    validators = (validate_deployment,)

    def __init__(self) -> None:
        super().__init__(tracks_generation=True, status_keeps=("labels",))

    def generation_changed(self, old: Obj, new: Obj) -> bool:
        annotations_before = old["metadata"].get("annotations") or {}
        annotations_after = new["metadata"].get("annotations") or {}
        return spec_changed(old, new) or annotations_before != annotations_after


RESOURCE = Resource("apps", "deployments", DeploymentStrategy())
