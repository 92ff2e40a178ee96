"""MutatingAdmissionPolicy (admissionregistration.k8s.io/v1) on a real ``kubelite serve``,
through HTTP and kubectl (k8s.io/apiserver
``pkg/admission/plugin/policy/mutating``): both patch types on the object a client
writes, their order before validation (a ValidatingAdmissionPolicy sees the mutated object),
the refusal kubectl prints, and a policy change counting from the next request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import Server

#: every policy here matches its kind in every namespace, under names the answers quote
pytestmark = pytest.mark.fresh_server

Obj = dict[str, Any]
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
SIDECAR = """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: sidecar-policy.example.com
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  matchConditions:
  - name: no-sidecar-yet
    expression: "!object.spec.template.spec.containers.exists(c, c.name == 'mesh-proxy')"
  failurePolicy: Fail
  reinvocationPolicy: IfNeeded
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >
        Object{
          spec: Object.spec{
            template: Object.spec.template{
              spec: Object.spec.template.spec{
                containers: [
                  Object.spec.template.spec.containers{
                    name: "mesh-proxy",
                    image: "mesh/proxy:v1.0.0"
                  }
                ]
              }
            }
          }
        }
  - patchType: JSONPatch
    jsonPatch:
      expression: >
        [
          JSONPatch{
            op: "add",
            path: "/metadata/labels/" + jsonpatch.escapeKey("mesh.example.com/injected"),
            value: "true"
          }
        ]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: sidecar-binding
spec:
  policyName: sidecar-policy.example.com
"""
VALIDATE_INJECTED = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: injected
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.template.spec.containers.size() == 2"
    message: "no sidecar"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: injected
spec:
  policyName: injected
  validationActions: [Deny]
"""


