"""Workload kinds (apps, batch, autoscaling, policy): generation on spec changes, and the
rules a few add (kube-apiserver's ``pkg/registry/{apps,batch,autoscaling,policy}``)."""

from __future__ import annotations

from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.strategy import ORPHAN_DEPENDENTS, Strategy, spec_changed

Obj = dict[str, Any]


class DeploymentStrategy(BuiltinStrategy):
    """Deployments: generation moves on spec **or annotation** changes (rollbacks and pauses are
    annotations to the controller), and /status cannot change labels either."""

    def __init__(self) -> None:
        super().__init__(tracks_generation=True, status_keeps=("labels",))

    def generation_changed(self, old: Obj, new: Obj) -> bool:
        annotations_before = old["metadata"].get("annotations") or {}
        annotations_after = new["metadata"].get("annotations") or {}
        return spec_changed(old, new) or annotations_before != annotations_after


class JobStrategy(BuiltinStrategy):
    """Jobs: deleting one at batch/v1 orphans its pods unless the request says otherwise."""

    def __init__(self) -> None:
        super().__init__(tracks_generation=True)

    def default_gc_policy(self, info: ResourceInfo) -> str:
        if info.version == "v1":
            return ORPHAN_DEPENDENTS
        return super().default_gc_policy(info)


STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("apps", "deployments"): DeploymentStrategy(),
    ("apps", "replicasets"): BuiltinStrategy(tracks_generation=True),
    ("apps", "statefulsets"): BuiltinStrategy(tracks_generation=True),
    ("apps", "daemonsets"): BuiltinStrategy(tracks_generation=True),
    ("batch", "jobs"): JobStrategy(),
    ("batch", "cronjobs"): BuiltinStrategy(tracks_generation=True),
    # HPAGeneration (on by default) gives HorizontalPodAutoscalers a generation.
    ("autoscaling", "horizontalpodautoscalers"): BuiltinStrategy(tracks_generation=True),
    ("policy", "poddisruptionbudgets"): BuiltinStrategy(
        tracks_generation=True, allow_unconditional_update=False
    ),
}
