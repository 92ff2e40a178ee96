"""ValidatingAdmissionPolicy on a real ``kubelite serve``, through HTTP and kubectl
(k8s.io/apiserver ``pkg/admission/plugin/policy/validating``): kube's denial Status and what kubectl
prints of it, the validation actions (a Warning header, the audit annotation), params, selectors,
match conditions, variables, messageExpression and reasons, failurePolicy against a runtime error,
and policy changes that count from the client's next request, on this server and (over etcd) on
another."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from harness import Server, start_in_process, stop_server
from test_audit_log import events_of
from test_metrics_endpoint import raw_request

#: every policy here matches its kind in every namespace, under names the denials quote
pytestmark = pytest.mark.fresh_server
Obj = dict[str, Any]
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
POLICIES = f"{ADMISSION}/validatingadmissionpolicies"
BINDINGS = f"{ADMISSION}/validatingadmissionpolicybindings"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DEMO = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: demo-policy.example.com
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups:   ["apps"]
      apiVersions: ["v1"]
      operations:  ["CREATE", "UPDATE"]
      resources:   ["deployments"]
  validations:
    - expression: "object.spec.replicas <= 5"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: demo-binding
spec:
  policyName: demo-policy.example.com
  validationActions: [Deny]
"""
DEMO_TEXT = (
    "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding 'demo-binding' denied "
    "request: failed expression: object.spec.replicas <= 5"
)


def deployment(name: str = "nginx", replicas: int = 1, **labels: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def policy(name: str, *validations: Obj, **spec: Any) -> Obj:
    rules = [
        {
            "apiGroups": ["apps"],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["deployments"],
        }
    ]
    body: Obj = {"matchConstraints": {"resourceRules": rules}, **spec}
    if validations:
        body["validations"] = list(validations)
    return {"metadata": {"name": name}, "spec": body}


def binding(name: str, policy_name: str, *actions: str, **spec: Any) -> Obj:
    actions = actions or ("Deny",)
    return {
        "metadata": {"name": name},
        "spec": {"policyName": policy_name, "validationActions": list(actions), **spec},
    }


def made(server: Server, path: str, body: Obj) -> Obj:
    code, got = server.request("POST", path, body)
    assert code == 201, got
    return got


def write(server: Server, body: Obj) -> tuple[int, dict[str, str], Obj]:
    """Create a deployment, or replace it when it exists: (code, headers, body)."""
    name = body["metadata"]["name"]
    code, current = server.request("GET", f"{DEPLOYMENTS}/{name}")
    if code == 200:
        body = {**body, "metadata": {**body["metadata"], **_version(current)}}
        answer = raw_request(server, "PUT", f"{DEPLOYMENTS}/{name}", json.dumps(body).encode())
    else:
        answer = raw_request(server, "POST", DEPLOYMENTS, json.dumps(body).encode())
    code, headers, raw = answer
    return code, headers, json.loads(raw)


def _version(obj: Any) -> Obj:
    return {"resourceVersion": obj["metadata"]["resourceVersion"]}


def test_the_denial_as_kube_sends_it_and_kubectl_prints_it(server: Server) -> None:
    server.kubectl("apply", "-f", "-", input=DEMO)
    code, _, refused = write(server, deployment(replicas=6))
    assert (code, refused) == (
        422,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f'deployments.apps "nginx" is forbidden: {DEMO_TEXT}',
            "reason": "Invalid",
            "details": {
                "name": "nginx",
                "group": "apps",
                "kind": "deployments",
                "causes": [{"message": DEMO_TEXT}],
            },
            "code": 422,
        },
    )
    manifest = json.dumps(deployment(replicas=6))
    printed = server.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert printed.returncode == 1
    assert printed.stderr.strip() == f'The deployments "nginx" is invalid: : {DEMO_TEXT}'
    printed = server.kubectl(
        "create", "deployment", "web", "--image=nginx", "--replicas=7", check=False
    )
    assert printed.stderr.strip() == (
        'error: failed to create deployment: deployments.apps "web" is forbidden: ' + DEMO_TEXT
    )
    assert write(server, deployment(replicas=5))[0] == 201
    # a dry run is validated too; other kinds and operations are not
    code, _, _ = raw_request(
        server, "POST", f"{DEPLOYMENTS}?dryRun=All", json.dumps(deployment("d", 9)).encode()
    )
    assert code == 422
    assert server.request("DELETE", f"{DEPLOYMENTS}/nginx")[0] == 200


