"""What the Service endpoint tests share: they play the kubelet where they need exact control of
a pod's status: pods are created bound to a node (``spec.nodeName``) that no simulated kubelet
runs (a plain Node without ``kubelite.dev/simulated``, or one that does not exist), then their
status is written through ``pods/status`` (phase Running, podIP, a Ready condition) as a kubelet
would, and a DELETE of a running pod (graceful: it stays terminating, as in kube when no kubelet
is there) is finished by the kubelet's own final DELETE (:func:`finish_deletion`); and they wait
for a state with a deadline (a hang guard, never a time assertion)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from harness import Server

HANG_GUARD = 20.0
MERGE = "application/merge-patch+json"


def eventually(read: Callable[[], Any], what: str, seconds: float = HANG_GUARD) -> Any:
    """``read()`` once it returns something truthy."""
    deadline = time.monotonic() + seconds
    while True:
        value = read()
        if value:
            return value
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_node(server: Server, name: str, labels: dict[str, str] | None = None) -> None:
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}
    code, answer = server.request("POST", "/api/v1/nodes", body)
    assert code == 201, answer


def make_pod(
    server: Server,
    name: str,
    labels: dict[str, str],
    *,
    node: str = "node-a",
    ports: list[dict[str, Any]] | None = None,
    spec: dict[str, Any] | None = None,
    finalizers: list[str] | None = None,
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "app", "image": "nginx"}
    if ports:
        container["ports"] = ports
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if finalizers:
        meta["finalizers"] = finalizers
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"nodeName": node, "containers": [container], **(spec or {})},
    }
    code, answer = server.request("POST", "/api/v1/namespaces/{ns}/pods", body)
    assert code == 201, answer
    return answer


def set_status(
    server: Server, name: str, ip: str | None, *, ready: bool = True, phase: str = "Running"
) -> dict[str, Any]:
    """What a kubelet writes: the phase, the pod IP and the Ready condition."""
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": stamp()}
        ],
    }
    if ip is not None:
        status["podIP"] = ip
        status["podIPs"] = [{"ip": ip}]
    path = f"/api/v1/namespaces/{{ns}}/pods/{name}/status"
    code, answer = server.request("PATCH", path, {"status": status}, content_type=MERGE)
    assert code == 200, answer
    return answer


def run_pod(server: Server, name: str, labels: dict[str, str], ip: str, **kw: Any) -> str:
    """A pod bound to a node, Running at ``ip`` (Ready unless ``ready=False``); its uid."""
    ready = kw.pop("ready", True)
    pod = make_pod(server, name, labels, **kw)
    set_status(server, name, ip, ready=ready)
    return str(pod["metadata"]["uid"])


def make_service(
    server: Server,
    name: str,
    selector: dict[str, str] | None,
    ports: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "labels": spec.pop("labels", {})},
        "spec": {"ports": ports if ports is not None else [{"port": 80}], **spec},
    }
    if selector is not None:
        body["spec"]["selector"] = selector
    code, answer = server.request("POST", "/api/v1/namespaces/{ns}/services", body)
    assert code == 201, answer
    return answer


def remove_finalizers(server: Server, name: str) -> None:
    path = f"/api/v1/namespaces/{{ns}}/pods/{name}"
    code, answer = server.request(
        "PATCH", path, {"metadata": {"finalizers": None}}, content_type=MERGE
    )
    assert code in (200, 404), answer


def finish_deletion(server: Server, name: str) -> None:
    """What the kubelet's status manager does once a terminating pod has stopped
    (pkg/kubelet/status/status_manager.go ``syncPod``): DELETE with grace period 0, on the
    pod's uid only. Without it a pod bound to a node deleted gracefully stays terminating."""
    path = f"/api/v1/namespaces/{{ns}}/pods/{name}"
    code, pod = server.request("GET", path)
    if code == 404:
        return
    assert code == 200, pod
    assert pod["metadata"].get("deletionTimestamp"), pod  # type: ignore[index]
    options = {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": pod["metadata"]["uid"]},  # type: ignore[index]
    }
    code, answer = server.request("DELETE", path, options)
    assert code in (200, 404), answer


def delete_pod(server: Server, name: str) -> None:
    """A user's DELETE (graceful for a running pod bound to a node: it turns terminating), then
    the kubelet's final one (:func:`finish_deletion`): the pod is gone unless a finalizer
    holds it."""
    code, answer = server.request("DELETE", f"/api/v1/namespaces/{{ns}}/pods/{name}")
    assert code == 200, answer
    finish_deletion(server, name)
