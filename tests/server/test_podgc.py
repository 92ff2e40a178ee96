"""The pod garbage collector over HTTP, on servers of their own (it reads every namespace's pods
and the Nodes) whose collector runs every 0.2 s with a 0.5 s quarantine (the hidden ServeOptions
``pod_gc``): orphaned pods (their node deleted) are marked Failed with kube's DisruptionTarget
condition and deleted; terminated pods beyond the threshold go, oldest first; a terminating pod
never scheduled, or on a node tainted out-of-service and not Ready, is marked Failed and
deleted. Pods kept by a finalizer show what the collector
wrote before deleting them."""

from __future__ import annotations

from typing import Any

import pytest
from harness import Server
from kubeletplay import eventually, make_node, make_pod, remove_finalizers, set_status

from kubelite.api.simulation.config import Simulation

FAST = {"gc_period": 0.2, "quarantine": 0.5}
HOLD = ["test.kubelite.dev/hold"]


def pod(server: Server, name: str) -> dict[str, Any] | None:
    code, body = server.request("GET", f"/api/v1/namespaces/{{ns}}/pods/{name}")
    return body if code == 200 else None


def gone(server: Server, name: str) -> bool:
    return pod(server, name) is None


@pytest.mark.fresh_server(simulation=Simulation(nodes=0), pod_gc=FAST)
def test_orphaned_pods_are_failed_and_deleted(server: Server) -> None:
    make_node(server, "node-a")
    make_pod(server, "kept", {"app": "x"})
    set_status(server, "kept", "10.3.0.2")
    make_pod(server, "orphan", {"app": "x"}, node="node-gone", finalizers=HOLD)
    set_status(server, "orphan", "10.3.0.3")
    make_pod(server, "orphan-plain", {"app": "x"}, node="node-gone")

    def marked() -> dict[str, Any] | None:
        found = pod(server, "orphan")
        return found if found and found["metadata"].get("deletionTimestamp") else None

    found = eventually(marked, "the orphan is deleted")
    assert found["metadata"]["deletionGracePeriodSeconds"] == 0
    assert found["status"]["phase"] == "Failed"
    (condition,) = [c for c in found["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert {k: condition[k] for k in ("status", "reason", "message")} == {
        "status": "True",
        "reason": "DeletionByPodGC",
        "message": "PodGC: node no longer exists",
    }
    assert condition["lastTransitionTime"].endswith("Z")
    eventually(lambda: gone(server, "orphan-plain"), "the other orphan is gone")
    remove_finalizers(server, "orphan")
    eventually(lambda: gone(server, "orphan"), "the orphan is gone once released")
    # a pod on a node that exists stays, until its node is deleted
    found = pod(server, "kept")
    assert found is not None
    assert not found["metadata"].get("deletionTimestamp")
    code, _ = server.request("DELETE", "/api/v1/nodes/node-a")
    assert code == 200
    eventually(lambda: gone(server, "kept"), "the pod of a deleted node is gone")


@pytest.mark.fresh_server(
    simulation=Simulation(nodes=0), pod_gc={**FAST, "terminated_pod_threshold": 2}
)
def test_terminated_pods_over_the_threshold(server: Server) -> None:
    make_node(server, "node-a")
    for i in range(4):
        make_pod(server, f"done-{i}", {"app": "done"})
    make_pod(server, "running", {"app": "done"})
    set_status(server, "running", "10.4.0.9")
    for i in range(4):
        set_status(server, f"done-{i}", None, phase="Succeeded" if i % 2 else "Failed", ready=False)
    eventually(lambda: gone(server, "done-0") and gone(server, "done-1"), "the two oldest are gone")
    for name in ("done-2", "done-3", "running"):
        assert pod(server, name) is not None, name


@pytest.mark.fresh_server(simulation=Simulation(nodes=0), pod_gc=FAST)
def test_unscheduled_terminating_pods(server: Server) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pending", "finalizers": HOLD},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }
    code, answer = server.request("POST", "/api/v1/namespaces/{ns}/pods", body)
    assert code == 201, answer
    code, _ = server.request("DELETE", "/api/v1/namespaces/{ns}/pods/pending")
    assert code == 200

    def failed() -> dict[str, Any] | None:
        found = pod(server, "pending")
        return found if found and found.get("status", {}).get("phase") == "Failed" else None

    found = eventually(failed, "the unscheduled terminating pod is marked Failed")
    conditions = found["status"].get("conditions") or []
    assert not [c for c in conditions if c["type"] == "DisruptionTarget"]
    remove_finalizers(server, "pending")
    eventually(lambda: gone(server, "pending"), "the pod is gone once released")


@pytest.mark.fresh_server(simulation=Simulation(nodes=0), pod_gc=FAST)
def test_terminating_pods_on_out_of_service_nodes(server: Server) -> None:
    make_node(server, "node-a")
    make_pod(server, "stuck", {"app": "x"}, finalizers=HOLD)
    set_status(server, "stuck", "10.5.0.2")
    make_pod(server, "alive", {"app": "x"}, finalizers=HOLD)
    set_status(server, "alive", "10.5.0.3")
    code, _ = server.request("DELETE", "/api/v1/namespaces/{ns}/pods/stuck")
    assert code == 200
    taint = {
        "key": "node.kubernetes.io/out-of-service",
        "value": "nodeshutdown",
        "effect": "NoExecute",
    }
    code, answer = server.request(
        "PATCH", "/api/v1/nodes/node-a", {"spec": {"taints": [taint]}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert code == 200, answer

    def failed() -> dict[str, Any] | None:
        found = pod(server, "stuck")
        return found if found and found["status"]["phase"] == "Failed" else None

    found = eventually(failed, "the terminating pod is marked Failed")
    assert not [c for c in found["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    # a pod of the same node that is not terminating is left alone
    alive = pod(server, "alive")
    assert alive is not None
    assert alive["status"]["phase"] == "Running"
    for name in ("stuck", "alive"):
        remove_finalizers(server, name)
