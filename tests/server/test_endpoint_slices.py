"""The EndpointSlice controller over HTTP, with the test playing the kubelet (kubeletplay: pods
on a plain Node, which no simulated kubelet runs, so that their status is the test's): a
selector service's slices follow its pods (ready, unready, terminating, gone), named target
ports, headless services, publishNotReadyAddresses, selectorless services (left alone), more
than 100 pods (two slices), pods on a node that does not exist (left out, with a Warning event
on the Service), and the ``default/kubernetes`` EndpointSlice the API server writes itself; and
one test on the whole simulation (pods scheduled and run by the simulated kubelet).

The slice controller leaves out pods whose node it does not hold, so these tests create a Node:
each has a server of its own (Nodes are cluster-scoped)."""

from __future__ import annotations

from typing import Any

import pytest
from harness import Server
from kubeletplay import (
    delete_pod,
    eventually,
    finish_deletion,
    make_node,
    make_pod,
    make_service,
    remove_finalizers,
    run_pod,
    set_status,
)

from kubelite.api.simulation.config import NodeTimings, Simulation

#: the plain Nodes here never post a status: the node lifecycle controller's startup grace
#: (60 s, then the Node's pods are marked not ready) is made longer than any test can last
pytestmark = pytest.mark.fresh_server(
    simulation=Simulation(nodes=0, node_timings=NodeTimings(startup_grace=3600.0))
)
SLICES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"


def slices_of(server: Server, service: str) -> list[dict[str, Any]]:
    code, listing = server.request(
        "GET", f"{SLICES}?labelSelector=kubernetes.io/service-name%3D{service}"
    )
    assert code == 200, listing
    return sorted(listing["items"], key=lambda s: s["metadata"]["name"])  # type: ignore[arg-type]


def endpoints_by_pod(server: Server, service: str) -> dict[str, dict[str, Any]]:
    return {
        e["targetRef"]["name"]: e for s in slices_of(server, service) for e in s["endpoints"] or []
    }


def wait_endpoints(
    server: Server, service: str, want: dict[str, dict[str, bool]]
) -> dict[str, dict[str, Any]]:
    """Wait until the service's endpoints are the pods of ``want``, with those conditions."""

    def read() -> list[dict[str, dict[str, Any]]] | None:
        found = endpoints_by_pod(server, service)
        if {n: e["conditions"] for n, e in found.items()} == want:
            return [found]
        return None

    return eventually(read, f"endpoints of {service} = {want}")[0]  # type: ignore[no-any-return]


READY = {"ready": True, "serving": True, "terminating": False}
UNREADY = {"ready": False, "serving": False, "terminating": False}


