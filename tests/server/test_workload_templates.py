# ruff: noqa: E501  (kube's expected texts are kept whole, one per line)
"""Workload pod templates over HTTP: ReplicationControllers (ValidateReplicationControllerSpec,
ValidatePodTemplateSpecForRC), ReplicaSets, Deployments, DaemonSets and StatefulSets run their
pods with restartPolicy Always and no activeDeadlineSeconds; a Job's are OnFailure or Never.
kube's 422 text, nothing stored."""

from __future__ import annotations

from typing import Any

import pytest
from harness import Server

RC = "/api/v1/namespaces/{ns}/replicationcontrollers"
APPS = "/apis/apps/v1/namespaces/{ns}/"
JOBS = "/apis/batch/v1/namespaces/{ns}/jobs"
LABELS = {"app": "a"}


def template(labels: Any = LABELS, **pod: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "i"}], **pod},
    }


def rc(template_: Any = None, **spec: Any) -> dict[str, Any]:
    body = {"selector": LABELS, "template": template_ or template(), **spec}
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "r"},
        "spec": body,
    }


def apps(kind: str, **pod: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"matchLabels": LABELS}, "template": template(**pod)}
    if kind == "StatefulSet":
        spec["serviceName"] = "s"
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"}, "spec": spec}


def job(**pod: Any) -> dict[str, Any]:
    spec = {"template": {"spec": {"containers": [{"name": "c", "image": "i"}], **pod}}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec}


GCE = {"name": "v", "gcePersistentDisk": {"pdName": "disk"}}

INVALID = [
    (
        RC,
        rc(template(restartPolicy="OnFailure")),
        'ReplicationController "r" is invalid: spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"',
    ),
    (
        RC,
        rc(template(activeDeadlineSeconds=5)),
        'ReplicationController "r" is invalid: spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported',
    ),
    (
        RC,
        rc(replicas=-1, minReadySeconds=-2),
        'ReplicationController "r" is invalid: [spec.minReadySeconds: Invalid value: -2: must be greater than or equal to 0, spec.replicas: Invalid value: -1: must be greater than or equal to 0]',
    ),
    (
        RC,
        rc(selector={"app": "b"}),
        'ReplicationController "r" is invalid: spec.template.metadata.labels: Invalid value: {"app":"a"}: `selector` does not match template `labels`',
    ),
    (
        RC,
        rc(template(labels=None), selector=None),
        'ReplicationController "r" is invalid: spec.selector: Required value',
    ),
    (
        RC,
        {
            **rc(
                template({"app": "a", "bad key!": "x"}, restartPolicy="Never"),
                selector={"app": "b"},
            ),
            "metadata": {"name": "r", "labels": {"own": "labels"}},
        },
        'ReplicationController "r" is invalid: [spec.template.metadata.labels: Invalid value: {"app":"a","bad key!":"x"}: `selector` does not match template `labels`, '
        "spec.template.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), "
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"]',
    ),
    (
        RC,
        rc(template(volumes=[GCE]), replicas=2),
        'ReplicationController "r" is invalid: spec.template.spec.volumes[0].gcePersistentDisk.readOnly: Invalid value: false: must be true for replicated pods > 1; GCE PD can only be mounted on multiple machines if it is read-only',
    ),
    *[
        (
            APPS + plural,
            apps(kind, restartPolicy="OnFailure"),
            f'{kind}.apps "w" is invalid: spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"',
        )
        for kind, plural in [
            ("ReplicaSet", "replicasets"),
            ("Deployment", "deployments"),
            ("DaemonSet", "daemonsets"),
            ("StatefulSet", "statefulsets"),
        ]
    ],
    (
        JOBS,
        job(restartPolicy="Always"),
        'Job.batch "j" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
    ),
]


@pytest.mark.parametrize(("path", "body", "message"), INVALID)
def test_invalid_workload_template(server: Server, path: str, body: Any, message: str) -> None:
    code, status = server.request("POST", path, body)
    assert (code, status["reason"], status["message"]) == (422, "Invalid", message)
    code, _ = server.request("GET", f"{path}/{body['metadata']['name']}")
    assert code == 404


def test_valid_workload_templates(server: Server) -> None:
    for path, body in [
        (RC, rc(template(volumes=[GCE]))),  # one replica may write to its disk
        (APPS + "replicasets", apps("ReplicaSet")),
        (JOBS, job(restartPolicy="OnFailure")),
    ]:
        code, made = server.request("POST", path, body)
        assert code == 201, made
    code, made = server.request("POST", RC, {**rc(), "metadata": {"name": "r2"}})
    assert code == 201, made
    assert made["spec"]["template"]["spec"]["restartPolicy"] == "Always"
