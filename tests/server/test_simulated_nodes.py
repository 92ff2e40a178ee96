"""Simulated Nodes over HTTP: what the simulated kubelets register and report (labels,
conditions, capacity, addresses, nodeInfo, Leases, events), kube-controller-manager's node IPAM
and node lifecycle controllers (podCIDRs, NoSchedule taints, the heartbeat grace period), real
``kubectl cordon``/``uncordon``, the annotation knobs, and ``kubelite serve --nodes``.

Nodes are cluster-scoped, so every test has a server of its own; the heartbeat intervals are
shortened through ``Simulation.node_timings`` where a test waits for them."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness import Server, start_server, stop_server

from kubelite.api.simulation.config import NodeTimings, Simulation

NODES = "/api/v1/nodes"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
EVENTS = "/api/v1/namespaces/default/events"
FAST = NodeTimings(
    lease_renew=0.3, status_update=0.3, monitor_period=0.2, monitor_grace=1.5, startup_grace=60
)
NAMES = ["kubelite-worker", "kubelite-worker2", "kubelite-worker3"]
CONDITIONS = [
    ("MemoryPressure", "False", "KubeletHasSufficientMemory",
     "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
]  # fmt: skip
CAPACITY = {
    "cpu": "8",
    "ephemeral-storage": "100Gi",
    "hugepages-1Gi": "0",
    "hugepages-2Mi": "0",
    "memory": "16Gi",
    "pods": "110",
}


def wait_until(what: str, probe: Callable[[], Any], timeout: float = 20) -> Any:
    """``probe()`` once it is truthy (a hang guard, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def get(server: Server, path: str) -> dict[str, Any] | None:
    code, body = server.request("GET", path)
    assert code in (200, 404), body
    return body if code == 200 else None


def reported(server: Server, name: str) -> dict[str, Any] | None:
    """The node once its kubelet reported status and it has a podCIDR."""
    node = get(server, f"{NODES}/{name}")
    if node and node.get("status", {}).get("conditions") and pod_cidr(node):
        return node
    return None


def pod_cidr(node: dict[str, Any] | None) -> str | None:
    return ((node or {}).get("spec") or {}).get("podCIDR")


def events(server: Server, name: str) -> list[dict[str, Any]]:
    _, body = server.request("GET", EVENTS)
    return [e for e in body["items"] if e["involvedObject"]["name"] == name]  # type: ignore[index]


def reasons(server: Server, name: str) -> set[str]:
    return {e["reason"] for e in events(server, name)}


def condition(node: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in node["status"]["conditions"] if c["type"] == type_)


def annotate(server: Server, name: str, annotations: dict[str, str | None]) -> None:
    code, body = server.request(
        "PATCH",
        f"{NODES}/{name}",
        {"metadata": {"annotations": annotations}},
        "application/merge-patch+json",
    )
    assert code == 200, body


def taint_keys(node: dict[str, Any] | None) -> list[str]:
    return [t["key"] for t in ((node or {}).get("spec") or {}).get("taints") or []]


@pytest.mark.fresh_server(simulation=Simulation(nodes=3))
def test_three_nodes_register_as_a_kind_clusters_workers(server: Server) -> None:
    nodes = [wait_until(f"{n} reported", lambda n=n: reported(server, n)) for n in NAMES]
    _, listing = server.request("GET", NODES)
    assert [n["metadata"]["name"] for n in listing["items"]] == NAMES  # type: ignore[index]
    for index, (name, node) in enumerate(zip(NAMES, nodes, strict=True)):
        meta, spec, status = node["metadata"], node["spec"], node["status"]
        assert meta["labels"] == {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
        }
        assert meta["annotations"] == {
            "kubelite.dev/simulated": "true",
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        }
        assert spec == {
            "providerID": f"kubelite://{name}",
            "podCIDR": f"10.244.{index}.0/24",
            "podCIDRs": [f"10.244.{index}.0/24"],
        }
        assert status["capacity"] == CAPACITY
        assert status["allocatable"] == CAPACITY
        got = [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]]
        assert got == CONDITIONS
        for c in status["conditions"]:
            assert list(c) == ["type", "status", "lastHeartbeatTime", "lastTransitionTime",
                               "reason", "message"]  # fmt: skip
        assert status["addresses"] == [
            {"type": "InternalIP", "address": f"172.18.0.{index + 2}"},
            {"type": "Hostname", "address": name},
        ]
        assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
        info = status["nodeInfo"]
        assert info["architecture"] == "amd64"
        assert info["operatingSystem"] == "linux"
        assert info["kubeletVersion"] == "v1.37.0"
        assert info["containerRuntimeVersion"] == "containerd://2.1.0"
        assert info["osImage"] == "Debian GNU/Linux 12 (bookworm)"
        assert info["kubeProxyVersion"] == ""
        assert len(info["machineID"]) == 32
        assert "phase" not in status
    ids = {
        (n["status"]["nodeInfo"]["bootID"], n["status"]["nodeInfo"]["systemUUID"]) for n in nodes
    }
    assert len(ids) == 3
    name = NAMES[1]
    expected = {
        "Starting", "NodeAllocatableEnforced", "NodeHasSufficientMemory", "NodeHasNoDiskPressure",
        "NodeHasSufficientPID", "NodeReady", "RegisteredNode",
    }  # fmt: skip
    wait_until("the node's events", lambda: expected <= reasons(server, name))
    by_reason = {e["reason"]: e for e in events(server, name)}
    starting = by_reason["Starting"]
    assert starting["message"] == "Starting kubelet."
    assert starting["source"] == {"component": "kubelet", "host": name}
    assert starting["involvedObject"] == {"kind": "Node", "name": name, "uid": name}
    assert starting["type"] == "Normal"
    assert by_reason["NodeAllocatableEnforced"]["message"] == (
        "Updated Node Allocatable limit across pods"
    )
    for reason in ("NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID",
                   "NodeReady"):  # fmt: skip
        assert by_reason[reason]["message"] == f"Node {name} status is now: {reason}"
    registered = by_reason["RegisteredNode"]
    assert registered["message"] == f"Node {name} event: Registered Node {name} in Controller"
    assert registered["source"] == {"component": "node-controller"}
    assert registered["involvedObject"]["uid"] == nodes[1]["metadata"]["uid"]
    table = server.kubectl("get", "nodes").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert [line.split()[:3] for line in table[1:]] == [[n, "Ready", "<none>"] for n in NAMES]
    assert all(line.split()[-1] == "v1.37.0" for line in table[1:])
    wide = server.kubectl("get", "node", NAMES[2], "-o", "wide").stdout.splitlines()
    assert wide[0].split()[5:] == ["INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION",
                                   "CONTAINER-RUNTIME"]  # fmt: skip
    assert "172.18.0.4    <none>        Debian GNU/Linux 12 (bookworm)" in wide[1]