def test_a_slice_follows_its_pods(server: Server) -> None:
    make_node(server, "node-a", {"topology.kubernetes.io/zone": "zone-1"})
    service = make_service(
        server,
        "web",
        {"app": "web"},
        [{"name": "http", "port": 80, "targetPort": 8080}],
        labels={"team": "a"},
    )
    uid = run_pod(server, "web-1", {"app": "web"}, "10.244.0.5")
    found = wait_endpoints(server, "web", {"web-1": READY})
    (the_slice,) = slices_of(server, "web")
    meta = the_slice["metadata"]
    assert meta["name"].startswith("web-")
    assert meta["generateName"] == "web-"
    assert meta["labels"] == {
        "team": "a",
        "kubernetes.io/service-name": "web",
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "name": "web",
            "uid": service["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert meta["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"].endswith("Z")
    assert meta["managedFields"][0]["manager"] == "kube-controller-manager"
    assert the_slice["addressType"] == "IPv4"
    assert the_slice["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080}]
    assert found["web-1"] == {
        "addresses": ["10.244.0.5"],
        "conditions": READY,
        "targetRef": {"kind": "Pod", "namespace": server.namespace, "name": "web-1", "uid": uid},
        "nodeName": "node-a",
        "zone": "zone-1",
    }

    # unready, ready again, a second pod, one that is Succeeded (left out)
    set_status(server, "web-1", "10.244.0.5", ready=False)
    wait_endpoints(server, "web", {"web-1": UNREADY})
    set_status(server, "web-1", "10.244.0.5", ready=True)
    run_pod(server, "web-2", {"app": "web"}, "10.244.0.6", ready=False)
    make_pod(server, "web-3", {"app": "web"})
    set_status(server, "web-3", "10.244.0.7", phase="Succeeded", ready=False)
    run_pod(server, "other", {"app": "other"}, "10.244.0.8")
    wait_endpoints(server, "web", {"web-1": READY, "web-2": UNREADY})
    assert len(slices_of(server, "web")) == 1

    # a pod going away leaves the slice; the last one leaves it empty, not gone (the kubelet
    # played here finishes the graceful deletions)
    for name in ("web-1", "web-2"):
        delete_pod(server, name)
    wait_endpoints(server, "web", {})
    (empty,) = slices_of(server, "web")
    assert empty["endpoints"] is None or empty["endpoints"] == []
    assert empty["metadata"]["name"] == meta["name"]  # reused, not recreated

    # the Service's deletion takes its slices with it (their owner)
    code, _ = server.request("DELETE", "/api/v1/namespaces/{ns}/services/web")
    assert code == 200
    eventually(lambda: not slices_of(server, "web"), "the slices of a deleted Service go")


def test_terminating_pods_and_publish_not_ready(server: Server) -> None:
    make_node(server, "node-a")
    make_service(server, "db", {"app": "db"})
    make_service(server, "db-all", {"app": "db"}, publishNotReadyAddresses=True)
    # a pod being deleted (kept by a finalizer) is terminating: not ready, still serving
    run_pod(server, "db-1", {"app": "db"}, "10.244.1.2", finalizers=["test.kubelite.dev/hold"])
    run_pod(server, "db-2", {"app": "db"}, "10.244.1.3", ready=False)
    wait_endpoints(server, "db", {"db-1": READY, "db-2": UNREADY})
    code, _ = server.request("DELETE", "/api/v1/namespaces/{ns}/pods/db-1")
    assert code == 200
    terminating = {"ready": False, "serving": True, "terminating": True}
    wait_endpoints(server, "db", {"db-1": terminating, "db-2": UNREADY})
    # publishNotReadyAddresses: every endpoint is ready
    wait_endpoints(
        server,
        "db-all",
        {
            "db-1": {"ready": True, "serving": True, "terminating": True},
            "db-2": {"ready": True, "serving": False, "terminating": False},
        },
    )
    # the kubelet (played here) finishes the deletion: the finalizer still holds the pod,
    # terminating; once released it is gone
    finish_deletion(server, "db-1")
    wait_endpoints(server, "db", {"db-1": terminating, "db-2": UNREADY})
    remove_finalizers(server, "db-1")
    wait_endpoints(server, "db", {"db-2": UNREADY})


def sim_pod(server: Server, name: str, annotations: dict[str, str], **spec: Any) -> None:
    """A pod without a node: the scheduler binds it to the simulated node (the only Node of
    the test's server), whose kubelet runs it (``annotations``: its ``simulate-*`` knobs)."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "shop"}, "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec},
    }
    code, answer = server.request("POST", "/api/v1/namespaces/{ns}/pods", body)
    assert code == 201, answer


def test_pods_the_simulated_kubelet_runs(server: Server) -> None:
    """The whole simulation: scheduled, run and made Ready by the kubelet (or never ready), a
    deletion the kubelet finishes at once, one it takes long to stop (terminating meanwhile)."""
    node = {"metadata": {"name": "sim-a", "annotations": {"kubelite.dev/simulated": "true"}}}
    code, answer = server.request("POST", "/api/v1/nodes", node)
    assert code == 201, answer
    make_service(server, "shop", {"app": "shop"})
    sim_pod(server, "shop-1", {})
    sim_pod(server, "shop-2", {"kubelite.dev/simulate-never-ready": "true"})
    sim_pod(
        server, "shop-3", {"kubelite.dev/simulate-stop-seconds": "600"},
        terminationGracePeriodSeconds=600,
    )  # fmt: skip
    found = wait_endpoints(server, "shop", {"shop-1": READY, "shop-2": UNREADY, "shop-3": READY})
    for name, endpoint in found.items():
        code, pod = server.request("GET", f"/api/v1/namespaces/{{ns}}/pods/{name}")
        assert code == 200, pod
        assert endpoint["addresses"] == [pod["status"]["podIP"]]  # type: ignore[index]
        assert endpoint["nodeName"] == pod["spec"]["nodeName"] == "sim-a"  # type: ignore[index]
    for name in ("shop-1", "shop-3"):
        code, answer = server.request("DELETE", f"/api/v1/namespaces/{{ns}}/pods/{name}")
        assert code == 200, answer
    terminating = {"ready": False, "serving": True, "terminating": True}
    wait_endpoints(server, "shop", {"shop-2": UNREADY, "shop-3": terminating})
    # a forced deletion (grace period 0) takes it out at once
    force = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    code, answer = server.request("DELETE", "/api/v1/namespaces/{ns}/pods/shop-3", force)
    assert code == 200, answer
    wait_endpoints(server, "shop", {"shop-2": UNREADY})


def test_named_target_ports_and_headless_services(server: Server) -> None:
    make_node(server, "node-a")
    make_service(
        server,
        "api",
        {"app": "api"},
        [{"name": "web", "port": 80, "targetPort": "http"}],
        clusterIP="None",
    )
    http = [{"name": "http", "containerPort": 8080}]
    run_pod(server, "api-1", {"app": "api"}, "10.244.2.2", ports=http)
    run_pod(
        server,
        "api-2",
        {"app": "api"},
        "10.244.2.3",
        ports=[{"name": "http", "containerPort": 9090}],
    )
    run_pod(server, "api-3", {"app": "api"}, "10.244.2.4")  # no port of that name
    run_pod(
        server,
        "api-4",
        {"app": "api"},
        "10.244.2.5",
        ports=http,
        spec={"hostname": "four", "subdomain": "api"},
    )
    want = {f"api-{i}": READY for i in range(1, 5)}
    wait_endpoints(server, "api", want)

    def by_ports() -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for s in slices_of(server, "api"):
            key = ",".join(str(p["port"]) for p in s["ports"] or [])
            found[key] = sorted(e["targetRef"]["name"] for e in s["endpoints"] or [])
        return found

    grouped = eventually(
        lambda: by_ports() if len(by_ports()) == 3 else None, "three slices by resolved port"
    )
    assert grouped == {"8080": ["api-1", "api-4"], "9090": ["api-2"], "": ["api-3"]}
    for s in slices_of(server, "api"):
        assert s["metadata"]["labels"]["service.kubernetes.io/headless"] == ""
        if s["ports"]:
            assert s["ports"][0]["name"] == "web"
    assert endpoints_by_pod(server, "api")["api-4"]["hostname"] == "four"
    assert "hostname" not in endpoints_by_pod(server, "api")["api-1"]


def test_selectorless_and_missing_node(server: Server) -> None:
    make_node(server, "node-a")
    make_service(server, "manual", None)
    make_service(server, "orphans", {"app": "orph"})
    make_service(server, "empty", {"app": "nobody"})
    run_pod(server, "orph-1", {"app": "orph"}, "10.244.3.2", node="node-gone")
    run_pod(server, "orph-2", {"app": "orph"}, "10.244.3.3")
    # a pod on a node the controller does not know is left out
    wait_endpoints(server, "orphans", {"orph-2": READY})
    # ... and the Service gets a Warning event saying why (retried: counted, not repeated)

    def warned() -> dict[str, Any] | None:
        code, listing = server.request(
            "GET", "/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.name%3Dorphans"
        )
        assert code == 200, listing
        items: list[dict[str, Any]] = listing["items"]  # type: ignore[assignment]
        return next((e for e in items if e["reason"] == "FailedToUpdateEndpointSlices"), None)

    event = eventually(warned, "the FailedToUpdateEndpointSlices event")
    ns = server.namespace
    assert (event["type"], event["source"], event["message"]) == (
        "Warning",
        {"component": "endpoint-slice-controller"},
        f"Error updating Endpoint Slices for Service {ns}/orphans: skipping Pod orph-1 for "
        f"Service {ns}/orphans: Node node-gone Not Found",
    )
    assert event["involvedObject"]["kind"] == "Service"
    # a selector service without pods keeps one empty slice
    (empty,) = eventually(lambda: slices_of(server, "empty"), "the empty service's slice")
    assert empty["ports"] is None or empty["ports"] == []
    # nothing is managed for a service without a selector
    assert slices_of(server, "manual") == []


def test_over_one_hundred_pods_make_two_slices(server: Server) -> None:
    make_node(server, "node-a")
    for i in range(101):
        make_pod(server, f"many-{i}", {"app": "many"})
        set_status(server, f"many-{i}", f"10.245.{i // 200}.{i % 200 + 2}")
    make_service(server, "many", {"app": "many"})

    def sizes() -> list[int] | None:
        found = sorted(len(s["endpoints"] or []) for s in slices_of(server, "many"))
        return found if sum(found) == 101 else None

    assert eventually(sizes, "101 endpoints") == [1, 100]


def test_the_kubernetes_service_slice(server: Server) -> None:
    code, body = server.request(
        "GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes"
    )
    assert code == 200, body
    port = int(server.url.rsplit(":", 1)[1])
    assert body["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}  # type: ignore[index]
    assert {k: body[k] for k in ("addressType", "endpoints", "ports")} == {
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "protocol": "TCP", "port": port}],
    }
