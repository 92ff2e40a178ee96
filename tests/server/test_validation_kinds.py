# ruff: noqa: E501  (kube's expected texts are kept whole, one per line)
"""Invalid workload, batch, networking and RBAC objects over HTTP: kube's 422 text, nothing stored;
complete valid objects still accepted."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from harness import Server

POD = {"containers": [{"name": "c", "image": "nginx"}]}
TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": POD}
NS = "/apis/{group}/namespaces/{ns}/{plural}"


def obj(api: str, kind: str, name: str, spec: dict[str, Any] | None = None, **top: Any) -> Any:
    out: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": {"name": name}}
    if spec is not None:
        out["spec"] = spec
    out.update(top)
    return out


def deployment(**spec: Any) -> Any:
    base = {"replicas": 1, "selector": {"matchLabels": {"app": "x"}}, "template": TEMPLATE}
    return obj("apps/v1", "Deployment", "d", {**copy.deepcopy(base), **spec})


JOB_POD = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
JOB = {
    "manualSelector": True,
    "selector": {"matchLabels": {"app": "j"}},
    "template": {"metadata": {"labels": {"app": "j"}}, "spec": JOB_POD},
}
CRON = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": JOB_POD}}}}
BACKEND = {"service": {"name": "web", "port": {"number": 80}}}
RULE = {
    "host": "a.example.com",
    "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": BACKEND}]},
}
RBAC = "rbac.authorization.k8s.io/v1"
ROLE_REF = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}

# (collection path, body, kube's message)
INVALID = [
    (
        "/apis/apps/v1/namespaces/{ns}/deployments",
        deployment(template={"metadata": {"labels": {"app": "y"}}, "spec": POD}),
        'Deployment.apps "d" is invalid: spec.template.metadata.labels: Invalid value: '
        '{"app":"y"}: `selector` does not match template `labels`',
    ),
    (
        "/apis/apps/v1/namespaces/{ns}/deployments",
        deployment(replicas=-1),
        'Deployment.apps "d" is invalid: spec.replicas: Invalid value: -1: '
        "must be greater than or equal to 0",
    ),
    (
        "/apis/apps/v1/namespaces/{ns}/deployments",
        deployment(
            strategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0},
            }
        ),
        'Deployment.apps "d" is invalid: spec.strategy.rollingUpdate.maxUnavailable: '
        "Invalid value: 0: may not be 0 when `maxSurge` is 0",
    ),
    (
        "/apis/apps/v1/namespaces/{ns}/replicasets",
        obj("apps/v1", "ReplicaSet", "rs", {"selector": {}, "template": TEMPLATE}),
        'ReplicaSet.apps "rs" is invalid: spec.selector: Invalid value: {}: '
        "empty selector is invalid for deployment",
    ),
    (
        "/apis/batch/v1/namespaces/{ns}/jobs",
        obj("batch/v1", "Job", "j", {**JOB, "backoffLimit": -1}),
        'Job.batch "j" is invalid: spec.backoffLimit: Invalid value: -1: '
        "must be greater than or equal to 0",
    ),
    (
        "/apis/batch/v1/namespaces/{ns}/jobs",
        obj(
            "batch/v1",
            "Job",
            "j",
            {
                **JOB,
                "template": {
                    "metadata": {"labels": {"app": "j"}},
                    "spec": {**JOB_POD, "restartPolicy": "Always"},
                },
            },
        ),
        'Job.batch "j" is invalid: spec.template.spec.restartPolicy: Required value: '
        'valid values: "OnFailure", "Never"',
    ),
    (
        "/apis/batch/v1/namespaces/{ns}/cronjobs",
        obj("batch/v1", "CronJob", "cj", {**CRON, "schedule": "bad"}),
        'CronJob.batch "cj" is invalid: spec.schedule: Invalid value: "bad": '
        "expected exactly 5 fields, found 1: [bad]",
    ),
    (
        "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
        obj(
            "networking.k8s.io/v1",
            "Ingress",
            "i",
            {
                "rules": [
                    {"http": {"paths": [{"path": "api", "pathType": "Exact", "backend": BACKEND}]}}
                ]
            },
        ),
        'Ingress.networking.k8s.io "i" is invalid: spec.rules[0].http.paths[0].path: '
        'Invalid value: "api": must be an absolute path',
    ),
    (
        "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
        obj(
            "networking.k8s.io/v1",
            "NetworkPolicy",
            "np",
            {"podSelector": {}, "policyTypes": ["Sideways"]},
        ),
        'NetworkPolicy.networking.k8s.io "np" is invalid: spec.policyTypes[0]: '
        'Unsupported value: "Sideways": supported values: "Ingress", "Egress"',
    ),
    (
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
        obj(RBAC, "Role", "r", rules=[{"apiGroups": [""], "resources": ["pods"]}]),
        'Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: '
        "verbs must contain at least one value",
    ),
    (
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        obj(
            RBAC,
            "ClusterRoleBinding",
            "crb",
            roleRef={**ROLE_REF, "kind": "ClusterRole"},
            subjects=[{"kind": "ServiceAccount", "name": "default"}],
        ),
        'ClusterRoleBinding.rbac.authorization.k8s.io "crb" is invalid: subjects[0].namespace: '
        "Required value",
    ),
]


def _listed(server: Server, path: str) -> list[str]:
    code, body = server.request("GET", path)
    assert code == 200, body
    return [item["metadata"]["name"] for item in body["items"]]  # type: ignore[index]


@pytest.mark.parametrize(
    ("path", "body", "message"), INVALID, ids=[b["kind"] for _, b, _ in INVALID]
)
def test_invalid_objects_are_refused(server: Server, path: str, body: Any, message: str) -> None:
    code, status = server.request("POST", path, body)
    assert (code, status.get("reason"), status.get("message")) == (422, "Invalid", message)
    assert body["metadata"]["name"] not in _listed(server, path)


VALID = [
    ("/apis/apps/v1/namespaces/{ns}/deployments", deployment()),
    ("/apis/batch/v1/namespaces/{ns}/jobs", obj("batch/v1", "Job", "j", JOB)),
    ("/apis/batch/v1/namespaces/{ns}/cronjobs", obj("batch/v1", "CronJob", "cj", CRON)),
    (
        "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
        obj("networking.k8s.io/v1", "Ingress", "i", {"rules": [RULE]}),
    ),
    (
        "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
        obj(
            RBAC,
            "RoleBinding",
            "rb",
            roleRef=ROLE_REF,
            subjects=[{"kind": "ServiceAccount", "name": "default"}],
        ),
    ),
]


@pytest.mark.parametrize(("path", "body"), VALID, ids=[b["kind"] for _, b in VALID])
def test_valid_objects_are_accepted(server: Server, path: str, body: Any) -> None:
    code, created = server.request("POST", path, body)
    assert code == 201, created


def test_immutable_on_update(server: Server) -> None:
    path = "/apis/apps/v1/namespaces/{ns}/deployments"
    code, created = server.request("POST", path, deployment())
    assert code == 201, created
    changed = copy.deepcopy(created)
    changed["spec"]["selector"] = {"matchLabels": {"app": "x", "t": "1"}}  # type: ignore[index]
    changed["spec"]["template"]["metadata"]["labels"]["t"] = "1"  # type: ignore[index]
    code, status = server.request("PUT", f"{path}/d", changed)
    assert (code, status.get("message")) == (
        422,
        'Deployment.apps "d" is invalid: spec.selector: Invalid value: '
        '{"matchLabels":{"app":"x","t":"1"}}: field is immutable',
    )
    code, stored = server.request("GET", f"{path}/d")
    assert stored["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]  # type: ignore[index]
    rb = "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"
    code, binding = server.request("POST", rb, VALID[-1][1])
    assert code == 201, binding
    binding["roleRef"]["name"] = "other"  # type: ignore[index]
    code, status = server.request("PUT", f"{rb}/rb", binding)
    assert (code, status.get("message")) == (
        422,
        'RoleBinding.rbac.authorization.k8s.io "rb" is invalid: roleRef: Invalid value: '
        '{"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"}: cannot change roleRef',
    )