@pytest.mark.fresh_server(simulation=Simulation(nodes=1, node_timings=FAST))
def test_the_lease_is_renewed_and_owned_by_its_node(server: Server) -> None:
    node = wait_until("reported", lambda: reported(server, "kubelite-worker"))
    lease = wait_until("the lease", lambda: get(server, f"{LEASES}/kubelite-worker"))
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "kubelite-worker",
         "uid": node["metadata"]["uid"]}
    ]  # fmt: skip
    spec = lease["spec"]
    assert spec["holderIdentity"] == "kubelite-worker"
    assert spec["leaseDurationSeconds"] == 40
    assert len(spec["renewTime"].split(".")[1]) == len("000000Z")
    first = spec["renewTime"]
    later = wait_until(
        "a renewal",
        lambda: (
            (got := get(server, f"{LEASES}/kubelite-worker"))
            and got["spec"]["renewTime"] > first
            and got
        ),
    )
    assert later["metadata"]["uid"] == lease["metadata"]["uid"]
    managers = {f["manager"] for f in later["metadata"]["managedFields"]}
    assert managers == {"kubelet"}


@pytest.mark.fresh_server(simulation=Simulation(nodes=0))
def test_no_nodes_registers_none(server: Server) -> None:
    _, listing = server.request("GET", NODES)
    assert listing["items"] == []
    _, leases = server.request("GET", LEASES)
    assert leases["items"] == []


