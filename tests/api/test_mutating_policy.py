"""The MutatingAdmissionPolicy plugin through the admission chain of a registry (k8s.io/apiserver
``pkg/admission/plugin/policy/mutating``): ApplyConfiguration merged by server-side apply's rules
and JSONPatch (cases from kube's patch/smd_test.go and json_patch_test.go), the refusal's Status,
failurePolicy, match conditions, params, and reinvocation."""

from __future__ import annotations

from typing import Any

import pytest
from policy_helpers import DEPLOYMENTS_RULE, GROUP, deployment, match

from kubelite.api.admission.policy import PolicySet
from kubelite.api.admission.policy.mutating import MutatingPolicyAdmission
from kubelite.api.admission.policy.mutations import compile_mutating_policy
from kubelite.api.admission.policy.source import NamespaceMirror
from kubelite.api.catalogue import Catalogue, load_builtin_catalogue
from kubelite.api.errors import APIError, status_body
from kubelite.api.kinds import new_registry
from kubelite.api.kinds.admissionregistration.defaults import default_mutating_admission_policy
from kubelite.api.machinery.registry import Registry
from kubelite.storage import Store

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


class Fixture:
    def __init__(self, store: Store, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.registry: Registry = new_registry(store, catalogue)
        self.policies: PolicySet[Any] = PolicySet(compile_mutating_policy)
        namespaces = NamespaceMirror(self.registry, catalogue.require("", "v1", "namespaces"))
        self.plugin = MutatingPolicyAdmission(
            self.registry, catalogue, self.policies, lambda: None, namespaces.get
        )
        self.registry.admission.mutating.append(self.plugin)
        self.deployments = catalogue.require("apps", "v1", "deployments")

    def add(self, name: str, *mutations: Obj, binding: Obj | None = None, **spec: Any) -> None:
        body: Obj = {"matchConstraints": match(DEPLOYMENTS_RULE), "mutations": list(mutations)}
        policy = {"kind": "MutatingAdmissionPolicy", "metadata": {"name": name}, "spec": body}
        body.update(spec)
        default_mutating_admission_policy(policy)
        self.policies.put_policy(policy)
        self.policies.put_binding(
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "MutatingAdmissionPolicyBinding",
                "metadata": {"name": f"{name}-binding"},
                "spec": {"policyName": name, **(binding or {})},
            }
        )

    async def create(self, obj: Obj) -> Obj:
        return await self.registry.create(self.deployments, "default", obj)

    async def refused(self, obj: Obj) -> APIError:
        with pytest.raises(APIError) as refused:
            await self.create(obj)
        return refused.value


def apply(expression: str) -> Obj:
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}


def patch(expression: str) -> Obj:
    return {"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}


@pytest.fixture
async def map_(store: Store, catalogue: Catalogue) -> Fixture:
    fixture = Fixture(store, catalogue)
    namespaces = catalogue.require("", "v1", "namespaces")
    await fixture.registry.create(namespaces, None, {"metadata": {"name": "default"}})
    return fixture


VOLUME = """Object{spec: Object.spec{template: Object.spec.template{
    spec: Object.spec.template.spec{volumes: [Object.spec.template.spec.volumes{
        name: "y", hostPath: Object.spec.template.spec.volumes.hostPath{path: "a"}}]}}}}"""


async def test_apply_configuration_merges_by_the_schema(map_: Fixture) -> None:
    map_.add("volumes", apply(VOLUME))
    map_.add(
        "replicas",
        apply(
            "Object{spec: Object.spec{replicas: object.spec.replicas % 2 == 0 ? "
            "object.spec.replicas + 1 : object.spec.replicas}}"
        ),
    )
    obj = deployment(replicas=2)
    obj["spec"]["template"]["spec"]["volumes"] = [{"name": "x", "emptyDir": {}}]
    made = await map_.create(obj)
    assert made["spec"]["replicas"] == 3
    volumes = made["spec"]["template"]["spec"]["volumes"]
    assert [v["name"] for v in volumes] == ["x", "y"]  # a listType=map: merged by name
    assert volumes[1]["hostPath"] == {"path": "a", "type": ""}  # and defaulted


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        (
            "Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {'l': 'v'}}}}",
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, "
            "maps or structs: .spec.selector",
        ),
        (
            "Object{spec: Object.specx{replicas: 1}}",
            'type mismatch: unexpected type name "Object.specx", expected "Object.spec", which '
            "matches field name path from root Object type",
        ),
        (
            "Object{spec: Object.spec{replicasx: 1}}",
            "error applying patch: failed to convert patch object to typed object: "
            ".spec.replicasx: field not declared in schema",
        ),
        ('"I\'m a teapot!"', "must evaluate to Object but got string"),
        ("Object.spec.metadata{}", "must evaluate to Object but got Object.spec.metadata"),
        ("{'spec': {}}", "unsupported return type from ApplyConfiguration expression: map"),
    ],
)
async def test_apply_configuration_errors(map_: Fixture, expression: str, error: str) -> None:
    map_.add("p", apply(expression))
    refused = await map_.refused(deployment())
    text = f"policy 'p' with binding 'p-binding' denied request: {error}"
    assert status_body(refused) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": text,
        "reason": "Invalid",
        "details": {
            "name": "nginx",
            "group": "apps",
            "kind": "deployments",
            "causes": [{"message": text}],
        },
        "code": 403,
    }


