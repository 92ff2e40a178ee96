"""The ValidatingAdmissionPolicy plugin's evaluation (k8s.io/apiserver
``pkg/admission/plugin/policy/validating``): the
denial's Status, messages and their fallbacks, reasons and codes, the validation actions,
failurePolicy against compile and runtime errors, matchConditions, variables, audit
annotations and the CEL variables a policy sees."""

from __future__ import annotations

import json
from typing import Any

import pytest
from policy_helpers import Fixture, binding, deployment, policy

from kubelite.api.admission.policy.validating import reason_code
from kubelite.api.auth.authorizer import Decision
from kubelite.api.catalogue import Catalogue, load_builtin_catalogue
from kubelite.api.errors import APIError, status_body
from kubelite.api.machinery.admission import DELETE, UPDATE
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User
from kubelite.storage import Store

Obj = dict[str, Any]
PREFIX = "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: "


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


@pytest.fixture
def vap(store: Store, catalogue: Catalogue) -> Fixture:
    return Fixture(store, catalogue)


async def denial(vap: Fixture, obj: Obj | None = None, **write: Any) -> APIError:
    with pytest.raises(APIError) as refused:
        await vap.plugin.validate(vap.write(obj if obj is not None else deployment(), **write))
    return refused.value


async def denied_message(vap: Fixture, *validations: Obj, **spec: Any) -> str:
    vap.add(policy("p", *validations, **spec), binding("b", "p"))
    error = await denial(vap, deployment(replicas=9))
    assert error.message.startswith('deployments.apps "nginx" is forbidden: ' + PREFIX)
    return error.message.removeprefix('deployments.apps "nginx" is forbidden: ' + PREFIX)


async def test_the_denial_status_is_kubes(vap: Fixture) -> None:
    vap.add(policy("demo", {"expression": "object.spec.replicas <= 5"}), binding("demo-b", "demo"))
    await vap.plugin.validate(vap.write(deployment(replicas=5)))
    error = await denial(vap, deployment(replicas=6))
    text = (
        "ValidatingAdmissionPolicy 'demo' with binding 'demo-b' denied request: "
        "failed expression: object.spec.replicas <= 5"
    )
    assert status_body(error) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'deployments.apps "nginx" is forbidden: {text}',
        "reason": "Invalid",
        "details": {
            "name": "nginx",
            "group": "apps",
            "kind": "deployments",
            "causes": [{"message": text}],
        },
        "code": 422,
    }


@pytest.mark.parametrize(
    ("reason", "code"),
    [("Forbidden", 403), ("Unauthorized", 401), ("RequestEntityTooLarge", 413), ("Invalid", 422)],
)
async def test_reasons_and_codes(vap: Fixture, reason: str, code: int) -> None:
    vap.add(policy("p", {"expression": "false", "reason": reason}), binding("b", "p"))
    error = await denial(vap)
    assert (error.reason, error.code) == (reason, code)
    assert reason_code("Conflict") == 422


async def test_messages_and_their_fallbacks(vap: Fixture) -> None:
    check = "object.spec.replicas < 3"
    assert await denied_message(vap, {"expression": f"  {check} "}) == f"failed expression: {check}"
    assert await denied_message(vap, {"expression": check, "message": " too many "}) == "too many"
    shown = "'replicas: ' + string(object.spec.replicas)"
    given = {"expression": check, "message": "m", "messageExpression": shown}
    assert await denied_message(vap, given) == "replicas: 9"
    for fallback in ("object.nope", "'  '", "'a\\nb'", "'x'.repeat(6000)"):
        given = {"expression": check, "message": "m", "messageExpression": fallback}
        assert await denied_message(vap, given) == "m", fallback
    # a messageExpression of another type does not compile: the message stands
    given = {"expression": check, "message": "m", "messageExpression": "1"}
    assert await denied_message(vap, given) == "m"


async def test_compile_and_type_errors_follow_the_failure_policy(vap: Fixture) -> None:
    message = await denied_message(vap, {"expression": "object.spec.replicas < nope"})
    assert message == (
        "compilation error: compilation failed: ERROR: <input>:1:24: undeclared reference to "
        "'nope' (in container '')\n | object.spec.replicas < nope\n | .......................^"
    )
    message = await denied_message(vap, {"expression": "size(object.spec)"})
    assert message == "compilation error: must evaluate to bool but got int"
    message = await denied_message(vap, {"expression": "params.x"})
    assert message.startswith("compilation error: compilation failed: ERROR: <input>:1:1: ")
    vap.add(policy("p", {"expression": "object.spec.replicas < nope"}, failurePolicy="Ignore"))
    await vap.plugin.validate(vap.write(deployment()))