@pytest.mark.fresh_server(simulation=Simulation(nodes=0, node_timings=FAST))
def test_a_node_created_with_the_annotation_is_simulated_and_others_are_not(
    server: Server,
) -> None:
    for name, marks in (("plain", {}), ("made", {"kubelite.dev/simulated": "true"})):
        body = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "annotations": marks}}  # fmt: skip
        code, created = server.request("POST", NODES, body)
        assert code == 201, created
    made = wait_until("made reported", lambda: reported(server, "made"))
    assert made["status"]["addresses"][0] == {"type": "InternalIP", "address": "172.18.0.2"}
    assert [c["type"] for c in made["status"]["conditions"]] == [c[0] for c in CONDITIONS]
    assert wait_until("made's lease", lambda: get(server, f"{LEASES}/made"))
    plain = wait_until(
        "plain's podCIDR",
        lambda: (n := get(server, f"{NODES}/plain")) and pod_cidr(n) and n,
    )
    assert plain["spec"]["podCIDR"] == "10.244.0.0/24"
    assert made["spec"]["podCIDRs"] == ["10.244.1.0/24"]
    time.sleep(1)  # several heartbeats of the simulated node: none for the plain one
    plain = get(server, f"{NODES}/plain")
    assert plain is not None
    assert "conditions" not in (plain.get("status") or {})
    assert get(server, f"{LEASES}/plain") is None
    assert "Starting" not in reasons(server, "plain")
    assert "RegisteredNode" in reasons(server, "plain")


@pytest.mark.fresh_server(simulation=Simulation(nodes=2))
def test_kubectl_cordon_taints_the_node_and_uncordon_clears_it(server: Server) -> None:
    name = "kubelite-worker2"
    wait_until("reported", lambda: reported(server, name))
    assert server.kubectl("cordon", name).stdout.strip() == f"node/{name} cordoned"
    node = wait_until(
        "the unschedulable taint",
        lambda: (n := get(server, f"{NODES}/{name}")) and (n.get("spec") or {}).get("taints") and n,
    )
    (taint,) = node["spec"]["taints"]
    assert taint["key"] == "node.kubernetes.io/unschedulable"
    assert taint["effect"] == "NoSchedule"
    assert taint["timeAdded"].endswith("Z")
    assert node["spec"]["unschedulable"] is True
    rows = {line.split()[0]: line.split()[1] for line in server.kubectl("get", "nodes").stdout
            .splitlines()[1:]}  # fmt: skip
    assert rows == {"kubelite-worker": "Ready", name: "Ready,SchedulingDisabled"}
    wait_until("NodeNotSchedulable", lambda: "NodeNotSchedulable" in reasons(server, name))
    event = next(e for e in events(server, name) if e["reason"] == "NodeNotSchedulable")
    assert event["message"] == f"Node {name} status is now: NodeNotSchedulable"
    assert event["source"] == {"component": "kubelet", "host": name}
    assert server.kubectl("uncordon", name).stdout.strip() == f"node/{name} uncordoned"
    wait_until("no taint", lambda: not taint_keys(get(server, f"{NODES}/{name}")))
    wait_until("NodeSchedulable", lambda: "NodeSchedulable" in reasons(server, name))
    rows = {line.split()[0]: line.split()[1] for line in server.kubectl("get", "nodes").stdout
            .splitlines()[1:]}  # fmt: skip
    assert rows == {"kubelite-worker": "Ready", name: "Ready"}