async def test_json_patch(map_: Fixture) -> None:
    map_.add(
        "labels",
        patch(
            "[JSONPatch{op: 'test', path: '/metadata/labels/tier', value: 'web'}, "
            "JSONPatch{op: 'add', path: '/metadata/labels/never', value: 'x'}]"
        ),
        patch(
            "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}, "
            "JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey('k8s.io/x'),"
            " value: JSONPatch{op: 'opValue'}.op + string(has(JSONPatch{}.path))}]"
        ),
        patch(
            "[JSONPatch{op: 'add', path: '/spec/template/spec/containers/-', value: "
            "Object.spec.template.spec.containers{name: 'sidecar', image: 'busybox'}}]"
        ),
    )
    made = await map_.create(deployment(tier="db"))
    assert made["metadata"]["labels"] == {"tier": "db"}
    assert made["metadata"]["annotations"] == {"k8s.io/x": "opValuefalse"}
    sidecar = made["spec"]["template"]["spec"]["containers"][1]
    assert (sidecar["name"], sidecar["imagePullPolicy"]) == ("sidecar", "Always")  # defaulted
    map_.add("bad", patch("[JSONPatch{op: 'replace', path: '/spec/nope/x', value: 1}]"))
    refused = await map_.refused(deployment("other"))
    assert refused.message.startswith("policy 'bad' with binding 'bad-binding' denied request: ")
    assert "JSON Patch: " in refused.message
    map_.add("bad", patch("[{'op': 'add'}]"))
    assert (await map_.refused(deployment("other"))).message.endswith(
        "denied request: type mismatch: JSONPatchType.expression should evaluate to array of "
        "JSONPatch: type conversion error from 'map' to 'JSONPatch'"
    )


async def test_a_json_patch_whose_copies_add_more_than_3_mib(map_: Fixture) -> None:
    """kube applies a policy's JSONPatch with json-patch's copy limit (JSONPatchMaxCopyBytes):
    copying the pod template into itself 14 times would make it 16,000 times larger."""
    copies = ["JSONPatch{op: 'copy', from: '/spec/template', path: '/spec/t'}"]
    copies += [f"JSONPatch{{op: 'copy', from: '/spec/t', path: '/spec/t/x{i}'}}" for i in range(14)]
    map_.add("bomb", patch("[" + ", ".join(copies) + "]"))
    refused = await map_.refused(deployment())
    assert refused.message.startswith(
        "policy 'bomb' with binding 'bomb-binding' denied request: JSON Patch: Unable to "
        "complete the copy, the accumulated size increase of copy is "
    ), refused.message
    assert refused.message.endswith(", exceeding the limit 3145728")


async def test_failure_policy_conditions_and_configuration_errors(map_: Fixture) -> None:
    broken = patch("[JSONPatch{op: 'add', path: '/metadata/labels/x', value: object.spec.nope}]")
    map_.add("p", broken, failurePolicy="Ignore")
    made = await map_.create(deployment("a"))
    assert "x" not in made["metadata"]["labels"]
    map_.add("p", broken)
    assert (await map_.refused(deployment("b"))).message == (
        "policy 'p' with binding 'p-binding' denied request: expression "
        "'[JSONPatch{op: 'add', path: '/metadata/labels/x', value: object.spec.nope}]' resulted "
        "in error: no such key: nope"
    )
    conditions = [{"name": "web", "expression": "object.metadata.labels.tier == 'web'"}]
    map_.add("p", broken, matchConditions=conditions)
    await map_.create(deployment("c", tier="db"))
    assert "no such key: nope" in (await map_.refused(deployment("d", tier="web"))).message
    unknown = {"apiVersion": "example.com/v1", "kind": "Limit"}
    map_.add("p", broken, paramKind=unknown)
    assert (await map_.refused(deployment("e"))).message == (
        'policy "p" denied request: failed to configure policy: failed to find resource '
        "referenced by paramKind: 'example.com/v1, Kind=Limit'"
    )


async def test_params_and_variables(map_: Fixture) -> None:
    configmaps = map_.catalogue.require("", "v1", "configmaps")
    body = {"metadata": {"name": "team"}, "data": {"owner": "alice"}}
    await map_.registry.create(configmaps, "default", body)
    label = apply("Object{metadata: Object.metadata{labels: {'owner': variables.owner}}}")
    map_.add(
        "owner",
        label,
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
        variables=[{"name": "owner", "expression": "params.data.owner"}],
        binding={"paramRef": {"name": "team", "parameterNotFoundAction": "Deny"}},
    )
    made = await map_.create(deployment())
    assert made["metadata"]["labels"] == {"owner": "alice"}


async def test_reinvocation(map_: Fixture) -> None:
    """``a`` copies label ``b`` into label ``a``; ``b`` (after it by name) sets label ``b``.
    With IfNeeded, ``a`` runs again after ``b`` changed the object."""
    copy = apply(
        "Object{metadata: Object.metadata{labels: {'a': "
        "has(object.metadata.labels.b) ? object.metadata.labels.b : 'none'}}}"
    )
    set_b = apply("Object{metadata: Object.metadata{labels: {'b': 'set'}}}")
    map_.add("a", copy, reinvocationPolicy="Never")
    map_.add("b", set_b, reinvocationPolicy="Never")
    made = await map_.create(deployment("never"))
    assert made["metadata"]["labels"] == {"a": "none", "b": "set"}
    map_.add("a", copy, reinvocationPolicy="IfNeeded")
    made = await map_.create(deployment("if-needed"))
    assert made["metadata"]["labels"] == {"a": "set", "b": "set"}


async def test_a_generated_name_is_no_name_yet(map_: Fixture) -> None:
    label = apply("Object{metadata: Object.metadata{labels: {'named': string(has(request.name))}}}")
    map_.add("p", label)
    obj = deployment()
    obj["metadata"] = {"generateName": "web-", "namespace": "default"}
    made = await map_.create(obj)
    assert made["metadata"]["name"].startswith("web-")
    assert made["metadata"]["labels"] == {"named": "false"}
    assert (await map_.create(deployment("named")))["metadata"]["labels"]["named"] == "true"
