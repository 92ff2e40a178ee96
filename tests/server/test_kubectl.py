"""Real kubectl (pinned by the test extra) against a real kubelite serve."""

from __future__ import annotations

import json
import os
import subprocess
import time

from harness import KUBECTL, Server

CM_YAML = """apiVersion: v1
kind: ConfigMap
metadata:
  name: cm1
data:
  a: "1"
"""


def test_create_get_delete(server: Server) -> None:
    out = server.kubectl("create", "-f", "-", "--validate=false", input=CM_YAML)
    assert "configmap/cm1 created" in out.stdout
    got = json.loads(server.kubectl("get", "cm", "cm1", "-o", "json").stdout)
    assert got["data"] == {"a": "1"}
    listed = server.kubectl("get", "configmaps", "-A", "-o", "json").stdout
    assert [i["metadata"]["name"] for i in json.loads(listed)["items"]] == ["cm1"]
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


def test_imperative_create_sends_protobuf_which_is_refused_clearly(server: Server) -> None:
    """kubectl 1.37 sends protobuf for `create configmap|namespace|...`; kubelite speaks JSON
    only for now, so the answer is a 415 Status naming the accepted types."""
    result = server.kubectl("create", "configmap", "x", "--from-literal=a=1", check=False)
    assert result.returncode == 1
    assert "the body of the request was in an unknown format" in result.stderr


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
    waiter = subprocess.Popen(
        [KUBECTL, "wait", "--for=delete", "cm/cm1", "--timeout=30s"],
        env={**os.environ, "KUBECONFIG": str(server.kubeconfig)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(1)
    server.kubectl("delete", "cm", "cm1", "--wait=false")
    out, err = waiter.communicate(timeout=60)
    assert waiter.returncode == 0, err
    assert "configmap/cm1 condition met" in out
