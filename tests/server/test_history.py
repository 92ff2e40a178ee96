"""``<resource>/<name>/history`` over HTTP on a server with ``--history-retention``: past
versions after deletion, compaction and a restart; manager and operation of each write;
discovery; RBAC on the subresource; 405 over etcd; one-line errors for a bad flag."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Server, deployment, start_in_process, stop_server
from test_crds import CRDS, GIZMOS, gizmo_crd

from etcdcluster import EtcdCluster
from kubelite.api.machinery.retention import parse_retention

#: ``--history-retention cm=10,deployments.apps=3,gizmos.example.org=2``
RETENTION = parse_retention("cm=10,deployments.apps=3,gizmos.example.org=2")
CM = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def sqlite_only(storage_backend: str) -> None:
    """These tests start their own SQLite servers (the etcd answer has its own test): nothing
    to run again under ``--storage-backend etcd``."""
    if storage_backend != "sqlite":
        pytest.skip("revision history is kept by the SQLite store")


@pytest.fixture
def retaining(tmp_path: Path, sqlite_only: None) -> Iterator[Server]:
    """A server on SQLite keeping ConfigMaps' (10), Deployments' (3) and Gizmos' (2) past
    versions."""
    srv = start_in_process(tmp_path / "data", history_retention=RETENTION)
    try:
        yield srv
    finally:
        stop_server(srv)


def ok(result: tuple[int, dict[str, Any]], code: int = 200) -> dict[str, Any]:
    status, body = result
    assert status == code, body
    return body


def configmap(name: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def write_timeline(srv: Server, name: str) -> list[str]:
    """Create (kubectl-create), update (editor), apply (applier), delete: their revisions."""
    first = configmap(name, {"k": "a"})
    created = ok(srv.request("POST", f"{CM}?fieldManager=kubectl-create", first), 201)
    body = configmap(name, {"k": "b"})
    body["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    updated = ok(srv.request("PUT", f"{CM}/{name}?fieldManager=editor", body))
    applied = ok(
        srv.request(
            "PATCH",
            f"{CM}/{name}?fieldManager=applier&force=true",
            configmap(name, {"k": "c", "added": "x"}),
            content_type="application/apply-patch+yaml",
        )
    )
    deleted = ok(srv.request("DELETE", f"{CM}/{name}"))
    revisions = [o["metadata"]["resourceVersion"] for o in (created, updated, applied)]
    assert deleted["status"] == "Success" or deleted.get("kind") == "ConfigMap"
    return revisions


def current_revision(srv: Server) -> int:
    return int(ok(srv.request("GET", CM))["metadata"]["resourceVersion"])


def test_history_outlives_deletion_compaction_and_restart(
    tmp_path: Path, sqlite_only: None
) -> None:
    srv = start_in_process(tmp_path / "data", history_retention=RETENTION)
    try:
        revisions = write_timeline(srv, "app")
        ok(srv.request("POST", CM, configmap("later", {})), 201)
        revision = current_revision(srv)
        ok(srv.request("POST", f"/kubelite/v1/compact?revision={revision}"))
        exact = f"{CM}?resourceVersion={revisions[0]}&resourceVersionMatch=Exact"
        status, gone = srv.request("GET", exact)
        assert status == 410, gone  # the store's history is compacted: only /history has it
        before_restart = ok(srv.request("GET", f"{CM}/app/history"))
    finally:
        stop_server(srv)
    srv = start_in_process(tmp_path / "data", history_retention=RETENTION)
    try:
        listing = ok(srv.request("GET", f"{CM}/app/history"))
    finally:
        stop_server(srv)
    assert listing == before_restart
    assert (listing["apiVersion"], listing["kind"]) == ("kubelite.dev/v1", "ObjectRevisionList")
    items = listing["items"]
    summary = [(i["manager"], i["operation"], i["object"]["data"]) for i in items]
    assert summary == [
        ("kubectl-create", "Create", {"k": "a"}),
        ("editor", "Update", {"k": "b"}),
        ("applier", "Apply", {"k": "c", "added": "x"}),
        ("", "Delete", {"k": "c", "added": "x"}),  # what was deleted
    ]
    assert [i["resourceVersion"] for i in items[:3]] == revisions
    assert int(items[3]["resourceVersion"]) > int(revisions[2])
    for item in items:
        assert item["object"]["metadata"]["resourceVersion"] == item["resourceVersion"]
        assert item["time"].endswith("Z")
        assert item["object"]["kind"] == "ConfigMap"


def test_count_limit_and_a_grouped_resource(retaining: Server) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments"
    deployment_body = deployment("web")
    ok(retaining.request("POST", path, deployment_body), 201)
    for replicas in (2, 3, 4, 5):
        scale = {"spec": {"replicas": replicas}}
        ok(
            retaining.request(
                "PATCH",
                f"{path}/web?fieldManager=scaler",
                scale,
                content_type="application/merge-patch+json",
            )
        )
    items = ok(retaining.request("GET", f"{path}/web/history"))["items"]
    assert [i["object"]["spec"]["replicas"] for i in items] == [3, 4, 5]  # 3 kept per object
    assert {(i["manager"], i["operation"]) for i in items} == {("scaler", "Update")}


def test_custom_resources_named_before_their_crd_exists(retaining: Server) -> None:
    ok(retaining.request("POST", CRDS, gizmo_crd()), 201)
    gizmo = {"apiVersion": "example.org/v1", "kind": "Gizmo", "metadata": {"name": "g"}}
    created = ok(retaining.request("POST", GIZMOS, gizmo), 201)
    gizmo["metadata"]["labels"] = {"v": "2"}
    gizmo["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    ok(retaining.request("PUT", f"{GIZMOS}/g", gizmo))
    ok(retaining.request("DELETE", f"{GIZMOS}/g"))
    items = ok(retaining.request("GET", f"{GIZMOS}/g/history"))["items"]
    assert [i["operation"] for i in items] == ["Update", "Delete"]  # 2 kept per object
    assert items[0]["object"]["apiVersion"] == "example.org/v1"
    discovered = ok(retaining.request("GET", "/apis/example.org/v1"))["resources"]
    assert "gizmos/history" in {r["name"] for r in discovered}


def test_unknown_object_is_404_and_unretained_resources_have_no_history(
    retaining: Server,
) -> None:
    status, body = retaining.request("GET", f"{CM}/nothing/history")
    assert (status, body["reason"]) == (404, "NotFound")
    assert body["message"] == 'configmaps "nothing" not found'
    status, body = retaining.request("GET", "/api/v1/namespaces/default/secrets/x/history")
    assert status == 404, body
    # the server's own writes are kept too: the root CA publisher made this one
    listing = ok(retaining.request("GET", f"{CM}/kube-root-ca.crt/history"))
    first = listing["items"][0]
    assert (first["operation"], first["manager"]) == ("Create", "kube-controller-manager")


def test_discovery_lists_history_for_retained_resources(retaining: Server) -> None:
    core = ok(retaining.request("GET", "/api/v1"))["resources"]
    apps = ok(retaining.request("GET", "/apis/apps/v1"))["resources"]
    by_name = {r["name"]: r for r in core + apps}
    for name in ("configmaps/history", "deployments/history"):
        entry = by_name[name]
        assert entry["verbs"] == ["get"]
        assert (entry["group"], entry["version"], entry["kind"]) == (
            "kubelite.dev",
            "v1",
            "ObjectRevisionList",
        )
    assert "secrets/history" not in by_name
    assert "replicasets/history" not in by_name


def test_history_is_authorized_as_get_on_the_subresource(retaining: Server) -> None:
    ok(retaining.request("POST", CM, configmap("app", {"k": "a"})), 201)
    rules = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader"},
        "rules": rules,
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}],
    }
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    ok(retaining.request("POST", f"{rbac}/roles", role), 201)
    ok(retaining.request("POST", f"{rbac}/rolebindings", binding), 201)
    cert = retaining.user_certificate("alice")
    ok(retaining.request("GET", f"{CM}/app", cert=cert))
    status, body = retaining.request("GET", f"{CM}/app/history", cert=cert)
    assert (status, body["reason"]) == (403, "Forbidden")
    assert 'cannot get resource "configmaps/history"' in body["message"]
    history_rule = {"apiGroups": [""], "resources": ["configmaps/history"], "verbs": ["get"]}
    role["rules"] = [*rules, history_rule]
    current = ok(retaining.request("GET", f"{rbac}/roles/reader"))
    role["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    ok(retaining.request("PUT", f"{rbac}/roles/reader", role))
    listing = ok(retaining.request("GET", f"{CM}/app/history", cert=cert))
    assert [i["operation"] for i in listing["items"]] == ["Create"]


def test_over_etcd_history_is_405_with_a_clear_message(tmp_path: Path, etcd: EtcdCluster) -> None:
    storage = f"{etcd.url}?prefix=/{uuid.uuid4().hex}"
    srv = start_in_process(tmp_path / "data", storage, history_retention=RETENTION)
    try:
        ok(srv.request("POST", CM, configmap("app", {"k": "a"})), 201)
        status, body = srv.request("GET", f"{CM}/app/history")
        discovered = {r["name"] for r in ok(srv.request("GET", "/api/v1"))["resources"]}
    finally:
        stop_server(srv)
    assert status == 405
    assert (body["kind"], body["status"], body["reason"], body["code"]) == (
        "Status",
        "Failure",
        "MethodNotAllowed",
        405,
    )
    assert body["message"] == (
        "configmaps/history is not available on this server's storage: revision history "
        "beyond compaction is kept only by the SQLite store, not over etcd"
    )
    assert "configmaps/history" in discovered


@pytest.mark.parametrize(
    ("flag", "code", "message"),
    [
        ("foos=3", 1, 'history retention: the server doesn\'t have a resource type "foos"'),
        ("configmaps=0", 2, "invalid history retention 'configmaps=0'"),
        ("configmaps=7w", 2, "invalid history retention 'configmaps=7w'"),
        ("tokenreviews=3", 1, "history retention: 'tokenreviews' objects are not stored"),
    ],
)
def test_a_bad_retention_flag_is_a_one_line_error(
    tmp_path: Path, flag: str, code: int, message: str
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kubelite", "serve", "--port", "0",
         "--data-dir", str(tmp_path / "data"), "--history-retention", flag],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == code
    assert message in result.stderr
    assert result.stderr.strip().splitlines()[-1].count(message) == 1
