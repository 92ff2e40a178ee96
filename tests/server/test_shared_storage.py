"""One object, two versions: Event (v1 and events.k8s.io/v1) and HorizontalPodAutoscaler
(autoscaling/v2 and v1) are stored once and served at either version, as kube-apiserver does."""

from __future__ import annotations

import json
import ssl
import urllib.request
from typing import Any

from harness import Server

CORE_EVENTS = "/api/v1/namespaces/{ns}/events"
NEW_EVENTS = "/apis/events.k8s.io/v1/namespaces/{ns}/events"
HPA_V1 = "/apis/autoscaling/v1/namespaces/{ns}/horizontalpodautoscalers"
HPA_V2 = "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"


def _ok(server: Server, method: str, path: str, body: Any = None) -> dict[str, Any]:
    code, got = server.request(method, path, body)
    assert code in (200, 201), (code, got)
    assert isinstance(got, dict)
    return got


def test_an_event_written_at_v1_is_read_listed_and_deleted_at_events_k8s_io(
    server: Server,
) -> None:
    created = _ok(
        server,
        "POST",
        CORE_EVENTS,
        {
            "metadata": {"name": "web.1"},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": server.namespace},
            "reason": "Started",
            "message": "container started",
            "type": "Normal",
            "count": 2,
        },
    )
    new = _ok(server, "GET", f"{NEW_EVENTS}/web.1")
    assert new["apiVersion"] == "events.k8s.io/v1"
    assert new["note"] == "container started"
    assert new["regarding"]["name"] == "web"
    assert new["deprecatedCount"] == 2
    assert new["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert new["metadata"]["uid"] == created["metadata"]["uid"]
    listed = _ok(server, "GET", NEW_EVENTS)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["web.1"]
    assert listed["items"][0]["note"] == "container started"

    # written at events.k8s.io/v1 (a merge patch of its own field name), read at v1
    patched = _ok_patch(server, f"{NEW_EVENTS}/web.1", {"note": "restarted"})
    assert patched["note"] == "restarted"
    core = _ok(server, "GET", f"{CORE_EVENTS}/web.1")
    assert core["message"] == "restarted"
    assert "note" not in core
    assert core["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]

    _ok(server, "DELETE", f"{NEW_EVENTS}/web.1")
    code, _ = server.request("GET", f"{CORE_EVENTS}/web.1")
    assert code == 404


def _ok_patch(server: Server, path: str, patch: dict[str, Any]) -> dict[str, Any]:
    code, got = server.request("PATCH", path, patch, content_type="application/merge-patch+json")
    assert code == 200, got
    assert isinstance(got, dict)
    return got


def test_a_watch_at_events_k8s_io_sees_core_events_in_its_own_shape(server: Server) -> None:
    listing = _ok(server, "GET", NEW_EVENTS)
    rv = listing["metadata"]["resourceVersion"]
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    req = urllib.request.Request(
        f"{server.url}{server.path(NEW_EVENTS)}?watch=1&resourceVersion={rv}"
    )
    req.add_header("Authorization", f"Bearer {server.token}")
    with urllib.request.urlopen(req, context=context, timeout=30) as resp:
        _ok(
            server,
            "POST",
            CORE_EVENTS,
            {"metadata": {"name": "w.1"}, "involvedObject": {"name": "w"}, "message": "hello"},
        )
        event = json.loads(resp.readline())
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "events.k8s.io/v1"
    assert event["object"]["note"] == "hello"


def test_an_hpa_is_one_object_at_autoscaling_v1_and_v2(server: Server) -> None:
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    v1 = _ok(
        server,
        "POST",
        HPA_V1,
        {
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": target,
                "maxReplicas": 5,
                "targetCPUUtilizationPercentage": 50,
            },
        },
    )
    assert v1["apiVersion"] == "autoscaling/v1"
    v2 = _ok(server, "GET", f"{HPA_V2}/web")
    assert v2["apiVersion"] == "autoscaling/v2"
    assert v2["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50},
            },
        }
    ]
    assert v2["metadata"]["resourceVersion"] == v1["metadata"]["resourceVersion"]

    # a v2-only metric added through v2 survives a v1 update that does not know it
    memory = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
    }
    v2["spec"]["metrics"].append(memory)
    _ok(server, "PUT", f"{HPA_V2}/web", v2)
    v1 = _ok(server, "GET", f"{HPA_V1}/web")
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 50
    v1["spec"]["maxReplicas"] = 8
    _ok(server, "PUT", f"{HPA_V1}/web", v1)
    after = _ok(server, "GET", f"{HPA_V2}/web")
    assert after["spec"]["maxReplicas"] == 8
    assert after["spec"]["metrics"][1] == memory
    assert "annotations" not in after["metadata"]


def test_a_no_op_update_through_the_other_version_writes_nothing(server: Server) -> None:
    spec = {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 3}
    created = _ok(server, "POST", HPA_V2, {"metadata": {"name": "x"}, "spec": spec})
    v1 = _ok(server, "GET", f"{HPA_V1}/x")
    again = _ok(server, "PUT", f"{HPA_V1}/x", v1)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