def test_a_change_counts_from_the_next_request(server: Server) -> None:
    limit = {"expression": "object.spec.replicas <= 2", "message": "at most 2"}
    for round in range(3):
        made(server, POLICIES, policy(f"p{round}", limit))
        made(server, BINDINGS, binding(f"b{round}", f"p{round}"))
        code, _, refused = write(server, deployment(replicas=3))
        assert code == 422, refused
        assert refused["message"].endswith(f"binding 'b{round}' denied request: at most 2")
        # the binding now only warns
        code, current = server.request("GET", f"{BINDINGS}/b{round}")
        current["spec"]["validationActions"] = ["Warn"]  # type: ignore[index]
        assert server.request("PUT", f"{BINDINGS}/b{round}", current)[0] == 200
        code, headers, _ = write(server, deployment(replicas=3))
        assert code in (200, 201)
        assert headers["warning"] == (
            f"299 - \"Validation failed for ValidatingAdmissionPolicy 'p{round}' with binding "
            f"'b{round}': at most 2\""
        )
        assert server.request("DELETE", f"{BINDINGS}/b{round}")[0] == 200
        code, headers, _ = write(server, deployment(replicas=3))
        assert code == 200
        assert "warning" not in headers
        assert server.request("DELETE", f"{POLICIES}/p{round}")[0] == 200


def test_warn_is_printed_by_kubectl_and_audit_is_annotated(
    tmp_path: Path, storage_url: str | None
) -> None:
    audit_policy = tmp_path / "audit.yaml"
    audit_policy.write_text(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
    )
    log = tmp_path / "audit.log"
    server = start_in_process(
        tmp_path / "data", storage_url, audit_policy_file=str(audit_policy), audit_log_path=str(log)
    )
    try:
        limit = {"expression": "object.spec.replicas <= 2", "message": "at most 2"}
        annotations = [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}]
        made(server, POLICIES, policy("p", limit, auditAnnotations=annotations))
        made(server, BINDINGS, binding("b", "p", "Warn", "Audit"))
        printed = server.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3")
        assert printed.stderr.strip() == (
            "Warning: Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': "
            "at most 2"
        )
        code, headers, _ = write(server, deployment("other", 4))
        assert code == 201
        (complete,) = [
            e for e in events_of(log, headers["audit-id"]) if e["stage"] == "ResponseComplete"
        ]
        annotations = complete["annotations"]
        assert annotations["p/replicas"] == "4"
        assert json.loads(annotations["validation.policy.admission.k8s.io/validation_failure"]) == [
            {
                "message": "at most 2",
                "policy": "p",
                "binding": "b",
                "expressionIndex": 0,
                "validationActions": ["Warn", "Audit"],
            }
        ]
    finally:
        stop_server(server)


def test_params_by_name_and_by_selector(server: Server) -> None:
    check = {
        "expression": "object.spec.replicas <= int(params.data.max)",
        "messageExpression": "'at most ' + params.data.max + ' replicas'",
    }
    param_kind = {"apiVersion": "v1", "kind": "ConfigMap"}
    made(server, POLICIES, policy("p", check, paramKind=param_kind))
    made(server, CONFIGMAPS, {"metadata": {"name": "limits"}, "data": {"max": "3"}})
    by_name = {"name": "limits", "parameterNotFoundAction": "Deny"}
    made(server, BINDINGS, binding("b", "p", paramRef=by_name))
    assert write(server, deployment(replicas=3))[0] == 201
    code, _, refused = write(server, deployment(replicas=4))
    assert code == 422
    assert refused["message"].endswith("denied request: at most 3 replicas")
    # the param's change counts from the next write
    code, current = server.request("GET", f"{CONFIGMAPS}/limits")
    current["data"] = {"max": "4"}
    assert server.request("PUT", f"{CONFIGMAPS}/limits", current)[0] == 200
    assert write(server, deployment(replicas=4))[0] == 200
    assert server.request("DELETE", f"{CONFIGMAPS}/limits")[0] == 200
    code, _, refused = write(server, deployment(replicas=1))
    assert code == 422
    assert refused["message"].endswith(
        "failed to configure binding: no params found for policy binding with `Deny` "
        "parameterNotFoundAction"
    )
    # by selector: one evaluation per selected param
    for name, most in (("small", "2"), ("large", "5")):
        labelled = {"name": name, "labels": {"role": "limit"}}
        made(server, CONFIGMAPS, {"metadata": labelled, "data": {"max": most}})
    code, current = server.request("GET", f"{BINDINGS}/b")
    selector = {"matchLabels": {"role": "limit"}}
    current["spec"]["paramRef"] = {"selector": selector, "parameterNotFoundAction": "Allow"}  # type: ignore[index]
    assert server.request("PUT", f"{BINDINGS}/b", current)[0] == 200
    assert write(server, deployment(replicas=2))[0] == 200
    code, _, refused = write(server, deployment(replicas=3))
    assert refused["message"].endswith("denied request: at most 2 replicas")


