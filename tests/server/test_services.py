"""Services over HTTP: defaults, validation, cluster IP and node port allocation (kube's texts,
kubernetes ``pkg/registry/core/service/ipallocator`` and ``portallocator``), release on delete and
on type change, the ``default/kubernetes`` Service, and concurrent creates (one server's threads;
two servers over one etcd with ``--storage-backend etcd``)."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from harness import Server, start_in_process, stop_server

from kubelite.api.kinds.core.serviceallocation import ServiceRanges

SERVICES = "/api/v1/namespaces/{ns}/services"


def svc(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {"metadata": {"name": name}, "spec": spec}


def create(server: Server, body: dict[str, Any]) -> dict[str, Any]:
    code, got = server.request("POST", SERVICES, body)
    assert code == 201, (code, got)
    return got


def refused(server: Server, method: str, path: str, body: Any, code: int) -> str:
    got_code, got = server.request(method, path, body)
    assert got_code == code, (got_code, got)
    return str(got["message"])


def in_range(ip: str) -> bool:
    return ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12")


def test_the_kubernetes_service_exists(server: Server) -> None:
    code, got = server.request("GET", "/api/v1/namespaces/default/services/kubernetes")
    assert code == 200, got
    assert got["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}  # type: ignore[index]
    spec: Any = got["spec"]
    assert spec["clusterIP"] == "10.96.0.1"
    assert spec["clusterIPs"] == ["10.96.0.1"]
    assert spec["ports"] == [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]
    assert spec["type"] == "ClusterIP"
    assert spec["ipFamilies"] == ["IPv4"]
    assert spec["ipFamilyPolicy"] == "SingleStack"
    # Its IP is taken.
    message = refused(server, "POST", SERVICES, svc("b", clusterIP="10.96.0.1"), 422)
    assert message == (
        'Service "b" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.1"]: '
        "failed to allocate IP 10.96.0.1: provided IP is already allocated"
    )


def test_defaults_and_an_allocated_cluster_ip(server: Server) -> None:
    got = create(server, svc("web", selector={"app": "web"}))
    spec = got["spec"]
    assert in_range(spec["clusterIP"])
    assert spec["clusterIP"] != "10.96.0.1"
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["type"] == "ClusterIP"
    assert spec["sessionAffinity"] == "None"
    assert spec["internalTrafficPolicy"] == "Cluster"
    assert spec["ipFamilies"] == ["IPv4"]
    assert spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert "externalTrafficPolicy" not in spec
    # Random allocation prefers the upper part: never the lower band while it has room.
    assert ipaddress.ip_address(spec["clusterIP"]) > ipaddress.ip_address("10.96.1.0")
    # A PUT that leaves clusterIP out keeps it (patchAllocatedValues).
    body = {"metadata": {"name": "web"}, "spec": {"ports": [{"port": 81}]}}
    code, put = server.request("PUT", f"{SERVICES}/web", body)
    assert code == 200, put
    assert put["spec"]["clusterIP"] == spec["clusterIP"]  # type: ignore[index]


def test_a_requested_ip_is_honoured_once(server: Server) -> None:
    got = create(server, svc("dns", clusterIP="10.96.0.10"))
    assert got["spec"]["clusterIPs"] == ["10.96.0.10"]
    message = refused(server, "POST", SERVICES, svc("dns2", clusterIP="10.96.0.10"), 422)
    assert message == (
        'Service "dns2" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.10"]: '
        "failed to allocate IP 10.96.0.10: provided IP is already allocated"
    )
    # Released on delete: the IP can be had again.
    code, _ = server.request("DELETE", f"{SERVICES}/dns")
    assert code == 200
    assert create(server, svc("dns2", clusterIP="10.96.0.10"))["spec"]["clusterIP"] == "10.96.0.10"


def test_an_ip_outside_the_range(server: Server) -> None:
    message = refused(server, "POST", SERVICES, svc("out", clusterIP="10.0.0.5"), 422)
    assert message == (
        'Service "out" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.5"]: '
        "failed to allocate IP 10.0.0.5: the provided network does not match the current range"
    )
    message = refused(server, "POST", SERVICES, svc("bad", clusterIP="10.96.0.300"), 422)
    assert message == (
        'Service "bad" is invalid: spec.clusterIPs[0]: Invalid value: "10.96.0.300": '
        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
    )
    code, _ = server.request("GET", f"{SERVICES}/out")
    assert code == 404


def test_cluster_ip_is_immutable(server: Server) -> None:
    create(server, svc("imm", clusterIP="10.96.0.20"))
    patch = {"spec": {"clusterIP": "10.96.0.21", "clusterIPs": ["10.96.0.21"]}}
    code, got = server.request(
        "PATCH", f"{SERVICES}/imm", patch, content_type="application/merge-patch+json"
    )
    assert code == 422, got
    assert got["message"] == (
        'Service "imm" is invalid: spec.clusterIPs[0]: Invalid value: ["10.96.0.21"]: '
        "may not change once set"
    )
    # Nothing was taken by the refused update.
    create(server, svc("other", clusterIP="10.96.0.21"))


def test_headless_and_external_name_get_no_ip(server: Server) -> None:
    headless = create(server, svc("hl", clusterIP="None", selector={"app": "x"}))["spec"]
    assert headless["clusterIP"] == "None"
    assert headless["clusterIPs"] == ["None"]
    assert headless["ipFamilyPolicy"] == "SingleStack"
    assert headless["ipFamilies"] == ["IPv4"]
    bare = create(server, {"metadata": {"name": "hl2"}, "spec": {"clusterIP": "None"}})["spec"]
    assert bare["ipFamilyPolicy"] == "RequireDualStack"
    ext = create(
        server,
        {"metadata": {"name": "ext"}, "spec": {"type": "ExternalName", "externalName": "a.b."}},
    )["spec"]
    assert "clusterIP" not in ext
    assert "ipFamilies" not in ext
    assert "internalTrafficPolicy" not in ext


def test_node_ports(server: Server) -> None:
    got = create(server, svc("np", type="NodePort", ports=[{"name": "a", "port": 80}]))
    spec = got["spec"]
    port = spec["ports"][0]["nodePort"]
    assert 30086 <= port <= 32767
    assert spec["externalTrafficPolicy"] == "Cluster"
    requested = svc("np2", type="NodePort", ports=[{"port": 80, "nodePort": 30080}])
    assert create(server, requested)["spec"]["ports"][0]["nodePort"] == 30080
    requested["metadata"]["name"] = "np3"
    message = refused(server, "POST", SERVICES, requested, 422)
    assert message == (
        'Service "np3" is invalid: spec.ports[0].nodePort: Invalid value: 30080: '
        "provided port is already allocated"
    )
    outside = svc("np4", type="NodePort", ports=[{"port": 80, "nodePort": 8080}])
    message = refused(server, "POST", SERVICES, outside, 422)
    assert message == (
        'Service "np4" is invalid: spec.ports[0].nodePort: Invalid value: 8080: '
        "provided port is not in the valid range. The range of valid ports is 30000-32767"
    )
    # Neither refused create kept an IP: np3's and np4's were reverted (checked by count below).
    # Type change away from NodePort releases the port.
    code, changed = server.request(
        "PATCH",
        f"{SERVICES}/np2",
        {"spec": {"type": "ClusterIP"}},
        content_type="application/merge-patch+json",
    )
    assert code == 200, changed
    assert "nodePort" not in changed["spec"]["ports"][0]  # type: ignore[index]
    assert "externalTrafficPolicy" not in changed["spec"]  # type: ignore[operator]
    requested["metadata"]["name"] = "np5"
    assert create(server, requested)["spec"]["ports"][0]["nodePort"] == 30080
    # Delete releases it too.
    assert server.request("DELETE", f"{SERVICES}/np5")[0] == 200
    requested["metadata"]["name"] = "np6"
    assert create(server, requested)["spec"]["ports"][0]["nodePort"] == 30080


def test_same_port_number_shares_one_node_port(server: Server) -> None:
    body = svc(
        "dns",
        type="NodePort",
        ports=[
            {"name": "tcp", "port": 53, "protocol": "TCP"},
            {"name": "udp", "port": 53, "protocol": "UDP"},
        ],
    )
    ports = create(server, body)["spec"]["ports"]
    assert ports[0]["nodePort"] == ports[1]["nodePort"]


def test_load_balancer(server: Server) -> None:
    spec = create(
        server,
        svc("lb", type="LoadBalancer", externalTrafficPolicy="Local", selector={"a": "b"}),
    )["spec"]
    assert spec["allocateLoadBalancerNodePorts"] is True
    assert 30000 <= spec["ports"][0]["nodePort"] <= 32767
    assert 30000 <= spec["healthCheckNodePort"] <= 32767
    assert spec["healthCheckNodePort"] != spec["ports"][0]["nodePort"]
    spec = create(server, svc("lb2", type="LoadBalancer", allocateLoadBalancerNodePorts=False))[
        "spec"
    ]
    assert "nodePort" not in spec["ports"][0]
    assert "healthCheckNodePort" not in spec


def test_dry_run_keeps_nothing(server: Server) -> None:
    body = svc(
        "dry", clusterIP="10.96.0.30", type="NodePort", ports=[{"port": 1, "nodePort": 30001}]
    )
    code, got = server.request("POST", f"{SERVICES}?dryRun=All", body)
    assert code == 201, got
    assert got["spec"]["clusterIP"] == "10.96.0.30"  # type: ignore[index]
    create(server, body)


def test_validation(server: Server) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"metadata": {"name": "v"}, "spec": {}}, "spec.ports: Required value"),
        (
            svc("v", ports=[{"port": 80}, {"port": 81}]),
            "[spec.ports[0].name: Required value, spec.ports[1].name: Required value]",
        ),
        (
            svc("v", ports=[{"name": "a", "port": 80}, {"name": "a", "port": 81}]),
            'spec.ports[1].name: Duplicate value: "a"',
        ),
        (
            svc("v", ports=[{"port": 80, "protocol": "HTTP"}]),
            'spec.ports[0].protocol: Unsupported value: "HTTP": supported values: '
            '"SCTP", "TCP", "UDP"',
        ),
        (
            svc("v", ports=[{"port": 70000, "targetPort": 80}]),
            "spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        (
            svc("v", type="Foo"),
            'spec.type: Unsupported value: "Foo": supported values: "ClusterIP", '
            '"ExternalName", "LoadBalancer", "NodePort"',
        ),
        (
            {"metadata": {"name": "v"}, "spec": {"type": "ExternalName"}},
            "spec.externalName: Required value",
        ),
        (
            svc("v", ports=[{"port": 80, "nodePort": 30005}]),
            "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
        ),
        (
            svc("v", ipFamilyPolicy="RequireDualStack"),
            'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not '
            "configured for dual-stack services",
        ),
    ]
    for body, text in cases:
        message = refused(server, "POST", SERVICES, body, 422)
        assert message == f'Service "v" is invalid: {text}', message


def test_concurrent_creates_never_share_an_ip(server: Server) -> None:
    results: list[tuple[int, Any]] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        for i in range(5):
            got = server.request("POST", SERVICES, svc(f"c{n}-{i}", type="NodePort"))
            with lock:
                results.append(got)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(code == 201 for code, _ in results), [r for r in results if r[0] != 201][:3]
    ips = [got["spec"]["clusterIP"] for _, got in results]
    ports = [got["spec"]["ports"][0]["nodePort"] for _, got in results]
    assert len(set(ips)) == len(ips) == 40
    assert len(set(ports)) == len(ports) == 40


def test_two_servers_over_one_etcd_never_share_an_ip(
    tmp_path: Path, storage_url: str | None
) -> None:
    if storage_url is None:
        pytest.skip("two servers share a store only over etcd (--storage-backend etcd)")
    first = start_in_process(tmp_path / "a", storage_url)
    second = start_in_process(tmp_path / "b", storage_url)
    try:
        results: list[tuple[int, Any]] = []
        lock = threading.Lock()

        def worker(server: Server, n: int) -> None:
            for i in range(5):
                got = server.request("POST", SERVICES, svc(f"s{n}-{i}"))
                with lock:
                    results.append(got)

        threads = [
            threading.Thread(target=worker, args=(first if n % 2 else second, n)) for n in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert all(code == 201 for code, _ in results), results[:3]
        ips = [got["spec"]["clusterIP"] for _, got in results]
        assert len(set(ips)) == 40
        code, listed = first.request("GET", SERVICES)
        assert code == 200
        names = [item["metadata"]["name"] for item in listed["items"]]  # type: ignore[index, union-attr]
        assert names.count("kubernetes") == 1
    finally:
        stop_server(second)
        stop_server(first)


def test_the_service_ranges_come_from_the_options(tmp_path: Path, storage_url: str | None) -> None:
    # --service-cluster-ip-range=10.100.0.0/24 --service-node-port-range=31000-31010
    ranges = ServiceRanges.parse("10.100.0.0/24", "31000-31010")
    srv = start_in_process(tmp_path / "data", storage_url, service_ranges=ranges)
    try:
        _, kubernetes = srv.request("GET", "/api/v1/namespaces/default/services/kubernetes")
        assert kubernetes["spec"]["clusterIP"] == "10.100.0.1"
        body = {"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}
        code, made = srv.request("POST", "/api/v1/namespaces/default/services", body)
        assert code == 201, made
        assert ipaddress.ip_address(made["spec"]["clusterIP"]) in ipaddress.ip_network(
            "10.100.0.0/24"
        )
        assert 31000 <= made["spec"]["ports"][0]["nodePort"] <= 31010
    finally:
        stop_server(srv)


def test_a_malformed_range_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kubelite", "serve", "--port", "0", "--data-dir",
         str(tmp_path / "d"), "--service-cluster-ip-range", "10.96.0.0/33"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        "kubelite: --service-cluster-ip-range '10.96.0.0/33' is not a network in CIDR notation "
        "(such as 10.96.0.0/12)\n"
    )
