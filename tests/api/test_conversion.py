"""Conversions between the versions of a kind that share one storage."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubelite.api.encoding.conversion import ConversionError, convert

CORE_EVENT: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "web.1", "namespace": "default"},
    "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
    "reason": "Pulled",
    "message": "image pulled",
    "type": "Normal",
    "source": {"component": "kubelet"},
    "firstTimestamp": "2026-01-01T00:00:00Z",
    "lastTimestamp": "2026-01-01T00:01:00Z",
    "count": 3,
    "reportingComponent": "kubelet",
    "reportingInstance": "node-1",
    "action": "Pull",
}

HPA_V2: dict[str, Any] = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 10,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60},
                },
            },
            {
                "type": "Resource",
                "resource": {
                    "name": "memory",
                    "target": {"type": "AverageValue", "averageValue": "500Mi"},
                },
            },
        ],
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 120}},
    },
    "status": {
        "currentReplicas": 3,
        "desiredReplicas": 4,
        "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 70}}}
        ],
        "conditions": [{"type": "AbleToScale", "status": "True"}],
    },
}


def test_core_event_reads_as_events_k8s_io_with_renamed_fields() -> None:
    new = convert(CORE_EVENT, "events.k8s.io/v1")
    assert new["apiVersion"] == "events.k8s.io/v1"
    assert new["note"] == "image pulled"
    assert new["regarding"] == CORE_EVENT["involvedObject"]
    assert new["reportingController"] == "kubelet"
    assert new["deprecatedCount"] == 3
    assert new["deprecatedSource"] == {"component": "kubelet"}
    assert "message" not in new
    assert "involvedObject" not in new


def test_event_round_trip_is_lossless_and_leaves_the_input_alone() -> None:
    before = copy.deepcopy(CORE_EVENT)
    assert convert(convert(CORE_EVENT, "events.k8s.io/v1"), "v1") == CORE_EVENT
    assert before == CORE_EVENT


def test_hpa_v2_reads_as_v1_with_the_cpu_target_and_the_rest_in_annotations() -> None:
    v1 = convert(HPA_V2, "autoscaling/v1")
    assert v1["spec"] == {
        "scaleTargetRef": HPA_V2["spec"]["scaleTargetRef"],
        "minReplicas": 2,
        "maxReplicas": 10,
        "targetCPUUtilizationPercentage": 60,
    }
    assert v1["status"]["currentCPUUtilizationPercentage"] == 70
    annotations = v1["metadata"]["annotations"]
    assert annotations["team"] == "a"
    assert "memory" in annotations["autoscaling.alpha.kubernetes.io/metrics"]
    assert "AbleToScale" in annotations["autoscaling.alpha.kubernetes.io/conditions"]
    assert "stabilizationWindowSeconds" in annotations["autoscaling.alpha.kubernetes.io/behavior"]


def test_hpa_v2_to_v1_and_back_loses_nothing() -> None:
    before = copy.deepcopy(HPA_V2)
    assert convert(convert(HPA_V2, "autoscaling/v1"), "autoscaling/v2") == HPA_V2
    assert before == HPA_V2


def test_hpa_v1_to_v2_and_back_loses_nothing() -> None:
    v1 = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            "targetCPUUtilizationPercentage": 50,
        },
    }
    v2 = convert(v1, "autoscaling/v2")
    target = v2["spec"]["metrics"][0]["resource"]["target"]
    assert target == {"type": "Utilization", "averageUtilization": 50}
    assert "annotations" not in v2["metadata"]
    assert convert(v2, "autoscaling/v1") == v1


def test_unknown_pairs_are_refused() -> None:
    with pytest.raises(ConversionError):
        convert({"apiVersion": "v1", "kind": "ConfigMap"}, "apps/v1")
