"""Real kubectl (pinned by the test extra) against a real kubelite serve."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest
from harness import ROOT_CA, Server

CM_YAML = """apiVersion: v1
kind: ConfigMap
metadata:
  name: cm1
data:
  a: "1"
"""


@pytest.mark.fresh_server  # every namespace's ConfigMaps listed
def test_create_get_delete(server: Server) -> None:
    out = server.kubectl("create", "-f", "-", "--validate=false", input=CM_YAML)
    assert "configmap/cm1 created" in out.stdout
    got = json.loads(server.kubectl("get", "cm", "cm1", "-o", "json").stdout)
    assert got["data"] == {"a": "1"}
    listed = server.kubectl("get", "configmaps", "-A", "-o", "json").stdout
    # with the root CA ConfigMap of every namespace, as on any cluster
    assert [i["metadata"]["name"] for i in json.loads(listed)["items"]] == ["cm1"] + [ROOT_CA] * 4
    again = server.kubectl("create", "-f", "-", "--validate=false", input=CM_YAML, check=False)
    assert again.returncode == 1
    assert (
        'Error from server (AlreadyExists): error when creating "STDIN": configmaps "cm1" '
        "already exists" in again.stderr
    )
    out = server.kubectl("delete", "cm", "cm1")
    assert 'configmap "cm1" deleted' in out.stdout
    missing = server.kubectl("get", "cm", "cm1", check=False)
    assert 'Error from server (NotFound): configmaps "cm1" not found' in missing.stderr


def test_apply_twice_then_configured(server: Server) -> None:
    first = server.kubectl("apply", "-f", "-", "--validate=false", input=CM_YAML)
    assert "configmap/cm1 created" in first.stdout
    second = server.kubectl("apply", "-f", "-", "--validate=false", input=CM_YAML)
    assert "configmap/cm1 unchanged" in second.stdout
    third = server.kubectl(
        "apply", "-f", "-", "--validate=false", input=CM_YAML.replace('"1"', '"2"')
    )
    assert "configmap/cm1 configured" in third.stdout
    got = json.loads(server.kubectl("get", "cm", "cm1", "-o", "json").stdout)
    assert got["data"] == {"a": "2"}


def test_replace_with_stale_resource_version_prints_the_conflict(server: Server) -> None:
    server.kubectl("create", "-f", "-", "--validate=false", input=CM_YAML)
    current = json.loads(server.kubectl("get", "cm", "cm1", "-o", "json").stdout)
    server.kubectl("label", "cm", "cm1", "x=y")
    current["data"] = {"a": "stale"}
    result = server.kubectl(
        "replace", "-f", "-", "--validate=false", input=json.dumps(current), check=False
    )
    assert result.returncode == 1
    assert (
        'Error from server (Conflict): error when replacing "STDIN": Operation cannot be '
        'fulfilled on configmaps "cm1": the object has been modified; please apply your '
        "changes to the latest version and try again"
    ) in result.stderr


def test_patch_label_and_scale(server: Server) -> None:
    server.kubectl("create", "-f", "-", "--validate=false", input=CM_YAML)
    server.kubectl("patch", "cm", "cm1", "--type", "merge", "-p", '{"data":{"b":"2"}}')
    server.kubectl("patch", "cm", "cm1", "-p", '{"data":{"c":"3"}}')  # strategic merge
    server.kubectl(
        "patch", "cm", "cm1", "--type", "json", "-p", '[{"op":"remove","path":"/data/a"}]'
    )
    server.kubectl("label", "cm", "cm1", "team=blue")
    got = json.loads(server.kubectl("get", "cm", "cm1", "-o", "json").stdout)
    assert got["data"] == {"b": "2", "c": "3"}
    assert got["metadata"]["labels"] == {"team": "blue"}
    selected = server.kubectl("get", "cm", "-l", "team=blue", "-o", "name").stdout.split()
    assert selected == ["configmap/cm1"]


DEPLOYMENT_YAML = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
"""