def test_selectors_conditions_variables_and_reasons(server: Server) -> None:
    for name, env in (("prod", "prod"), ("dev", "dev")):
        made(server, "/api/v1/namespaces", {"metadata": {"name": name, "labels": {"env": env}}})
    check = {
        "expression": "variables.replicas <= 2",
        "messageExpression": "string(variables.replicas) + ' replicas in ' + "
        "namespaceObject.metadata.name",
        "reason": "Forbidden",
    }
    spec = {
        "variables": [{"name": "replicas", "expression": "object.spec.replicas"}],
        "matchConditions": [
            {
                "name": "not-exempt",
                "expression": "!has(object.metadata.labels) "
                "|| !('exempt' in object.metadata.labels)",
            }
        ],
    }
    made(server, POLICIES, policy("p", check, **spec))
    prod = {"namespaceSelector": {"matchLabels": {"env": "prod"}}}
    made(server, BINDINGS, binding("b", "p", matchResources=prod))
    big = json.dumps({**deployment(replicas=3), "metadata": {"name": "big", "namespace": "prod"}})
    printed = server.kubectl("apply", "-f", "-", input=big, check=False)
    assert printed.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": deployments.apps "big" is '
        "forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "
        "3 replicas in prod"
    )
    server.kubectl("apply", "-n", "dev", "-f", "-", input=big.replace('"prod"', '"dev"'))
    exempt = {
        **deployment("x", 3, exempt="yes"),
        "metadata": {"name": "x", "namespace": "prod", "labels": {"exempt": "yes"}},
    }
    server.kubectl("apply", "-f", "-", input=json.dumps(exempt))


def test_failure_policy_with_a_runtime_error(server: Server) -> None:
    broken = {"expression": "object.spec.paused == false"}
    made(server, POLICIES, policy("p", broken))
    made(server, BINDINGS, binding("b", "p"))
    code, _, refused = write(server, deployment())
    assert code == 422
    assert refused["message"] == (
        "deployments.apps \"nginx\" is forbidden: ValidatingAdmissionPolicy 'p' with binding "
        "'b' denied request: expression 'object.spec.paused == false' resulted in error: "
        "no such key: paused"
    )
    code, current = server.request("GET", f"{POLICIES}/p")
    current["spec"]["failurePolicy"] = "Ignore"  # type: ignore[index]
    assert server.request("PUT", f"{POLICIES}/p", current)[0] == 200
    assert write(server, deployment())[0] == 201


def test_create_on_update_is_admitted_as_a_create(server: Server) -> None:
    rules = [
        {
            "apiGroups": ["coordination.k8s.io"],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["leases"],
        }
    ]
    check = {"expression": "request.operation == 'CREATE' && object.spec.holderIdentity == 'a'"}
    made(
        server,
        POLICIES,
        {
            "metadata": {"name": "p"},
            "spec": {"matchConstraints": {"resourceRules": rules}, "validations": [check]},
        },
    )
    made(server, BINDINGS, binding("b", "p"))
    leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "b"}}
    code, refused = server.request("PUT", f"{leases}/l", lease)
    assert code == 422, refused
    lease["spec"]["holderIdentity"] = "a"
    assert server.request("PUT", f"{leases}/l", lease)[0] == 201
    code, current = server.request("GET", f"{leases}/l")
    current["spec"]["holderIdentity"] = "b"  # type: ignore[index]
    assert server.request("PUT", f"{leases}/l", current)[0] == 200  # an UPDATE: not matched


