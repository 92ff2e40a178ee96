"""CRD validation rules over HTTP: Kubernetes' CEL libraries at work, rules that do not compile
refused at CRD create/update with apiextensions' text, runtime errors as kube reports them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from harness import Server

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
THINGS = "/apis/example.net/v1/namespaces/{ns}/things"
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


def _go_rule(rule: str, message_expression: str) -> str:
    return (
        f'apiextensions.ValidationRule{{Rule:"{rule}", Message:"", '
        f'MessageExpression:"{message_expression}", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", '
        "OptionalOldSelf:(*bool)(nil)}"
    )


def test_message_expressions_are_compiled_at_crd_create(server: Server) -> None:
    rule = "self.name != ''"
    code, got = server.request("POST", CRDS, crd([{"rule": rule, "messageExpression": "nope"}]))
    assert code == 422, got
    assert isinstance(got, dict)
    assert got["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: {_go_rule(rule, 'nope')}: messageExpression compilation "
            "failed: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n"
            " | nope\n | ^",
            "field": f"{RULE_PATH}[0].messageExpression",
        }
    ]
    code, got = server.request("POST", CRDS, crd([{"rule": rule, "messageExpression": "1"}]))
    assert code == 422, got
    assert got["details"]["causes"] == [  # type: ignore[index]
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: {_go_rule(rule, '1')}: "
            "messageExpression must evaluate to a string",
            "field": f"{RULE_PATH}[0].messageExpression",
        }
    ]
    code, got = server.request("POST", CRDS, crd([{"rule": rule, "messageExpression": "  "}]))
    assert code == 422, got
    assert got["details"]["causes"] == [  # type: ignore[index]
        {
            "reason": "FieldValueRequired",
            "message": "Required value: messageExpression must be non-empty if specified",
            "field": f"{RULE_PATH}[0].messageExpression",
        }
    ]


def test_a_rule_of_another_type_than_bool_is_refused(server: Server) -> None:
    code, got = server.request("POST", CRDS, crd([{"rule": "self.items.size()"}]))
    assert code == 422, got
    assert isinstance(got, dict)
    assert got["details"]["causes"][0]["message"].endswith(
        "OptionalOldSelf:(*bool)(nil)}: cel expression must evaluate to a bool"
    )
    assert got["details"]["causes"][0]["field"] == f"{RULE_PATH}[0].rule"


def test_message_expressions_give_the_message_or_fall_back(server: Server) -> None:
    rules = [
        {"rule": "self.name == 'ok'", "messageExpression": "'name ' + self.name + ' is not ok'"},
        {"rule": "self.name == 'ok'", "messageExpression": "self.nosuch", "message": "fallback"},
        {"rule": "self.name == 'ok'", "messageExpression": "' '"},
        {"rule": "self.name == 'ok'", "messageExpression": "'two\\nlines'", "message": "m"},
        {"rule": "self.name == 'ok'", "messageExpression": "self.name",
         "reason": "FieldValueForbidden"},
    ]  # fmt: skip
    code, got = server.request("POST", CRDS, crd(rules))
    assert code == 201, got
    code, got = server.request("POST", THINGS, thing(name="bad"))
    assert code == 422, got
    assert isinstance(got, dict)
    assert [(c["reason"], c["message"]) for c in got["details"]["causes"]] == [
        ("FieldValueInvalid", 'Invalid value: "object": name bad is not ok'),
        ("FieldValueInvalid", 'Invalid value: "object": fallback'),
        ("FieldValueInvalid", "Invalid value: \"object\": failed rule: self.name == 'ok'"),
        ("FieldValueInvalid", 'Invalid value: "object": m'),
        ("FieldValueForbidden", "Forbidden: bad"),
    ]


def test_bind_and_two_variable_comprehensions_in_rules(server: Server) -> None:
    rules = [
        {"rule": "cel.bind(n, self.name, n.size() <= 3 && n != 'cel.bind(n, 1, n)')"},
        {"rule": "self.?items.orValue([]).all(i, v, i == 0 || v > self.items[i - 1])",
         "message": "items must increase"},
    ]  # fmt: skip
    code, got = server.request("POST", CRDS, crd(rules))
    assert code == 201, got
    code, got = server.request("POST", THINGS, thing(name="abc", items=[1, 2, 5]))
    assert code == 201, got
    bad = {**thing(name="abcd", items=[1, 3, 2]), "metadata": {"name": "u"}}
    code, got = server.request("POST", THINGS, bad)
    assert code == 422, got
    assert isinstance(got, dict)
    assert [c["message"] for c in got["details"]["causes"]] == [
        'Invalid value: "object": failed rule: cel.bind(n, self.name, n.size() <= 3 && '
        "n != 'cel.bind(n, 1, n)')",
        'Invalid value: "object": items must increase',
    ]


def test_a_rules_message_fields_are_checked_before_it_compiles(server: Server) -> None:
    rules = [
        {"rule": "self.name != ''", "message": "two\nlines"},
        {"rule": "self.name != ''\n&& true"},
        {"rule": "nosuch", "message": " "},
    ]
    code, got = server.request("POST", CRDS, crd(rules))
    assert code == 422, got
    assert isinstance(got, dict)
    assert [(c["field"], c["message"]) for c in got["details"]["causes"]] == [
        (f"{RULE_PATH}[0].message", 'Invalid value: "two\\nlines": must not contain line breaks'),
        (
            f"{RULE_PATH}[1].message",
            "Required value: message must be specified if rule contains line breaks",
        ),
        (f"{RULE_PATH}[2].message", 'Invalid value: " ": must be non-empty if specified'),
    ]