@pytest.mark.fresh_server  # every namespace's ConfigMaps listed
def test_get_prints_the_kinds_columns(server: Server) -> None:
    server.kubectl("create", "-f", "-", "--validate=false", input=CM_YAML)
    server.kubectl("create", "-f", "-", "--validate=false", input=DEPLOYMENT_YAML)
    cms = server.kubectl("get", "cm").stdout.splitlines()
    assert cms[0].split() == ["NAME", "DATA", "AGE"]
    assert cms[1].split()[:2] == ["cm1", "1"]
    everywhere = server.kubectl("get", "cm", "-A").stdout.splitlines()
    assert everywhere[0].split() == ["NAMESPACE", "NAME", "DATA", "AGE"]
    assert everywhere[1].split()[:2] == ["default", "cm1"]
    deploys = server.kubectl("get", "deploy").stdout.splitlines()
    assert deploys[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    labels = server.kubectl("get", "deploy", "--show-labels").stdout.splitlines()
    assert labels[0].split()[-1] == "LABELS"


def test_scale_a_deployment(server: Server) -> None:
    server.kubectl("create", "-f", "-", "--validate=false", input=DEPLOYMENT_YAML)
    out = server.kubectl("scale", "deployment", "web", "--replicas=3")
    assert "deployment.apps/web scaled" in out.stdout
    got = json.loads(server.kubectl("get", "deploy", "web", "-o", "json").stdout)
    assert got["spec"]["replicas"] == 3
    assert got["metadata"]["generation"] == 2


@pytest.mark.fresh_server  # it makes a namespace team-a
def test_namespace_lifecycle(server: Server) -> None:
    namespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n"
    server.kubectl("create", "-f", "-", "--validate=false", input=namespace)
    server.kubectl("create", "-n", "team-a", "-f", "-", "--validate=false", input=CM_YAML)
    protected = server.kubectl("delete", "namespace", "default", check=False)
    assert (
        'Error from server (Forbidden): namespaces "default" is forbidden: this namespace may '
        "not be deleted"
    ) in protected.stderr
    out = server.kubectl("delete", "namespace", "team-a", "--timeout=30s")
    assert 'namespace "team-a" deleted' in out.stdout
    gone = server.kubectl("get", "namespace", "team-a", check=False)
    assert 'namespaces "team-a" not found' in gone.stderr
    assert server.kubectl("get", "cm", "-n", "team-a", "-o", "name").stdout.strip() == ""


def created_as_json_would_be(server: Server, args: list[str], get: list[str]) -> dict[str, Any]:
    """Run `kubectl create <kind> ...` (kubectl 1.32+ sends protobuf), then `kubectl get -o json`,
    and check every field of kubectl's own JSON rendering (--dry-run=client -o json) landed
    unchanged (status aside); returns the stored object."""
    split = args.index("--") if "--" in args else len(args)
    dry = [*args[:split], "--dry-run=client", "-o", "json", *args[split:]]
    expected = json.loads(server.kubectl(*dry).stdout)
    assert "created" in server.kubectl(*args).stdout
    got: dict[str, Any] = json.loads(server.kubectl("get", *get, "-o", "json").stdout)
    expected.pop("status", None)
    assert contained(expected, got), (args, expected, got)
    return got


def contained(expected: Any, got: Any) -> bool:
    """Every field of ``expected`` is in ``got`` with the same value (the server may add
    fields: metadata, defaults such as a namespace's finalizers or a container's pull
    policy); lists item by item."""
    if isinstance(expected, dict) and isinstance(got, dict):
        return all(k in got and contained(v, got[k]) for k, v in expected.items())
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(map(contained, expected, got))
    return bool(expected == got)


@pytest.mark.fresh_server  # it makes a namespace n
def test_imperative_create_of_core_kinds_over_protobuf(server: Server, tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hello file\n")
    (tmp_path / "bin").write_bytes(b"\x00\xff\x01")
    files = [f"--from-file={tmp_path / 'f.txt'}", f"--from-file={tmp_path / 'bin'}"]
    cm = created_as_json_would_be(
        server, ["create", "configmap", "x", "--from-literal=a=1", *files], ["configmap", "x"]
    )
    assert cm["data"] == {"a": "1", "f.txt": "hello file\n"}
    assert cm["binaryData"] == {"bin": "AP8B"}
    secret = created_as_json_would_be(
        server, ["create", "secret", "generic", "s", "--from-literal=p=q"], ["secret", "s"]
    )
    assert base64.b64decode(secret["data"]["p"]) == b"q"
    created_as_json_would_be(server, ["create", "namespace", "n"], ["namespace", "n"])
    created_as_json_would_be(
        server, ["create", "serviceaccount", "sa", "-n", "n"], ["serviceaccount", "sa", "-n", "n"]
    )
    quota = created_as_json_would_be(
        server,
        ["create", "quota", "q", "--hard=pods=10,requests.cpu=500m", "--scopes=BestEffort"],
        ["resourcequota", "q"],
    )
    assert quota["spec"] == {
        "hard": {"pods": "10", "requests.cpu": "500m"},
        "scopes": ["BestEffort"],
    }
    svc = created_as_json_would_be(
        server,
        ["create", "service", "clusterip", "svc", "--tcp=80:8080", "--tcp=443:https"],
        ["service", "svc"],
    )
    assert [p["targetPort"] for p in svc["spec"]["ports"]] == [8080, "https"]
    assert svc["spec"]["type"] == "ClusterIP"


def test_imperative_create_of_workloads_over_protobuf(server: Server) -> None:
    deploy = created_as_json_would_be(
        server,
        ["create", "deployment", "d", "--image=nginx", "--replicas=2", "--port=80"],
        ["deployment", "d"],
    )
    assert deploy["spec"]["replicas"] == 2
    assert deploy["spec"]["selector"] == {"matchLabels": {"app": "d"}}
    container = deploy["spec"]["template"]["spec"]["containers"][0]
    assert container == {
        "name": "nginx",
        "image": "nginx",
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "Always",
    }
    job = created_as_json_would_be(
        server, ["create", "job", "j", "--image=busybox", "--", "echo", "hi"], ["job", "j"]
    )
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    cron = created_as_json_would_be(
        server,
        ["create", "cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", "--", "date"],
        ["cronjob", "cj"],
    )
    assert cron["spec"]["schedule"] == "*/5 * * * *"
    pdb = created_as_json_would_be(
        server,
        ["create", "poddisruptionbudget", "pdb", "--selector=app=d", "--min-available=50%"],
        ["pdb", "pdb"],
    )
    assert pdb["spec"]["minAvailable"] == "50%"


@pytest.mark.fresh_server  # a ClusterRole, a ClusterRoleBinding, a PriorityClass
def test_imperative_create_of_rbac_and_cluster_kinds_over_protobuf(server: Server) -> None:
    role = created_as_json_would_be(
        server, ["create", "role", "r", "--verb=get", "--resource=pods"], ["role", "r"]
    )
    assert role["rules"] == [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    binding = created_as_json_would_be(
        server,
        ["create", "rolebinding", "rb", "--role=r", "--user=u", "--serviceaccount=default:sa"],
        ["rolebinding", "rb"],
    )
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "r",
    }
    assert binding["subjects"][1] == {
        "kind": "ServiceAccount",
        "name": "sa",
        "namespace": "default",
    }
    created_as_json_would_be(
        server,
        ["create", "clusterrole", "cr", "--verb=list", "--resource=nodes"],
        ["clusterrole", "cr"],
    )
    created_as_json_would_be(
        server,
        ["create", "clusterrolebinding", "crb", "--clusterrole=cr", "--group=g"],
        ["clusterrolebinding", "crb"],
    )
    pc = created_as_json_would_be(
        server,
        ["create", "priorityclass", "pc", "--value=1000", "--description=high"],
        ["priorityclass", "pc"],
    )
    assert (pc["value"], pc["description"]) == (1000, "high")
    created_as_json_would_be(
        server, ["create", "ingress", "ing", "--rule=foo.com/bar=svc:80"], ["ingress", "ing"]
    )


def test_default_validation_rejects_unknown_fields(server: Server) -> None:
    """kubectl's default validation: it finds fieldValidation in /openapi/v3 and sends Strict."""
    bad = CM_YAML + "foo: bar\n"
    result = server.kubectl("create", "-f", "-", input=bad, check=False)
    assert result.returncode == 1
    assert (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "foo"'
    ) in result.stderr
    assert "configmap/cm1 created" in server.kubectl("create", "-f", "-", input=CM_YAML).stdout
    explained = server.kubectl("explain", "configmap.data").stdout
    assert "FIELD: data" in explained


def test_get_watch_and_wait_for_delete(server: Server) -> None:
    server.kubectl("create", "-f", "-", input=CM_YAML)
    waiter = server.kubectl_background("wait", "--for=delete", "cm/cm1", "--timeout=30s")
    time.sleep(1)
    server.kubectl("delete", "cm", "cm1", "--wait=false")
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert "configmap/cm1 condition met" in out
