"""The controller manager over a shared etcd: of two kubelite servers exactly one holds the
Lease ``kube-system/kube-controller-manager`` and runs the controllers; SIGKILL it and the other
takes the Lease over once it has seen no renewal for the lease duration, and its controllers
work (a new namespace gets its ``default`` ServiceAccount and ``kube-root-ca.crt``).

The servers run with short ``--leader-elect-*`` durations (the defaults are kube's 15 s, 10 s
and 2 s); the bounds below are hang guards, not timings."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from harness import Server
from load import Servers, fresh_prefix

from etcdcluster import EtcdCluster

ELECTION = (
    "--leader-elect-lease-duration=3s",
    "--leader-elect-renew-deadline=2s",
    "--leader-elect-retry-period=500ms",
)
LEASE = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
HANG_GUARD = 60.0


def eventually(read: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + HANG_GUARD
    while True:
        value = read()
        if value:
            return value
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.1)


def get(server: Server, path: str) -> dict[str, Any] | None:
    status, body = server.request("GET", path)
    return body if status == 200 else None


def log_of(server: Server) -> str:
    return (server.data_dir.parent / "server.log").read_text()


def identity_in_log(server: Server) -> str:
    """The identity the server acquired the Lease as ("" if it never did)."""
    marker = "successfully acquired lease kube-system/kube-controller-manager as "
    for line in log_of(server).splitlines():
        if marker in line:
            return line.split(marker, 1)[1].strip()
    return ""


def test_one_server_runs_the_controllers_and_the_other_takes_over_after_sigkill(
    cluster: EtcdCluster, servers: Servers
) -> None:
    prefix = fresh_prefix()
    first = servers.start(cluster.url_via(cluster.members[0], prefix), *ELECTION)
    second = servers.start(cluster.url_via(cluster.members[1], prefix), *ELECTION)
    leader = identity_in_log(first)
    assert leader, "the first server of an empty store leads at once"
    assert "this server leads" in log_of(first)
    assert "waiting for lease kube-system/kube-controller-manager" in log_of(second)
    assert not identity_in_log(second)
    lease = get(second, LEASE)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == leader
    transitions = lease["spec"]["leaseTransitions"]

    first.process.kill()
    first.process.wait()

    def taken_over() -> dict[str, Any] | None:
        current = get(second, LEASE)
        if current is None or current["spec"]["holderIdentity"] in ("", leader):
            return None
        return current

    spec = eventually(taken_over, "the second server takes the Lease over")["spec"]
    assert spec["holderIdentity"] == identity_in_log(second)
    assert spec["leaseTransitions"] == transitions + 1
    status, _ = second.request("POST", "/api/v1/namespaces", {"metadata": {"name": "after"}})
    assert status == 201
    eventually(
        lambda: get(second, "/api/v1/namespaces/after/serviceaccounts/default"),
        "ServiceAccount default in the new namespace",
    )
    eventually(
        lambda: get(second, "/api/v1/namespaces/after/configmaps/kube-root-ca.crt"),
        "kube-root-ca.crt in the new namespace",
    )
    # the garbage collector runs there too: a dependent of a deleted owner is collected
    cms = "/api/v1/namespaces/after/configmaps"
    status, owner = second.request("POST", cms, {"metadata": {"name": "owner"}})
    assert status == 201
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
    }
    status, _ = second.request("POST", cms, {"metadata": {"name": "dep", "ownerReferences": [ref]}})
    assert status == 201
    second.request("DELETE", cms + "/owner")
    eventually(lambda: get(second, cms + "/dep") is None, "the dependent collected")


def running_and_ready(server: Server, path: str) -> dict[str, Any] | None:
    pod = get(server, path)
    if pod is None:
        return None
    status = pod.get("status") or {}
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    return pod if status.get("phase") == "Running" and conditions.get("Ready") == "True" else None


def test_the_simulated_cluster_survives_a_leader_change(
    cluster: EtcdCluster, servers: Servers
) -> None:
    """Exactly one server simulates the cluster (node agent, scheduler, kubelet run with the
    controllers); SIGKILL it and the other one takes over: the running pod keeps its node, IP
    and container, a new pod is scheduled and runs, a deleted one is stopped and removed."""
    prefix = fresh_prefix()
    first = servers.start(cluster.url_via(cluster.members[0], prefix), *ELECTION)
    second = servers.start(cluster.url_via(cluster.members[1], prefix), *ELECTION)
    assert identity_in_log(first), "the first server of an empty store leads at once"
    pods = "/api/v1/namespaces/default/pods"
    body = {"metadata": {"name": "before"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    status, _ = first.request("POST", pods, body)
    assert status == 201
    before = eventually(lambda: running_and_ready(second, pods + "/before"), "the pod runs")
    nodes = get(second, "/api/v1/nodes")
    assert nodes is not None
    assert [n["metadata"]["name"] for n in nodes["items"]] == ["kubelite-worker"]  # not two

    first.process.kill()
    first.process.wait()
    eventually(lambda: identity_in_log(second), "the second server takes the Lease over")

    status, _ = second.request("POST", pods, {**body, "metadata": {"name": "after"}})
    assert status == 201
    after = eventually(lambda: running_and_ready(second, pods + "/after"), "the new pod runs")
    assert after["spec"]["nodeName"] == "kubelite-worker"
    assert after["status"]["podIP"] != before["status"]["podIP"]
    kept = get(second, pods + "/before")
    assert kept is not None
    assert kept["status"]["podIP"] == before["status"]["podIP"]
    assert kept["status"]["containerStatuses"] == before["status"]["containerStatuses"]
    second.request("DELETE", pods + "/before")
    eventually(lambda: get(second, pods + "/before") is None, "the deleted pod is removed")
