"""CRD validation rules over HTTP: Kubernetes' CEL libraries at work, rules that do not compile
refused at CRD create/update with apiextensions' text, runtime errors as kube reports them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from harness import Server

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
THINGS = "/apis/example.net/v1/namespaces/default/things"
RULE_PATH = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations"


def crd(rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.net"},
        "spec": {
            "group": "example.net",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
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
                                    "x-kubernetes-validations": rules,
                                    "properties": {
                                        "memory": {"type": "string"},
                                        "cidr": {"type": "string"},
                                        "name": {"type": "string"},
                                        "items": {"type": "array", "items": {"type": "integer"}},
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


RULES = [
    {
        "rule": "quantity(self.memory).isLessThan(quantity('1Gi'))",
        "message": "memory must be below 1Gi",
    },
    {"rule": "cidr(self.cidr).containsIP('10.0.0.1')", "message": "cidr must hold 10.0.0.1"},
    {"rule": "!format.dns1123Label().validate(self.name).hasValue()", "message": "bad name"},
    {"rule": "self.?items.orValue([]).isSorted()", "message": "items must be sorted"},
]


def thing(**spec: Any) -> dict[str, Any]:
    base = {"memory": "512Mi", "cidr": "10.0.0.0/8", "name": "ok"}
    return {"metadata": {"name": "t"}, "spec": {**base, **spec}}


@pytest.fixture
def things(server: Server) -> Server:
    code, got = server.request("POST", CRDS, crd(RULES))
    assert code == 201, got
    return server


def test_kubernetes_libraries_in_rules(things: Server) -> None:
    code, got = things.request("POST", THINGS, thing(memory="2Gi", cidr="192.168.0.0/16", name="A"))
    assert code == 422, got
    assert isinstance(got, dict)
    assert [c["message"] for c in got["details"]["causes"]] == [
        'Invalid value: "object": memory must be below 1Gi',
        'Invalid value: "object": cidr must hold 10.0.0.1',
        'Invalid value: "object": bad name',
    ]
    code, got = things.request("POST", THINGS, thing(items=[2, 1]))
    assert code == 422, got
    assert things.request("GET", THINGS)[1]["items"] == []  # type: ignore[index]
    code, got = things.request("POST", THINGS, thing(items=[1, 2]))
    assert code == 201, got


def test_runtime_errors_are_reported_as_kube_reports_them(things: Server) -> None:
    code, got = things.request("POST", THINGS, thing(memory="lots"))
    assert code == 422, got
    assert isinstance(got, dict)
    assert got["details"]["causes"][0] == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: "object": quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' evaluating rule: memory must be "
        "below 1Gi",
        "field": "spec",
    }


def test_rules_that_do_not_compile_are_refused_with_apiextensions_text(server: Server) -> None:
    body = crd([{"rule": "foo(self.name)"}])
    code, got = server.request("POST", CRDS, body)
    assert code == 422, got
    assert isinstance(got, dict)
    assert got["details"]["causes"][0] == {
        "reason": "FieldValueInvalid",
        "message": 'Invalid value: apiextensions.ValidationRule{Rule:"foo(self.name)", '
        'Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", '
        "OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:4: undeclared "
        "reference to 'foo' (in container '')\n | foo(self.name)\n | ...^",
        "field": f"{RULE_PATH}[0].rule",
    }
    code, got = server.request("POST", CRDS, crd([{"rule": " "}]))
    assert code == 422, got
    assert got["details"]["causes"][0]["message"] == "Required value: rule is not specified"  # type: ignore[index]
    # on update too
    code, created = server.request("POST", CRDS, crd(RULES))
    assert code == 201, created
    changed = copy.deepcopy(created)
    assert isinstance(changed, dict)
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "x-kubernetes-validations"
    ] = [{"rule": "self.name.nosuch()"}]
    code, got = server.request("PUT", CRDS + "/things.example.net", changed)
    assert code == 422, got
    assert "undeclared reference to 'nosuch'" in got["message"]  # type: ignore[index]


def test_regex_functions_run_on_re2(server: Server) -> None:
    """A pattern that backtracks exponentially in a Perl-style engine (Python's re would take
    hours on the first body) answers at once on RE2, as kube's library does, so no rule can
    stall the server."""
    rules = [{"rule": "self.name.find('^(a+)+$') == ''", "message": "no run of a"}]
    assert server.request("POST", CRDS, crd(rules))[0] == 201
    code, status = server.request("POST", THINGS, thing(name="a" * 40 + "b"))
    assert code == 201, status
    code, status = server.request("POST", THINGS, {**thing(name="aaaa"), "metadata": {"name": "u"}})
    assert code == 422, status
    assert status["message"].endswith("no run of a")