async def test_runtime_errors_follow_the_failure_policy(vap: Fixture) -> None:
    message = await denied_message(vap, {"expression": "object.spec.paused == true"})
    assert (
        message == "expression 'object.spec.paused == true' resulted in error: no such key: paused"
    )
    vap.add(policy("p", {"expression": "object.spec.paused"}, failurePolicy="Ignore"))
    await vap.plugin.validate(vap.write(deployment()))
    # a later validation still denies under Ignore
    vap.add(
        policy(
            "p",
            {"expression": "object.spec.paused"},
            {"expression": "false", "message": "no"},
            failurePolicy="Ignore",
        )
    )
    assert (await denial(vap)).message.endswith(PREFIX + "no")


async def test_validation_actions(vap: Fixture) -> None:
    vap.add(
        policy("p", {"expression": "true"}, {"expression": "object.spec.replicas < 3"}),
        binding("b", "p", "Warn", "Audit"),
    )
    write = vap.write(deployment(replicas=4))
    await vap.plugin.validate(write)
    assert write.warnings is not None
    assert write.warnings.texts == [
        "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': "
        "failed expression: object.spec.replicas < 3"
    ]
    assert write.audit_annotations is not None
    failures = write.audit_annotations["validation.policy.admission.k8s.io/validation_failure"]
    assert json.loads(failures) == [
        {
            "message": "failed expression: object.spec.replicas < 3",
            "policy": "p",
            "binding": "b",
            "expressionIndex": 1,
            "validationActions": ["Warn", "Audit"],
        }
    ]
    assert "\\u003c" in failures  # Go's json escapes HTML characters
    # Deny and Audit: the denial, and the annotation
    vap.add(binding("b", "p", "Deny", "Audit"))
    write = vap.write(deployment(replicas=4))
    with pytest.raises(APIError):
        await vap.plugin.validate(write)
    assert write.audit_annotations
    assert write.warnings is not None
    assert not write.warnings.texts


async def test_the_first_denial_is_returned(vap: Fixture) -> None:
    vap.add(
        policy("a", {"expression": "false", "message": "from a"}),
        policy("z", {"expression": "false", "message": "from z", "reason": "Forbidden"}),
        binding("b2", "z"),
        binding("b1", "a"),
        binding("b0", "a", "Warn"),
    )
    write = vap.write(deployment())
    with pytest.raises(APIError) as refused:
        await vap.plugin.validate(write)
    assert refused.value.message.endswith(
        "ValidatingAdmissionPolicy 'a' with binding 'b1' denied request: from a"
    )
    assert refused.value.code == 422
    assert write.warnings is not None
    assert len(write.warnings.texts) == 1


async def test_bindings_and_policies_without_the_other_do_nothing(vap: Fixture) -> None:
    vap.add(policy("lonely", {"expression": "false"}), binding("orphan", "missing"))
    await vap.plugin.validate(vap.write(deployment()))


async def test_match_conditions(vap: Fixture) -> None:
    conditions = [
        {"name": "big", "expression": "object.spec.replicas > 3"},
        {"name": "labelled", "expression": "object.metadata.labels.tier == 'web'"},
    ]
    vap.add(policy("p", {"expression": "false"}, matchConditions=conditions), binding("b", "p"))
    await vap.plugin.validate(vap.write(deployment(replicas=1, tier="web")))
    await vap.plugin.validate(vap.write(deployment(replicas=9, tier="db")))
    await denial(vap, deployment(replicas=9, tier="web"))
    # an error with another condition false: skipped; an error alone: per failurePolicy
    await vap.plugin.validate(vap.write(deployment(replicas=1)))
    error = await denial(vap, deployment(replicas=9))
    assert error.message.endswith(
        PREFIX + "expression 'object.metadata.labels.tier == 'web'' resulted in error: "
        "no such key: tier"
    )
    vap.add(
        policy("p", {"expression": "false"}, matchConditions=conditions, failurePolicy="Ignore")
    )
    await vap.plugin.validate(vap.write(deployment(replicas=9)))


async def test_variables_are_lazy_and_composed(vap: Fixture) -> None:
    variables = [
        {"name": "replicas", "expression": "object.spec.replicas"},
        {"name": "big", "expression": "variables.replicas > 3"},
        {"name": "broken", "expression": "object.spec.nope"},
    ]
    validations = [
        {"expression": "!variables.big || false && variables.broken"},
        {"expression": "true", "messageExpression": "string(variables.replicas)"},
    ]
    vap.add(policy("p", *validations, variables=variables), binding("b", "p"))
    await vap.plugin.validate(vap.write(deployment(replicas=2)))
    error = await denial(vap, deployment(replicas=5))
    assert error.message.endswith("failed expression: !variables.big || false && variables.broken")
    vap.add(policy("p", {"expression": "variables.broken == 1"}, variables=variables))
    error = await denial(vap)
    assert error.message.endswith(
        "expression 'variables.broken == 1' resulted in error: composited variable \"broken\" "
        "fails to evaluate: no such key: nope"
    )
    vap.add(policy("p", {"expression": "variables.missing"}, variables=variables))
    assert "undefined field 'missing'" in (await denial(vap)).message