@pytest.mark.fresh_server(simulation=Simulation(nodes=1))
def test_a_forced_memory_pressure_taints_the_node_until_it_clears(server: Server) -> None:
    name = "kubelite-worker"
    wait_until("reported", lambda: reported(server, name))
    annotate(server, name, {"kubelite.dev/simulate-condition.MemoryPressure": "True"})
    node = wait_until(
        "the memory-pressure taint",
        lambda: (
            (n := get(server, f"{NODES}/{name}"))
            and taint_keys(n) == ["node.kubernetes.io/memory-pressure"]
            and n
        ),
    )
    memory = condition(node, "MemoryPressure")
    assert (memory["status"], memory["reason"], memory["message"]) == (
        "True", "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"
    )  # fmt: skip
    assert condition(node, "Ready")["status"] == "True"
    assert [c["type"] for c in node["status"]["conditions"]] == [c[0] for c in CONDITIONS]
    wait_until("the event", lambda: "NodeHasInsufficientMemory" in reasons(server, name))
    annotate(server, name, {"kubelite.dev/simulate-condition.MemoryPressure": None})
    node = wait_until(
        "no taint",
        lambda: (n := get(server, f"{NODES}/{name}")) and not taint_keys(n) and n,
    )
    assert condition(node, "MemoryPressure")["reason"] == "KubeletHasSufficientMemory"
    wait_until(
        "the recovery counted",
        lambda: any(e["reason"] == "NodeHasSufficientMemory" and e["count"] == 2
                    for e in events(server, name)),
    )  # fmt: skip