def test_a_change_reaches_another_server_over_the_same_store(
    tmp_path: Path, storage_url: str | None
) -> None:
    if storage_url is None:
        pytest.skip("two servers share a store only over etcd (--storage-backend etcd)")
    first = start_in_process(tmp_path / "a", storage_url)
    second = start_in_process(tmp_path / "b", storage_url)
    try:
        made(first, POLICIES, policy("p", {"expression": "object.spec.replicas <= 2"}))
        made(first, BINDINGS, binding("b", "p"))
        started = time.monotonic()
        while write(second, deployment(replicas=3))[0] != 422:
            assert time.monotonic() - started < 1.0
            second.request("DELETE", f"{DEPLOYMENTS}/nginx")
            time.sleep(0.02)
    finally:
        stop_server(second)
        stop_server(first)


def test_a_delete_is_validated_with_its_old_object_and_warned(server: Server) -> None:
    rules = [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["*"]}
    ]
    check = {
        "expression": "object == null && oldObject.data.keep != 'yes'",
        "message": "kept",
    }
    spec = {"matchConstraints": {"resourceRules": rules}, "validations": [check]}
    made(server, POLICIES, {"metadata": {"name": "p"}, "spec": spec})
    made(server, BINDINGS, binding("b", "p", "Warn"))
    made(server, CONFIGMAPS, {"metadata": {"name": "c"}, "data": {"keep": "yes"}})
    code, headers, _ = raw_request(server, "DELETE", f"{CONFIGMAPS}/c")
    assert code == 200
    assert headers["warning"] == (
        "299 - \"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': kept\""
    )


def test_a_scale_write_is_validated_as_a_scale(server: Server) -> None:
    """kube's scale endpoint admits the ``autoscaling/v1`` Scale, old and new: a policy on
    ``deployments/scale`` sees Scales, not Deployments."""
    rules = [
        {
            "apiGroups": ["apps"],
            "apiVersions": ["v1"],
            "operations": ["UPDATE"],
            "resources": ["deployments/scale"],
        }
    ]
    check = {
        "expression": "object.spec.replicas <= oldObject.spec.replicas + 1",
        "messageExpression": "object.apiVersion + ' ' + object.kind + ' ' + oldObject.kind"
        " + ' ' + object.status.selector",
    }
    spec = {"matchConstraints": {"resourceRules": rules}, "validations": [check]}
    made(server, POLICIES, {"metadata": {"name": "scale"}, "spec": spec})
    made(server, BINDINGS, binding("scale", "scale"))
    made(server, DEPLOYMENTS, deployment("web"))
    path = f"{DEPLOYMENTS}/web/scale"
    patch = {"spec": {"replicas": 5}}
    code, refused = server.request("PATCH", path, patch, "application/merge-patch+json")
    assert code == 422, refused
    assert refused["message"] == (
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'scale' with binding "
        "'scale' denied request: autoscaling/v1 Scale Scale app=web"
    )
    patch = {"spec": {"replicas": 2}}
    code, scaled = server.request("PATCH", path, patch, "application/merge-patch+json")
    assert code == 200, scaled
    assert scaled["spec"] == {"replicas": 2}


def test_kubectl_waits_for_the_status_controller_to_observe_a_policy(server: Server) -> None:
    """kube's status controller writes ``status.observedGeneration`` (and a warning-free
    ``typeChecking``) for each generation; clients wait on it."""
    server.kubectl("apply", "-f", "-", input=DEMO)
    server.kubectl(
        "wait", "--for=jsonpath={.status.observedGeneration}=1", "--timeout=30s",
        "validatingadmissionpolicy/demo-policy.example.com",
    )  # fmt: skip
    status = json.loads(
        server.kubectl("get", "validatingadmissionpolicy", "demo-policy.example.com",
                       "-o", "json").stdout
    )["status"]  # fmt: skip
    assert status == {"observedGeneration": 1, "typeChecking": {}}
