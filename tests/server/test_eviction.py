"""``pods/<name>/eviction`` (kube's pkg/registry/core/pod/storage/eviction.go) over HTTP. No
kubelet runs here: the tests play it, binding pods to a node name and writing their status
(Running, Ready) through ``pods/status``; the disruption controller keeps the budgets' status."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from harness import Server

PODS = "/api/v1/namespaces/{ns}/pods"
PDBS = "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
T = TypeVar("T")
TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."


def make_pod(server: Server, name: str, labels: dict[str, str], *, ready: bool = True,
             phase: str = "Running", owner: dict[str, Any] | None = None) -> Any:  # fmt: skip
    """A pod bound to node ``n1`` whose status a kubelet would have written."""
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
    }
    if owner is not None:
        body["metadata"]["ownerReferences"] = [owner]
    code, pod = server.request("POST", PODS, body)
    assert code == 201, pod
    return set_status(server, name, ready=ready, phase=phase)


def set_status(server: Server, name: str, *, ready: bool, phase: str = "Running") -> Any:
    code, pod = server.request("GET", f"{PODS}/{name}")
    assert code == 200, pod
    status = "True" if ready else "False"
    pod["status"] = {
        "phase": phase,
        "conditions": [
            {"type": "Ready", "status": status},
            {"type": "PodScheduled", "status": "True"},
        ],
    }
    code, pod = server.request("PUT", f"{PODS}/{name}/status", pod)
    assert code == 200, pod
    return pod


def pdb_body(name: str, spec: dict[str, Any], app: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": {**spec, "selector": {"matchLabels": {"app": app}}},
    }


def wait_for(probe: Callable[[], T | None], seconds: float = 15.0) -> T:
    """``probe``'s first answer that is not None, polled every 50 ms."""
    deadline = time.monotonic() + seconds
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)


def eviction(name: str, delete_options: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name},
    }
    if delete_options is not None:
        body["deleteOptions"] = delete_options
    return body


def evict(server: Server, name: str, **kw: Any) -> tuple[int, Any]:
    return server.request("POST", f"{PODS}/{name}/eviction", eviction(name, **kw))


def test_a_pod_no_budget_covers_is_deleted(server: Server) -> None:
    make_pod(server, "p", {"app": "x"})
    assert evict(server, "p") == (201, SUCCESS)
    code, _ = server.request("GET", f"{PODS}/p")
    assert code == 404


def test_a_missing_pod_is_404(server: Server) -> None:
    code, body = evict(server, "nope")
    assert code == 404
    assert body["message"] == 'pods "nope" not found'


def test_the_name_must_match_the_path(server: Server) -> None:
    make_pod(server, "p", {"app": "x"})
    code, body = server.request("POST", f"{PODS}/p/eviction", eviction("q"))
    assert (code, body["message"]) == (400, "name in URL does not match name in Eviction object")