@pytest.mark.fresh_server(simulation=Simulation(nodes=1))
def test_a_forced_not_ready_taints_the_node_not_ready(server: Server) -> None:
    name = "kubelite-worker"
    wait_until("reported", lambda: reported(server, name))
    annotate(server, name, {"kubelite.dev/simulate-condition.Ready": "False"})
    node = wait_until(
        "the not-ready taint",
        lambda: (
            (n := get(server, f"{NODES}/{name}"))
            and taint_keys(n) == ["node.kubernetes.io/not-ready"]
            and n
        ),
    )
    ready = condition(node, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")
    assert ready["message"].startswith("container runtime network not ready: ")
    assert server.kubectl("get", "nodes").stdout.splitlines()[1].split()[1] == "NotReady"


@pytest.mark.fresh_server(simulation=Simulation(nodes=2, node_timings=FAST))
def test_a_stopped_heartbeat_makes_the_node_unknown_and_unreachable(server: Server) -> None:
    name = "kubelite-worker2"
    wait_until("reported", lambda: reported(server, name))
    annotate(server, name, {"kubelite.dev/simulate-heartbeat": "stopped"})
    node = wait_until(
        "the unreachable taint",
        lambda: (
            (n := get(server, f"{NODES}/{name}"))
            and taint_keys(n) == ["node.kubernetes.io/unreachable"]
            and n
        ),
    )
    for c in node["status"]["conditions"]:
        assert (c["status"], c["reason"], c["message"]) == (
            "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."
        )  # fmt: skip
    event = next(e for e in events(server, name) if e["reason"] == "NodeNotReady")
    assert event["message"] == f"Node {name} status is now: NodeNotReady"
    assert event["source"] == {"component": "node-controller"}
    assert condition(get(server, f"{NODES}/kubelite-worker"), "Ready")["status"] == "True"  # type: ignore[arg-type]
    annotate(server, name, {"kubelite.dev/simulate-heartbeat": None})
    node = wait_until(
        "ready again",
        lambda: (
            (n := get(server, f"{NODES}/{name}"))
            and condition(n, "Ready")["status"] == "True"
            and not taint_keys(n)
            and n
        ),
    )
    assert condition(node, "Ready")["reason"] == "KubeletReady"


@pytest.mark.fresh_server(simulation=Simulation(nodes=2, node_timings=FAST))
def test_a_deleted_node_is_no_longer_simulated_and_its_lease_goes(server: Server) -> None:
    name = "kubelite-worker2"
    wait_until("reported", lambda: reported(server, name))
    wait_until("the lease", lambda: get(server, f"{LEASES}/{name}"))
    code, body = server.request("DELETE", f"{NODES}/{name}")
    assert code == 200, body
    wait_until("the lease gone", lambda: get(server, f"{LEASES}/{name}") is None)
    time.sleep(1)  # several renewal intervals: neither comes back
    assert get(server, f"{LEASES}/{name}") is None
    assert get(server, f"{NODES}/{name}") is None
    assert get(server, f"{LEASES}/kubelite-worker") is not None


def test_kubelite_serve_nodes_registers_that_many_once(
    tmp_path: Path, storage_url: str | None
) -> None:
    """Restarted on the same store, the server finds its Nodes registered (409) and keeps
    them: the same uids, podCIDRs and addresses, Ready again."""
    srv = start_server(tmp_path / "data", storage_url, "--nodes", "2")
    try:
        first = [wait_until("reported", lambda n=n: reported(srv, n)) for n in NAMES[:2]]
        names = json.loads(srv.kubectl("get", "nodes", "-o", "json").stdout)["items"]
        assert [n["metadata"]["name"] for n in names] == NAMES[:2]
        metrics = srv.kubectl("get", "--raw", "/metrics").stdout.splitlines()
        for name in ("node-agent", "node-ipam-controller", "node-lifecycle-controller"):
            assert any(line.startswith(f'workqueue_depth{{name="{name}"}} ') for line in metrics)
    finally:
        stop_server(srv)
    again = start_server(tmp_path / "data", storage_url, "--nodes", "2")
    try:
        _, listing = again.request("GET", NODES)
        assert [n["metadata"]["name"] for n in listing["items"]] == NAMES[:2]  # type: ignore[index]
        for before in first:
            name = before["metadata"]["name"]
            after = wait_until("reported", lambda n=name: reported(again, n))
            assert after["metadata"]["uid"] == before["metadata"]["uid"]
            assert after["spec"] == before["spec"]
            assert after["status"]["addresses"] == before["status"]["addresses"]
            assert condition(after, "Ready")["status"] == "True"
    finally:
        stop_server(again)


@pytest.mark.fresh_server(simulation=Simulation(nodes=0))
def test_pod_cidrs_go_in_order_and_a_freed_one_is_not_given_next(server: Server) -> None:
    def cidr(name: str) -> str:
        node = wait_until(
            f"{name}'s podCIDR",
            lambda: (
                (n := get(server, f"{NODES}/{name}")) and (n.get("spec") or {}).get("podCIDR") and n
            ),
        )
        assert node["spec"]["podCIDRs"] == [node["spec"]["podCIDR"]]
        return str(node["spec"]["podCIDR"])

    for name in ("a", "b"):
        code, body = server.request("POST", NODES, {"metadata": {"name": name}})
        assert code == 201, body
        cidr(name)
    assert (cidr("a"), cidr("b")) == ("10.244.0.0/24", "10.244.1.0/24")
    code, body = server.request("DELETE", f"{NODES}/a")
    assert code == 200, body
    code, body = server.request("POST", NODES, {"metadata": {"name": "c"}, "spec": {}})
    assert code == 201, body
    assert cidr("c") == "10.244.2.0/24"
    code, body = server.request(
        "POST", NODES, {"metadata": {"name": "own"}, "spec": {"podCIDR": "10.244.3.0/24"}}
    )
    assert code == 201, body
    code, body = server.request("POST", NODES, {"metadata": {"name": "d"}})
    assert code == 201, body
    assert cidr("d") == "10.244.4.0/24"
    assert cidr("own") == "10.244.3.0/24"


@pytest.mark.fresh_server(simulation=Simulation(nodes=0, node_timings=FAST))
def test_a_node_that_stops_posting_status_has_its_pods_marked_not_ready(server: Server) -> None:
    """A Node no kubelet simulates, whose status a test posted once (Ready, a heartbeat), goes
    Unknown after the grace period; its pods' Ready turns False, with kube's events."""
    code, node = server.request("POST", NODES, {"metadata": {"name": "silent"}})
    assert code == 201, node
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": stamp,
             "lastTransitionTime": stamp, "reason": "KubeletReady",
             "message": "kubelet is posting ready status"}  # fmt: skip
    merge = "application/merge-patch+json"
    code, body = server.request(
        "PATCH", f"{NODES}/silent/status", {"status": {"conditions": [ready]}}, merge
    )
    assert code == 200, body
    pods = "/api/v1/namespaces/default/pods"
    containers = [{"name": "c", "image": "nginx"}]
    pod = {"metadata": {"name": "on-silent"},
           "spec": {"nodeName": "silent", "containers": containers}}  # fmt: skip
    code, body = server.request("POST", pods, pod)
    assert code == 201, body
    status = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp}
    ]}  # fmt: skip
    code, body = server.request("PATCH", f"{pods}/on-silent/status", {"status": status}, merge)
    assert code == 200, body
    got = wait_until(
        "the pod not ready",
        lambda: (
            (p := get(server, f"{pods}/on-silent"))
            and condition(p, "Ready")["status"] == "False"
            and p
        ),
    )
    assert condition(got, "Ready")["lastTransitionTime"] >= stamp
    node = get(server, f"{NODES}/silent")
    assert node is not None
    assert taint_keys(node) == ["node.kubernetes.io/unreachable"]
    types = [(c["type"], c["status"], c["reason"]) for c in node["status"]["conditions"]]
    assert types == [
        ("Ready", "Unknown", "NodeStatusUnknown"),
        ("MemoryPressure", "Unknown", "NodeStatusNeverUpdated"),
        ("DiskPressure", "Unknown", "NodeStatusNeverUpdated"),
        ("PIDPressure", "Unknown", "NodeStatusNeverUpdated"),
    ]
    never = condition(node, "MemoryPressure")
    assert never["message"] == "Kubelet never posted node status."
    assert never["lastHeartbeatTime"] == node["metadata"]["creationTimestamp"]
    warning = wait_until(
        "the pod's event",
        lambda: next((e for e in events(server, "on-silent") if e["reason"] == "NodeNotReady"),
                     None),
    )  # fmt: skip
    assert (warning["type"], warning["message"]) == ("Warning", "Node is not ready")
    assert warning["source"] == {"component": "node-controller"}
    assert warning["involvedObject"]["kind"] == "Pod"
    assert "NodeNotReady" in reasons(server, "silent")


