"""kube-controller-manager's controllers in a real ``kubelite serve``, seen over HTTP and kubectl:

- every namespace gets ServiceAccount ``default`` (written by ``kube-controller-manager``),
  again after it is deleted;
- every namespace gets ConfigMap ``kube-root-ca.crt`` holding the data dir's ``ca.crt`` with
  kube's description annotation, restored after an edit (other labels and annotations kept)
  and after a delete;
- the server holds the Lease ``kube-system/kube-controller-manager``, says so in its log,
  and reports its queues and leadership on ``/metrics``;
- restarted after SIGKILL on its SQLite data dir, it leads again at once (the Lease's holder
  was the killed process, which no longer holds the store).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness import Server, start_server, stop_server

HANG_GUARD = 30.0
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


def eventually(read: Callable[[], Any], what: str) -> Any:
    """``read()`` once it returns something truthy (a hang guard, not a time assertion)."""
    deadline = time.monotonic() + HANG_GUARD
    while True:
        value = read()
        if value:
            return value
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def fetch(server: Server, path: str) -> dict[str, Any] | None:
    status, body = server.request("GET", path)
    return body if status == 200 else None


def service_account(server: Server, namespace: str) -> dict[str, Any]:
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/default"
    return eventually(lambda: fetch(server, path), f"ServiceAccount default in {namespace}")


def root_ca(server: Server, namespace: str, unlike: str = "") -> dict[str, Any]:
    """The namespace's ``kube-root-ca.crt`` once it exists with a resourceVersion other than
    ``unlike`` and the controller's content."""
    path = f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt"
    ca = (server.data_dir / "ca.crt").read_text()

    def published() -> dict[str, Any] | None:
        cm = fetch(server, path)
        if cm is None or cm["metadata"]["resourceVersion"] == unlike:
            return None
        if cm.get("data") != {"ca.crt": ca}:
            return None
        return cm

    return eventually(published, f"kube-root-ca.crt in {namespace}")


def managers(obj: dict[str, Any]) -> list[str]:
    return [m["manager"] for m in obj["metadata"].get("managedFields") or []]


@pytest.mark.fresh_server  # it makes namespaces team-a and team-b
def test_every_namespace_gets_a_default_service_account_again_after_a_delete(
    server: Server,
) -> None:
    server.kubectl("create", "namespace", "team-a")
    sa = service_account(server, "team-a")
    assert sa["metadata"]["name"] == "default"
    assert "secrets" not in sa
    assert "automountServiceAccountToken" not in sa
    # no managedFields: a create that sets no field but name and namespace owns nothing (as
    # ``kubectl create serviceaccount`` here and in kube)
    assert managers(sa) == []
    for system in ("default", "kube-system", "kube-public", "kube-node-lease"):
        service_account(server, system)
    status, _ = server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "team-b"}})
    assert status == 201
    service_account(server, "team-b")
    server.kubectl("delete", "serviceaccount", "default", "-n", "team-a")
    again = service_account(server, "team-a")
    assert again["metadata"]["uid"] != sa["metadata"]["uid"]
    names = server.kubectl("get", "serviceaccounts", "-n", "team-a", "-o", "name").stdout.split()
    assert names == ["serviceaccount/default"]


@pytest.mark.fresh_server  # it makes a namespace team-c
def test_every_namespace_gets_the_root_ca_config_map_restored_after_edits_and_deletes(
    server: Server,
) -> None:
    server.kubectl("create", "namespace", "team-c")
    cm = root_ca(server, "team-c")
    assert cm["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}
    assert managers(cm) == ["kube-controller-manager"]
    root_ca(server, "default")
    root_ca(server, "kube-system")
    # an edit: the data replaced and the annotation cleared; a label and an annotation added
    edited = json.loads(json.dumps(cm))
    edited["data"] = {"ca.crt": "not a CA", "extra": "x"}
    edited["metadata"]["annotations"] = {"kubernetes.io/description": "", "mine": "kept"}
    edited["metadata"]["labels"] = {"team": "c"}
    status, written = server.request(
        "PUT", "/api/v1/namespaces/team-c/configmaps/kube-root-ca.crt", edited
    )
    assert status == 200, written
    restored = root_ca(server, "team-c", unlike=str(written["metadata"]["resourceVersion"]))
    assert restored["metadata"]["annotations"] == {
        "kubernetes.io/description": DESCRIPTION,
        "mine": "kept",
    }
    assert restored["metadata"]["labels"] == {"team": "c"}
    assert restored["metadata"]["uid"] == cm["metadata"]["uid"]
    server.kubectl("delete", "configmap", "kube-root-ca.crt", "-n", "team-c")
    again = root_ca(server, "team-c")
    assert again["metadata"]["uid"] != cm["metadata"]["uid"]
    shown = server.kubectl(
        "get", "configmap", "kube-root-ca.crt", "-n", "team-c", "-o", "jsonpath={.data.ca\\.crt}"
    ).stdout
    assert shown == (server.data_dir / "ca.crt").read_text()


def test_the_server_holds_the_controller_manager_lease_and_reports_its_queues(
    server: Server,
) -> None:
    lease = fetch(
        server, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
    )
    assert lease is not None
    spec = lease["spec"]
    assert spec["leaseDurationSeconds"] == 15
    holder = spec["holderIdentity"]
    assert holder.count("_") >= 1
    assert len(holder.rsplit("_", 1)[1]) == 36
    log = server.log()
    assert "serviceaccount-controller" in log
    assert "this server leads (lease kube-system/kube-controller-manager)" in log
    metrics = server.kubectl("get", "--raw", "/metrics").stdout.splitlines()
    for name in (
        "namespace-controller",
        "clusterrole-aggregation-controller",
        "validatingadmissionpolicy-status-controller",
        "serviceaccount-controller",
        "disruption-controller",
        "root-ca-certificate-publisher-controller",
    ):
        assert any(line.startswith(f'workqueue_depth{{name="{name}"}} ') for line in metrics)
    assert 'leader_election_master_status{name="kube-controller-manager"} 1.0' in metrics


def test_a_server_restarted_after_sigkill_on_its_data_dir_leads_at_once(
    tmp_path: Path, storage_url: str | None
) -> None:
    if storage_url is not None:
        pytest.skip("over a shared store the killed server's Lease is waited out, as in kube")
    first = start_server(tmp_path / "data")
    try:
        path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"
        killed_holder = eventually(lambda: fetch(first, path), "the Lease")["spec"]
        first.process.kill()
        first.process.wait()
    finally:
        stop_server(first)
    second = start_server(tmp_path / "data")
    try:
        # the line is logged before ``kubelite serving on``: it led before it served
        log = (tmp_path / "server.log").read_text()
        assert "this server leads" in log
        spec = eventually(lambda: fetch(second, path), "the Lease")["spec"]
        assert spec["holderIdentity"] != killed_holder["holderIdentity"]
        assert spec["leaseTransitions"] == killed_holder["leaseTransitions"] + 1
        second.kubectl("create", "namespace", "after-restart")
        service_account(second, "after-restart")
        root_ca(second, "after-restart")
    finally:
        stop_server(second)
