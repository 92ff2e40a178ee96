"""Writes of the admission policy kinds validated as kube validates them: required fields, the
binding's validation actions and paramRef, and every CEL expression compiled when the policy
is written (a policy that does not compile is refused with kube's text)."""

from __future__ import annotations

from typing import Any

import pytest
from policy_helpers import DEPLOYMENTS_RULE, GROUP, binding, policy

from kubelite.api.catalogue import Catalogue, load_builtin_catalogue
from kubelite.api.errors import APIError
from kubelite.api.kinds import new_registry
from kubelite.api.machinery.registry import Registry
from kubelite.storage import Store

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


@pytest.fixture
def registry(store: Store, catalogue: Catalogue) -> Registry:
    return new_registry(store, catalogue)


async def refused(registry: Registry, obj: Obj) -> list[str]:
    plural = obj["kind"].lower() + ("es" if obj["kind"].endswith("Policy") else "s")
    plural = plural.replace("policyes", "policies")
    info = registry.kinds.catalogue.require(GROUP, "v1", plural)  # type: ignore[attr-defined]
    with pytest.raises(APIError) as error:
        await registry.create(info, None, obj)
    assert error.value.code == 422, error.value.message
    causes = (error.value.details or {}).get("causes") or []
    return [f"{c['field']}: {c['message']}" for c in causes]


async def test_expressions_are_compiled_when_written(registry: Registry) -> None:
    written = policy(
        "p",
        {"expression": "object.spec.replicas <"},
        {"expression": "'text'"},
        {"expression": "true", "messageExpression": "authorizer.path('/').check('get').reason()"},
        {"expression": "true", "message": "a\nb", "reason": "Teapot"},
        variables=[{"name": "in", "expression": "variables.later"}],
        matchConditions=[{"name": "x", "expression": "1"}, {"name": "x", "expression": "true"}],
    )
    causes = await refused(registry, written)
    assert causes[0] == (
        'spec.matchConditions[0].expression: Invalid value: "1": must evaluate to bool but got int'
    )
    assert causes[1] == 'spec.matchConditions[1].name: Duplicate value: "x"'
    assert (
        causes[2]
        == 'spec.variables[0].name: Invalid value: "in": name is not a valid CEL identifier'
    )
    assert causes[3].startswith(
        'spec.variables[0].expression: Invalid value: "variables.later": compilation failed: '
        "ERROR: <input>:1:10: undefined field 'later'"
    )
    assert causes[4].startswith(
        'spec.validations[0].expression: Invalid value: "object.spec.replicas <": compilation '
        "failed: ERROR: <input>:1:"
    )
    assert causes[5] == (
        "spec.validations[1].expression: Invalid value: \"'text'\": must evaluate to bool but "
        "got string"
    )
    assert causes[6].startswith(
        "spec.validations[2].messageExpression: Invalid value: \"authorizer.path('/').check("
        "'get').reason()\": compilation failed: ERROR: <input>:1:1: undeclared reference to "
        "'authorizer'"
    )
    assert causes[7:] == [
        'spec.validations[3].message: Invalid value: "a\\nb": message must not contain line breaks',
        'spec.validations[3].reason: Unsupported value: "Teapot": supported values: '
        '"Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"',
    ]
    assert await refused(registry, policy("empty")) == [
        "spec.validations: Required value: validations or auditAnnotations must contain at "
        "least one item",
        "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at "
        "least one item",
    ]


async def test_bindings(registry: Registry) -> None:
    both = binding("b", "p", "Deny", "Warn", "Deny", "Shout")
    assert await refused(registry, both) == [
        'spec.validationActions[2]: Duplicate value: "Deny"',
        'spec.validationActions[3]: Unsupported value: "Shout": supported values: "Audit", '
        '"Deny", "Warn"',
        'spec.validationActions: Invalid value: ["Deny","Warn","Deny","Shout"]: must not '
        "contain both Deny and Warn (repeating the same validation failure information in the "
        "API response and headers serves no purpose)",
    ]
    no_action = binding("b", "p", paramRef={"name": "x", "selector": {}})
    no_action["spec"]["validationActions"] = []
    assert await refused(registry, no_action) == [
        "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
        "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
        "spec.paramRef.parameterNotFoundAction: Required value",
        "spec.validationActions: Required value: at least one validation action is required",
    ]


async def test_mutating_policies(registry: Registry) -> None:
    rule = {**DEPLOYMENTS_RULE, "operations": ["CREATE", "DELETE"]}
    written = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "m"},
        "spec": {
            "matchConstraints": {"resourceRules": [rule]},
            "mutations": [
                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "'x'"}},
                {"patchType": "JSONPatch", "jsonPatch": {"expression": "[JSONPatch{op: x}]"}},
                {"patchType": "JSONPatch"},
                {"patchType": "Merge"},
            ],
        },
    }
    assert await refused(registry, written) == [
        'spec.matchConstraints.resourceRules.operations: Unsupported value: "DELETE": supported '
        'values: "*", "CREATE", "UPDATE"',
        "spec.mutations[0].applyConfiguration.expression: Invalid value: \"'x'\": must evaluate "
        "to Object but got string",
        'spec.mutations[1].jsonPatch.expression: Invalid value: "[JSONPatch{op: x}]": '
        "compilation failed: ERROR: <input>:1:16: undeclared reference to 'x' (in container "
        "'')\n | [JSONPatch{op: x}]\n | ...............^",
        "spec.mutations[2].jsonPatch: Required value: must be specified when patchType is "
        "JSONPatch",
        'spec.mutations[3].patchType: Unsupported value: "Merge": supported values: '
        '"ApplyConfiguration", "JSONPatch"',
        "spec.reinvocationPolicy: Required value",
    ]
