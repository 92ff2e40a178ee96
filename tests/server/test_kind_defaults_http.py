"""Defaults over HTTP: minimal objects come back as kube-apiserver 1.37 returns them."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from harness import Server

NS = "/api/v1/namespaces/{ns}"
CONTAINER = {"name": "c", "image": "nginx"}


def create(server: Server, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, made = server.request("POST", path, body)
    assert code == 201, made
    code, stored = server.request("GET", f"{path}/{made['metadata']['name']}")
    assert code == 200
    assert stored == made
    return made


def test_pod_defaults_status_and_qos(server: Server) -> None:
    pod = create(
        server,
        f"{NS}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            # bound already (to no Node), so that the scheduler does not write its status
            "spec": {"containers": [CONTAINER], "nodeName": "nowhere"},
        },
    )
    spec = pod["spec"]
    assert spec["containers"][0]["imagePullPolicy"] == "Always"
    assert spec["containers"][0]["terminationMessagePolicy"] == "File"
    assert spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["serviceAccountName"] == "default"
    assert spec["enableServiceLinks"] is True
    assert [t["key"] for t in spec["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_deployment_defaults_on_create_and_update(server: Server) -> None:
    path = "/apis/apps/v1/namespaces/{ns}/deployments"
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [CONTAINER]},
            },
        },
    }
    made = create(server, path, body)
    assert made["spec"]["replicas"] == 1
    assert made["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert made["spec"]["revisionHistoryLimit"] == 10
    assert made["spec"]["progressDeadlineSeconds"] == 600
    assert made["spec"]["template"]["spec"]["securityContext"] == {}
    # a PUT of the minimal body again gets the same defaults (no generation move)
    code, updated = server.request("PUT", f"{path}/web", body)
    assert code == 200, updated
    assert updated["spec"] == made["spec"]
    assert updated["metadata"]["generation"] == 1


def test_job_and_cron_job(server: Server) -> None:
    job = create(
        server,
        "/apis/batch/v1/namespaces/{ns}/jobs",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "pi"},
            "spec": {"template": {"spec": {"containers": [CONTAINER], "restartPolicy": "Never"}}},
        },
    )
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid,
        "job-name": "pi",
    }
    for key, value in {
        "backoffLimit": 6,
        "completions": 1,
        "parallelism": 1,
        "completionMode": "NonIndexed",
        "suspend": False,
        "manualSelector": False,
        "podReplacementPolicy": "TerminatingOrFailed",
    }.items():
        assert job["spec"][key] == value
    cron = create(
        server,
        "/apis/batch/v1/namespaces/{ns}/cronjobs",
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "c"},
            "spec": {
                "schedule": "*/5 * * * *",
                "jobTemplate": {
                    "spec": {
                        "template": {
                            "spec": {"containers": [CONTAINER], "restartPolicy": "OnFailure"}
                        }
                    }
                },
            },
        },
    )
    assert cron["spec"]["concurrencyPolicy"] == "Allow"
    assert cron["spec"]["suspend"] is False
    assert cron["spec"]["successfulJobsHistoryLimit"] == 3
    assert cron["spec"]["failedJobsHistoryLimit"] == 1
    assert "backoffLimit" not in cron["spec"]["jobTemplate"]["spec"]


@pytest.mark.fresh_server  # it makes a namespace team-a
def test_namespace_label_kept(server: Server) -> None:
    made = create(
        server,
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    )
    assert made["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    body = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "other"}},
    }
    code, updated = server.request("PUT", "/api/v1/namespaces/team-a", body)
    assert code == 200, updated
    assert updated["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    code, system = server.request("GET", "/api/v1/namespaces/default")
    assert system["metadata"]["labels"] == {"kubernetes.io/metadata.name": "default"}


def test_secret_string_data_folded(server: Server) -> None:
    made = create(
        server,
        f"{NS}/secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s"},
            "stringData": {"password": "hunter2"},
        },
    )
    assert "stringData" not in made
    assert made["data"] == {"password": base64.b64encode(b"hunter2").decode()}
    assert made["type"] == "Opaque"


def test_a_new_claim_reads_pending(server: Server) -> None:
    body = {
        "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    code, made = server.request("POST", "/api/v1/namespaces/{ns}/persistentvolumeclaims", body)
    assert code == 201, made
    assert made["status"] == {"phase": "Pending"}
    assert made["spec"]["volumeMode"] == "Filesystem"


def test_names_generated_before_defaults_and_labels(server: Server) -> None:
    code, ns = server.request("POST", "/api/v1/namespaces", {"metadata": {"generateName": "t-"}})
    assert code == 201, ns
    name = ns["metadata"]["name"]
    assert name.startswith("t-")
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == name
    job = {
        "metadata": {"generateName": "j-"},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
            }
        },
    }
    code, made = server.request("POST", "/apis/batch/v1/namespaces/{ns}/jobs", job)
    assert code == 201, made
    labels = made["spec"]["template"]["metadata"]["labels"]
    assert labels["job-name"] == labels["batch.kubernetes.io/job-name"] == made["metadata"]["name"]
