"""HorizontalPodAutoscalers (kube's pkg/registry/autoscaling/horizontalpodautoscaler, defaults
from pkg/apis/autoscaling/v2/defaults.go): a generation (HPAGeneration, on by default) and the
scaling rules' defaults."""

from __future__ import annotations

import copy
from typing import Any

from kubelite.api.kinds.core.poddefaults import (
    ensure,
    set_if_nil,
    sub,
)
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy, Obj

DEFAULT_CPU_UTILIZATION = 80
_SCALE_UP: Obj = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15},
    ],
}
#: scale-down stabilization stays unset: the controller's flag decides it
_SCALE_DOWN: Obj = {
    "selectPolicy": "Max",
    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
}


def _scaling_rules(given: Any, defaults: Obj) -> Any:
    """GenerateHPAScale{Up,Down}Rules: the defaults, with every field the rules set."""
    if given is not None and not isinstance(given, dict):
        return given
    rules = copy.deepcopy(defaults)
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
        if given is not None and given.get(key) is not None:
            rules[key] = given[key]
    return rules


def default_hpa(obj: Obj) -> None:
    """SetDefaults_HorizontalPodAutoscaler: minReplicas 1 at both versions; at v2, a CPU
    utilization metric (80%) when none is given and the behavior's rules filled in."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    set_if_nil(spec, "minReplicas", 1)
    if obj.get("apiVersion") != "autoscaling/v2":
        return
    if not spec.get("metrics"):
        spec["metrics"] = [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {
                        "type": "Utilization",
                        "averageUtilization": DEFAULT_CPU_UTILIZATION,
                    },
                },
            }
        ]
    behavior = sub(spec, "behavior")
    if behavior is not None:
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), _SCALE_UP)
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), _SCALE_DOWN)


RESOURCE = Resource(
    "autoscaling",
    "horizontalpodautoscalers",
    BuiltinStrategy(defaulters=(default_hpa,), tracks_generation=True),
)