def test_both_patch_types_before_validation(server: Server) -> None:
    server.kubectl("apply", "-f", "-", input=SIDECAR + "---" + VALIDATE_INJECTED)
    server.kubectl("create", "deployment", "web", "--image=nginx")
    made = json.loads(server.kubectl("get", "deployment", "web", "-o", "json").stdout)
    containers = made["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["nginx", "mesh-proxy"]
    assert containers[1]["image"] == "mesh/proxy:v1.0.0"
    assert containers[1]["imagePullPolicy"] == "IfNotPresent"  # defaulted after the mutation
    assert made["metadata"]["labels"]["mesh.example.com/injected"] == "true"
    # updates are not matched; the policy's kinds are exempt from it
    server.kubectl("label", "deployment", "web", "more=yes")
    policy = json.loads(
        server.kubectl(
            "get", "mutatingadmissionpolicy", "sidecar-policy.example.com", "-o", "json"
        ).stdout
    )
    assert policy["spec"]["failurePolicy"] == "Fail"
    assert policy["spec"]["matchConstraints"]["namespaceSelector"] == {}


def test_a_refusal_and_a_change_on_the_next_request(server: Server) -> None:
    broken = SIDECAR.replace('value: "true"', "value: object.spec.nope")
    server.kubectl("apply", "-f", "-", input=broken)
    printed = server.kubectl("create", "deployment", "web", "--image=nginx", check=False)
    text = (
        "policy 'sidecar-policy.example.com' with binding 'sidecar-binding' denied request: "
        'expression \'[\n  JSONPatch{\n    op: "add",\n    path: "/metadata/labels/" + '
        'jsonpatch.escapeKey("mesh.example.com/injected"),\n    value: object.spec.nope\n  }\n]\n'
        "' resulted in error: no such key: nope"
    )
    assert printed.stderr.strip() == f"error: failed to create deployment: {text}"
    code, refused = server.request("POST", DEPLOYMENTS, deployment("api"))
    assert (code, refused["reason"], refused["message"]) == (403, "Invalid", text)
    assert refused["details"] == {
        "name": "api",
        "group": "apps",
        "kind": "deployments",
        "causes": [{"message": text}],
    }
    # Ignore: the write goes through with the mutations before the failing one
    server.kubectl("apply", "-f", "-", input=broken.replace("Fail", "Ignore"))
    code, made = server.request("POST", DEPLOYMENTS, deployment("api"))
    assert code == 201, made
    containers = made["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
    assert [c["name"] for c in containers] == ["c", "mesh-proxy"]
    assert "mesh.example.com/injected" not in made["metadata"]["labels"]  # type: ignore[index]
    # the binding's removal counts from the next write
    path = f"{ADMISSION}/mutatingadmissionpolicybindings/sidecar-binding"
    assert server.request("DELETE", path)[0] == 200
    code, made = server.request("POST", DEPLOYMENTS, deployment("plain"))
    assert code == 201
    assert len(made["spec"]["template"]["spec"]["containers"]) == 1  # type: ignore[index]


def deployment(name: str) -> Obj:
    return {
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


FAILING_FIRST = """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: failing-first
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  failurePolicy: FAILURE_POLICY
  reinvocationPolicy: Never
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'remove', path: '/data/missing'}]"
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'second': 'ran'}}]"
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'remove', path: '/data/gone'}]"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: failing-first
spec:
  policyName: failing-first
"""


def test_a_failing_mutation_does_not_stop_the_next_ones(server: Server) -> None:
    """kube's dispatcher records a mutation's error and goes on with the policy's next
    mutation (mutating/dispatcher.go ``dispatchInvocations``): under Ignore the later
    mutations are applied, under Fail each failing mutation is a cause of the refusal."""
    server.kubectl("apply", "-f", "-", input=FAILING_FIRST.replace("FAILURE_POLICY", "Ignore"))
    cms = "/api/v1/namespaces/default/configmaps"
    body = {"metadata": {"name": "a"}, "data": {"k": "v"}}
    code, made = server.request("POST", cms, body)
    assert code == 201, made
    assert made["metadata"]["labels"] == {"second": "ran"}  # type: ignore[index]

    server.kubectl("apply", "-f", "-", input=FAILING_FIRST.replace("FAILURE_POLICY", "Fail"))
    code, refused = server.request("POST", cms, {**body, "metadata": {"name": "b"}})
    assert (code, refused["reason"]) == (403, "Invalid"), refused
    denied = "policy 'failing-first' with binding 'failing-first' denied request: JSON Patch: "
    causes = [c["message"] for c in refused["details"]["causes"]]  # type: ignore[index]
    assert len(causes) == 2, causes
    assert all(c.startswith(denied) for c in causes)
    assert "missing" in causes[0]
    assert "gone" in causes[1]
    assert refused["message"] == causes[0]


SCALE_CAP = """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: scale-cap
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["UPDATE"]
      resources: ["deployments/scale"]
  matchConditions:
  - name: a-scale
    expression: "object.kind == 'Scale' && object.spec.replicas > 3"
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: PATCH_TYPE
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: scale-cap
spec:
  policyName: scale-cap
"""
SCALE_MUTATIONS = {
    "ApplyConfiguration": """
    applyConfiguration:
      expression: "Object{spec: Object.spec{replicas: 3}}"
""",
    "JSONPatch": """
    jsonPatch:
      expression: "[JSONPatch{op: 'replace', path: '/spec/replicas', value: 3}]"
""",
}


def test_a_scale_write_is_mutated_as_a_scale(server: Server) -> None:
    """kube mutates the ``autoscaling/v1`` Scale of a scale write; its replicas reach the
    deployment."""
    for patch_type, mutation in SCALE_MUTATIONS.items():
        name = f"web-{patch_type.lower()}"
        policy = SCALE_CAP.replace("PATCH_TYPE", patch_type).replace(
            "  mutations:\n  - patchType: " + patch_type + "\n",
            "  mutations:\n  - patchType: " + patch_type + mutation,
        )
        server.kubectl("apply", "-f", "-", input=policy)
        assert server.request("POST", DEPLOYMENTS, deployment(name))[0] == 201
        path = f"{DEPLOYMENTS}/{name}/scale"
        patch = {"spec": {"replicas": 7}}
        code, scaled = server.request("PATCH", path, patch, "application/merge-patch+json")
        assert code == 200, scaled
        assert scaled["kind"] == "Scale"
        assert scaled["spec"] == {"replicas": 3}
        stored = server.request("GET", f"{DEPLOYMENTS}/{name}")[1]
        assert stored["spec"]["replicas"] == 3  # type: ignore[index]
