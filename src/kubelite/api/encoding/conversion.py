"""Conversion between the versions of one kind that share a storage.

kube-apiserver stores each kind once, at its storage version, and converts on every read and
write to the version the client asked for. Two built-in kinds are served at more than one version
in Kubernetes 1.37 (catalogue.extra.SHARED_STORAGE):

- Event: ``v1`` (stored) and ``events.k8s.io/v1``, which renames fields
  (pkg/apis/events/v1/conversion.go and the internal type's JSON names);
- HorizontalPodAutoscaler: ``autoscaling/v2`` (stored) and ``autoscaling/v1``, which has one CPU
  utilisation target instead of a list of metrics (pkg/apis/autoscaling/v1/conversion.go).
  What v1 cannot say travels in the annotations kube-apiserver uses for it
  (``autoscaling.alpha.kubernetes.io/metrics``, ``.../current-metrics``, ``.../conditions``,
  ``.../behavior``), so v2 -> v1 -> v2 loses nothing. kube-apiserver writes those annotations
  in the v1 *alpha* metric format; kubelite writes the v2 form, which its own reverse
  conversion reads back.

Objects are JSON dicts; each function returns a new top-level dict and never mutates its input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

Obj = dict[str, Any]
Converter = Callable[[Obj], Obj]

__all__ = ["ConversionError", "convert", "to_version"]


class ConversionError(ValueError):
    """No conversion is known between two versions of a kind."""


# --- Event: v1 <-> events.k8s.io/v1 -----------------------------------------------------------

#: events.k8s.io/v1 field -> core v1 field; the fields not named are the same in both.
_EVENT_RENAMES = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_EVENT_RENAMES_BACK = {core: new for new, core in _EVENT_RENAMES.items()}


def _rename(obj: Obj, names: dict[str, str], api_version: str) -> Obj:
    out = {names.get(key, key): value for key, value in obj.items()}
    out["apiVersion"] = api_version
    return out


def _event_to_core(obj: Obj) -> Obj:
    return _rename(obj, _EVENT_RENAMES, "v1")


def _event_from_core(obj: Obj) -> Obj:
    return _rename(obj, _EVENT_RENAMES_BACK, "events.k8s.io/v1")


# --- HorizontalPodAutoscaler: autoscaling/v2 <-> autoscaling/v1 ------------------------------

_ANNOTATION = "autoscaling.alpha.kubernetes.io/"
_METRICS = _ANNOTATION + "metrics"
_CURRENT_METRICS = _ANNOTATION + "current-metrics"
_CONDITIONS = _ANNOTATION + "conditions"
_BEHAVIOR = _ANNOTATION + "behavior"


def _is_cpu_utilization(metric: Any, field: str) -> bool:
    if not isinstance(metric, dict) or metric.get("type") != "Resource":
        return False
    resource = metric.get("resource") or {}
    value = resource.get(field) or {}
    return bool(resource.get("name") == "cpu" and "averageUtilization" in value)


def _with_annotations(meta: Obj, extra: dict[str, Any]) -> Obj:
    annotations = dict(meta.get("annotations") or {})
    for key, value in extra.items():
        if value:
            annotations[key] = orjson.dumps(value).decode()
    meta = dict(meta)
    if annotations:
        meta["annotations"] = annotations
    return meta


def _hpa_v2_to_v1(obj: Obj) -> Obj:
    out: Obj = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = "autoscaling/v1"
    spec = obj.get("spec") or {}
    v1_spec = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    other_metrics = []
    for metric in spec.get("metrics") or []:
        if "targetCPUUtilizationPercentage" not in v1_spec and _is_cpu_utilization(
            metric, "target"
        ):
            v1_spec["targetCPUUtilizationPercentage"] = metric["resource"]["target"][
                "averageUtilization"
            ]
        else:
            other_metrics.append(metric)
    out["spec"] = v1_spec
    extra: dict[str, Any] = {_METRICS: other_metrics, _BEHAVIOR: spec.get("behavior")}
    if "status" in obj:
        status = obj["status"] or {}
        fields = ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")
        v1_status = {k: status[k] for k in fields if k in status}
        other_current = []
        for metric in status.get("currentMetrics") or []:
            if "currentCPUUtilizationPercentage" not in v1_status and _is_cpu_utilization(
                metric, "current"
            ):
                current = metric["resource"]["current"]["averageUtilization"]
                v1_status["currentCPUUtilizationPercentage"] = current
            else:
                other_current.append(metric)
        out["status"] = v1_status
        extra[_CURRENT_METRICS] = other_current
        extra[_CONDITIONS] = status.get("conditions")
    out["metadata"] = _with_annotations(obj.get("metadata") or {}, extra)
    return out


def _take_annotation(annotations: dict[str, str], key: str) -> Any:
    text = annotations.pop(key, None)
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _hpa_v1_to_v2(obj: Obj) -> Obj:
    out: Obj = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out["apiVersion"] = "autoscaling/v2"
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    spec = obj.get("spec") or {}
    v2_spec = {k: spec[k] for k in ("scaleTargetRef", "minReplicas", "maxReplicas") if k in spec}
    cpu = spec.get("targetCPUUtilizationPercentage")
    metrics: list[Any] = []
    if cpu is not None:
        target = {"type": "Utilization", "averageUtilization": cpu}
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": target}})
    metrics += _take_annotation(annotations, _METRICS) or []
    if metrics:
        v2_spec["metrics"] = metrics
    behavior = _take_annotation(annotations, _BEHAVIOR)
    if behavior:
        v2_spec["behavior"] = behavior
    out["spec"] = v2_spec
    current_extra = _take_annotation(annotations, _CURRENT_METRICS)
    conditions = _take_annotation(annotations, _CONDITIONS)
    if "status" in obj:
        status = obj["status"] or {}
        fields = ("observedGeneration", "lastScaleTime", "currentReplicas", "desiredReplicas")
        v2_status = {k: status[k] for k in fields if k in status}
        current: list[Any] = []
        if status.get("currentCPUUtilizationPercentage") is not None:
            value = {"averageUtilization": status["currentCPUUtilizationPercentage"]}
            current.append({"type": "Resource", "resource": {"name": "cpu", "current": value}})
        current += current_extra or []
        if current:
            v2_status["currentMetrics"] = current
        if conditions:
            v2_status["conditions"] = conditions
        out["status"] = v2_status
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    out["metadata"] = meta
    return out


_CONVERTERS: dict[tuple[str, str, str], Converter] = {
    ("Event", "events.k8s.io/v1", "v1"): _event_to_core,
    ("Event", "v1", "events.k8s.io/v1"): _event_from_core,
    ("HorizontalPodAutoscaler", "autoscaling/v2", "autoscaling/v1"): _hpa_v2_to_v1,
    ("HorizontalPodAutoscaler", "autoscaling/v1", "autoscaling/v2"): _hpa_v1_to_v2,
}


def convert(obj: Obj, api_version: str) -> Obj:
    """``obj`` at ``api_version``: itself when it is already there, else converted."""
    source = obj.get("apiVersion")
    if source == api_version:
        return obj
    kind = str(obj.get("kind"))
    converter = _CONVERTERS.get((kind, str(source), api_version))
    if converter is None:
        raise ConversionError(f"no conversion of {kind} from {source} to {api_version}")
    return converter(obj)


def to_version(obj: Obj, api_version: str, *, builtin: bool) -> Obj:
    """``obj`` at ``api_version``: a built-in kind through :func:`convert`; a custom resource
    with conversion strategy None, by rewriting apiVersion (its fields are the same)."""
    if builtin:
        return convert(obj, api_version)
    return obj if obj.get("apiVersion") == api_version else {**obj, "apiVersion": api_version}