async def test_audit_annotations(vap: Fixture) -> None:
    annotations = [
        {"key": "replicas", "valueExpression": "string(object.spec.replicas)"},
        {"key": "empty", "valueExpression": "''"},
        {"key": "none", "valueExpression": "null"},
    ]
    vap.add(
        policy("p", auditAnnotations=annotations),
        binding("b1", "p"),
        binding("b2", "p"),
    )
    write = vap.write(deployment(replicas=4))
    await vap.plugin.validate(write)
    assert write.audit_annotations == {"p/replicas": "4"}  # one value for both bindings
    annotations = [{"key": "bad", "valueExpression": "object.spec.replicas"}]
    vap.add(policy("p", auditAnnotations=annotations))
    assert (await denial(vap)).message.endswith(
        "valueExpression 'object.spec.replicas' resulted in unsupported return type: int. "
        "Return type must be either string or null."
    )


async def test_request_namespace_and_old_object(vap: Fixture) -> None:
    await vap.namespace("default", env="prod")
    checks = [
        "request.operation == 'UPDATE' && request.name == 'nginx'",
        "request.namespace == 'default' && request.userInfo.username == 'alice'",
        "request.userInfo.groups == ['devs'] && !has(request.userInfo.uid)",
        "request.kind == {'group': 'apps', 'version': 'v1', 'kind': 'Deployment'}",
        "request.resource.resource == 'deployments' && request.requestResource == request.resource",
        "!has(request.subResource) && request.dryRun == false",
        "request.options.kind == 'UpdateOptions' && request.options.apiVersion == 'meta.k8s.io/v1'",
        "namespaceObject.metadata.labels.env == 'prod' && has(namespaceObject.metadata.uid)",
        "oldObject.spec.replicas == 1 && object.spec.replicas == 2",
    ]
    vap.add(policy("p", *({"expression": c} for c in checks)), binding("b", "p"))
    alice = User("alice", ("devs",))
    await vap.plugin.validate(
        vap.write(deployment(replicas=2), old=deployment(), operation=UPDATE, user=alice)
    )
    # DELETE: object is null, oldObject the stored one
    rule = {**policy("p")["spec"]["matchConstraints"]["resourceRules"][0], "operations": ["*"]}
    constraints = {**policy("p")["spec"]["matchConstraints"], "resourceRules": [rule]}
    on_delete = {"expression": "object == null && oldObject.metadata.name == 'nginx'"}
    vap.add(policy("p", on_delete, matchConstraints=constraints))
    await vap.plugin.validate(vap.write(None, old=deployment(), operation=DELETE))


class Fake:
    """An authorizer allowing ``get`` of anything and whatever a service account asks."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, RequestInfo]] = []

    def authorize(self, user: User, attrs: RequestInfo) -> Decision:
        self.asked.append((user.name, attrs))
        if user.name.startswith("system:serviceaccount:"):
            return Decision(True, "sa")
        return Decision(attrs.verb == "get", "fake says so")

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
        return [], []


async def test_the_authorizer_library(vap: Fixture) -> None:
    fake = Fake()
    vap.authorizer = fake
    checks = [
        "authorizer.group('apps').resource('deployments').namespace('default').check('get')"
        ".allowed()",
        "!authorizer.requestResource.check('delete').allowed()",
        "authorizer.requestResource.check('delete').reason() == 'fake says so'",
        "authorizer.serviceAccount('default', 'bot').group('').resource('pods').check('delete')"
        ".allowed()",
        "authorizer.path('/healthz').check('get').allowed()",
        "!authorizer.requestResource.check('delete').errored()",
    ]
    vap.add(policy("p", *({"expression": c} for c in checks)), binding("b", "p"))
    await vap.plugin.validate(vap.write(deployment(), user=User("bob", ())))
    asked = [
        (who, (r.verb, r.api_group, r.resource, r.namespace, r.name, r.path))
        for who, r in fake.asked
    ]
    assert asked == [
        ("bob", ("get", "apps", "deployments", "default", "", "")),
        ("bob", ("delete", "apps", "deployments", "default", "nginx", "")),  # asked once
        ("system:serviceaccount:default:bot", ("delete", "", "pods", "", "", "")),
        ("bob", ("get", "", "", "", "", "/healthz")),
    ]
    # messageExpression has no authorizer
    given = {
        "expression": "false",
        "messageExpression": "authorizer.path('/').check('get').reason()",
        "message": "m",
    }
    vap.add(policy("p", given))
    assert (await denial(vap)).message.endswith(PREFIX + "m")
