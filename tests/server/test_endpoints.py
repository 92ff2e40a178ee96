"""The Endpoints controller over HTTP, the test playing the kubelet (kubeletplay): a selector
service's Endpoints follow its pods (ready ones in ``addresses``, unready ones in
``notReadyAddresses``, terminating ones left out unless publishNotReadyAddresses, subsets
grouped by resolved ports, addresses sorted), a service without pods has no subsets, a
selectorless service gets none, a deleted service's Endpoints go, and so do Endpoints left
without a Service once the controller starts; the ``default/kubernetes`` Endpoints the API
server writes; and the deprecation warning every Endpoints request gets.

The Endpoints controller does not look at Nodes, so these run on the shared server (the pods'
node does not exist, so no simulated kubelet runs them and the scheduler leaves them alone;
nothing here runs long enough for the pod garbage collector's 40 s quarantine)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from harness import Server, start_in_process, stop_server
from kubeletplay import (
    delete_pod,
    eventually,
    finish_deletion,
    make_pod,
    make_service,
    remove_finalizers,
    run_pod,
    set_status,
)

from kubelite.api.simulation.config import Simulation

WARNING = '299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"'


def endpoints(server: Server, name: str) -> dict[str, Any] | None:
    code, body = server.request("GET", f"/api/v1/namespaces/{{ns}}/endpoints/{name}")
    return body if code == 200 else None


def wait_subsets(server: Server, name: str, want: list[dict[str, Any]]) -> dict[str, Any]:
    """Wait until the Endpoints' subsets, reduced to ips and ports, are ``want``."""

    def reduced(obj: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for subset in obj.get("subsets") or []:
            item: dict[str, Any] = {}
            for field in ("addresses", "notReadyAddresses"):
                if field in subset:
                    item[field] = [a["ip"] for a in subset[field]]
            if "ports" in subset:
                item["ports"] = [p["port"] for p in subset["ports"]]
            out.append(item)
        return out

    def read() -> dict[str, Any] | None:
        obj = endpoints(server, name)
        return obj if obj is not None and reduced(obj) == want else None

    return eventually(read, f"subsets of {name} = {want}")  # type: ignore[no-any-return]


def test_endpoints_follow_the_pods(server: Server) -> None:
    make_service(
        server, "web", {"app": "web"}, [{"name": "http", "port": 80, "targetPort": 8080}],
        labels={"team": "a"},
    )  # fmt: skip
    uid = run_pod(server, "web-b", {"app": "web"}, "10.1.0.12")
    run_pod(server, "web-a", {"app": "web"}, "10.1.0.11", ready=False)
    found = wait_subsets(
        server,
        "web",
        [{"addresses": ["10.1.0.12"], "notReadyAddresses": ["10.1.0.11"], "ports": [8080]}],
    )
    meta = found["metadata"]
    assert meta["labels"] == {
        "team": "a",
        "endpoints.kubernetes.io/managed-by": "endpoint-controller",
    }
    assert "ownerReferences" not in meta
    assert meta["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"].endswith("Z")
    assert meta["managedFields"][0]["manager"] == "kube-controller-manager"
    assert found["subsets"][0]["addresses"] == [
        {
            "ip": "10.1.0.12",
            "nodeName": "node-a",
            "targetRef": {
                "kind": "Pod",
                "namespace": server.namespace,
                "name": "web-b",
                "uid": uid,
            },
        }
    ]
    assert found["subsets"][0]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]

    set_status(server, "web-a", "10.1.0.11", ready=True)
    wait_subsets(server, "web", [{"addresses": ["10.1.0.11", "10.1.0.12"], "ports": [8080]}])

    # a terminating pod (kept by a finalizer) is left out; a Failed one too
    make_pod(server, "web-c", {"app": "web"}, finalizers=["test.kubelite.dev/hold"])
    set_status(server, "web-c", "10.1.0.13")
    wait_subsets(
        server, "web", [{"addresses": ["10.1.0.11", "10.1.0.12", "10.1.0.13"], "ports": [8080]}]
    )
    code, _ = server.request("DELETE", "/api/v1/namespaces/{ns}/pods/web-c")
    assert code == 200
    set_status(server, "web-a", "10.1.0.11", phase="Failed", ready=False)
    wait_subsets(server, "web", [{"addresses": ["10.1.0.12"], "ports": [8080]}])
    finish_deletion(server, "web-c")
    remove_finalizers(server, "web-c")

    # the last pod gone: no subsets; the Service gone: no Endpoints
    for name in ("web-a", "web-b"):
        delete_pod(server, name)
    empty = wait_subsets(server, "web", [])
    assert "subsets" not in empty
    code, _ = server.request("DELETE", "/api/v1/namespaces/{ns}/services/web")
    assert code == 200
    eventually(lambda: endpoints(server, "web") is None, "the Endpoints of a deleted Service go")


