"""A ValidatingAdmissionPolicy with a typo in a field name, on a real ``kubelite serve``: the
status controller comes to write kube's ``typeChecking.expressionWarnings`` for it, against a
built-in kind and a custom kind served from a CRD."""

from __future__ import annotations

import time
from typing import Any

from harness import Server

Obj = dict[str, Any]
POLICIES = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def vap(name: str, group: str, resource: str, expression: str) -> Obj:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE"],
                     "resources": [resource]}
                ]
            },
            "validations": [{"expression": expression}],
        },
    }  # fmt: skip


def observed_status(server: Server, name: str) -> Any:
    """The policy's status once the controller has observed its generation."""
    deadline = time.monotonic() + 20
    while True:
        code, got = server.request("GET", f"{POLICIES}/{name}")
        assert code == 200, got
        status: Any = got.get("status")
        generation = got["metadata"]["generation"]  # type: ignore[index]
        if isinstance(status, dict) and status.get("observedGeneration") == generation:
            return status
        assert time.monotonic() < deadline, got
        time.sleep(0.05)


def test_the_status_shows_kubes_warning_for_an_undefined_field(server: Server) -> None:
    body = vap("replicas", "apps", "deployments", "object.spec.replica <= 5")
    code, got = server.request("POST", POLICIES, body)
    assert code == 201, got
    assert observed_status(server, "replicas") == {
        "observedGeneration": 1,
        "typeChecking": {
            "expressionWarnings": [
                {
                    "fieldRef": "spec.validations[0].expression",
                    "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:12: "
                    "undefined field 'replica'\n"
                    " | object.spec.replica <= 5\n"
                    " | ...........^\n",
                }
            ]
        },
    }
    # the fix clears the warning
    code, current = server.request("GET", f"{POLICIES}/replicas")
    current["spec"]["validations"] = [{"expression": "object.spec.replicas <= 5"}]  # type: ignore[index]
    assert server.request("PUT", f"{POLICIES}/replicas", current)[0] == 200
    assert observed_status(server, "replicas") == {"observedGeneration": 2, "typeChecking": {}}


def test_a_custom_kind_is_checked_against_its_crd_schema(server: Server) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.org"},
        "spec": {
            "group": "example.org",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"size": {"type": "integer"}},
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    code, got = server.request("POST", CRDS, crd)
    assert code == 201, got
    deadline = time.monotonic() + 20
    while server.request("GET", "/apis/example.org/v1/namespaces/{ns}/gadgets")[0] != 200:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    body = vap("gadgets", "example.org", "gadgets", "object.spec.sise > 1")
    code, got = server.request("POST", POLICIES, body)
    assert code == 201, got
    assert observed_status(server, "gadgets")["typeChecking"] == {
        "expressionWarnings": [
            {
                "fieldRef": "spec.validations[0].expression",
                "warning": "example.org/v1, Kind=Gadget: ERROR: <input>:1:12: "
                "undefined field 'sise'\n"
                " | object.spec.sise > 1\n"
                " | ...........^\n",
            }
        ]
    }