@pytest.mark.fresh_server(simulation=Simulation(nodes=1, node_timings=FAST))
def test_an_extended_resource_patched_into_capacity_is_kept_and_allocatable(
    server: Server,
) -> None:
    """As operators' tests advertise a device: the kubelet keeps capacity it does not own and
    copies it to allocatable (the MachineInfo setter)."""
    name = "kubelite-worker"
    wait_until("reported", lambda: reported(server, name))
    code, body = server.request(
        "PATCH",
        f"{NODES}/{name}/status",
        {"status": {"capacity": {"example.com/dongle": "4"}}},
        "application/merge-patch+json",
    )
    assert code == 200, body
    node = wait_until(
        "allocatable dongles",
        lambda: (
            (n := get(server, f"{NODES}/{name}"))
            and n["status"]["allocatable"].get("example.com/dongle") == "4"
            and n
        ),
    )
    assert node["status"]["capacity"] == {**CAPACITY, "example.com/dongle": "4"}
    lease = get(server, f"{LEASES}/{name}")
    assert lease is not None
    renewed = wait_until(
        "a renewal",
        lambda: (
            (got := get(server, f"{LEASES}/{name}"))
            and got["spec"]["renewTime"] > lease["spec"]["renewTime"]
            and got
        ),
    )
    assert renewed
    again = get(server, f"{NODES}/{name}")
    assert again is not None
    assert again["status"]["capacity"]["example.com/dongle"] == "4"