def test_ports_headless_and_publish_not_ready(server: Server) -> None:
    make_service(
        server, "api", {"app": "api"}, [{"name": "web", "port": 80, "targetPort": "http"}],
        clusterIP="None", publishNotReadyAddresses=True,
    )  # fmt: skip
    make_service(server, "manual", None)
    run_pod(
        server, "api-1", {"app": "api"}, "10.2.0.3", ports=[{"name": "http", "containerPort": 8080}]
    )
    run_pod(
        server,
        "api-2",
        {"app": "api"},
        "10.2.0.2",
        ports=[{"name": "http", "containerPort": 9090}],
        ready=False,
    )
    run_pod(
        server, "api-3", {"app": "api"}, "10.2.0.4",
        ports=[{"name": "http", "containerPort": 8080}],
        spec={"hostname": "three", "subdomain": "api"},
    )  # fmt: skip
    run_pod(server, "api-4", {"app": "api"}, "10.2.0.5")  # no port named http: left out
    found = wait_subsets(
        server, "api", [{"addresses": ["10.2.0.2"], "ports": [9090]},
                        {"addresses": ["10.2.0.3", "10.2.0.4"], "ports": [8080]}],
    )  # fmt: skip
    assert found["metadata"]["labels"] == {
        "endpoints.kubernetes.io/managed-by": "endpoint-controller",
        "service.kubernetes.io/headless": "",
    }
    assert found["subsets"][1]["addresses"][1]["hostname"] == "three"
    assert "hostname" not in found["subsets"][1]["addresses"][0]
    # a service without a selector gets no Endpoints from the controller
    assert endpoints(server, "manual") is None


def _raw(server: Server, path: str) -> tuple[int, list[str], Any]:
    request = urllib.request.Request(server.url + server.path(path))
    request.add_header("Authorization", f"Bearer {server.token}")
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as resp:
            return resp.status, resp.headers.get_all("Warning") or [], json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get_all("Warning") or [], json.loads(err.read())


def test_the_deprecation_warning(server: Server) -> None:
    make_service(server, "warned", {"app": "warned"})
    eventually(lambda: endpoints(server, "warned"), "the service's Endpoints")
    for path in (
        "/api/v1/namespaces/{ns}/endpoints",
        "/api/v1/namespaces/{ns}/endpoints/warned",
        "/api/v1/endpoints?limit=1",
        "/api/v1/namespaces/{ns}/endpoints/missing",
    ):
        code, warnings, _ = _raw(server, path)
        assert code == (404 if path.endswith("missing") else 200)
        assert warnings == [WARNING], path
    code, warnings, _ = _raw(server, "/api/v1/componentstatuses")
    assert (code, warnings) == (200, ['299 - "v1 ComponentStatus is deprecated in v1.19+"'])
    code, warnings, _ = _raw(server, "/api/v1/namespaces/{ns}/configmaps")
    assert (code, warnings) == (200, [])
    code, warnings, _ = _raw(server, "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices")
    assert (code, warnings) == (200, [])


def test_the_kubernetes_service_endpoints(server: Server) -> None:
    code, body = server.request("GET", "/api/v1/namespaces/default/endpoints/kubernetes")
    assert code == 200, body
    port = int(server.url.rsplit(":", 1)[1])
    assert body["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}  # type: ignore[index]
    assert body["subsets"] == [
        {
            "addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }
    ]


def test_leftover_endpoints_go_when_the_controller_starts(
    tmp_path: Path, storage_url: str | None
) -> None:
    """``checkLeftoverEndpoints``: Endpoints without a Service, found when the controller
    starts, are deleted; a leader-election record is not."""
    first = start_in_process(tmp_path / "data", storage_url, simulation=Simulation(nodes=0))
    base = "/api/v1/namespaces/default/endpoints"
    try:
        stray = {"metadata": {"name": "stray"}, "subsets": [{"addresses": [{"ip": "10.9.0.1"}]}]}
        record = {
            "metadata": {
                "name": "lock",
                "annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"},
            }
        }
        for body in (stray, record):
            code, answer = first.request("POST", base, body)
            assert code == 201, answer
    finally:
        stop_server(first)
    second = start_in_process(tmp_path / "data", storage_url, simulation=Simulation(nodes=0))
    try:
        eventually(lambda: second.request("GET", f"{base}/stray")[0] == 404, "stray deleted")
        assert second.request("GET", f"{base}/lock")[0] == 200
        assert second.request("GET", f"{base}/kubernetes")[0] == 200
    finally:
        stop_server(second)
