"""Which writes a ValidatingAdmissionPolicy and its bindings concern (namespace and object
selectors, excluded rules, resource names, equivalent resources, the exempt kinds) and the
params a binding collects (by name, by selector, not found), with kube's configuration error
texts (k8s.io/apiserver ``pkg/admission/plugin/policy/matching``, ``generic``)."""

from __future__ import annotations

from typing import Any

import pytest
from policy_helpers import EVERYTHING_RULE, Fixture, binding, deployment, match, policy

from kubelite.api.catalogue import Catalogue, load_builtin_catalogue
from kubelite.api.errors import APIError
from kubelite.api.machinery.admission import UPDATE
from kubelite.storage import Store

Obj = dict[str, Any]
PARAMS = {"apiVersion": "v1", "kind": "ConfigMap"}
LIMIT = {"expression": "object.spec.replicas <= int(params.data.max)", "message": "too many"}


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


@pytest.fixture
async def vap(store: Store, catalogue: Catalogue) -> Fixture:
    fixture = Fixture(store, catalogue)
    await fixture.namespace("default", env="prod")
    await fixture.namespace("dev", env="dev")
    return fixture


async def admitted(vap: Fixture, obj: Obj | None = None, **write: Any) -> bool:
    try:
        await vap.plugin.validate(vap.write(obj if obj is not None else deployment(), **write))
    except APIError:
        return False
    return True


async def message(vap: Fixture, obj: Obj | None = None, **write: Any) -> str:
    with pytest.raises(APIError) as refused:
        await vap.plugin.validate(vap.write(obj if obj is not None else deployment(), **write))
    return refused.value.message


async def test_selectors_of_policy_and_binding(vap: Fixture) -> None:
    prod = {"matchLabels": {"env": "prod"}}
    vap.add(
        policy(
            "p",
            {"expression": "false"},
            matchConstraints=match(EVERYTHING_RULE, namespaceSelector=prod),
        ),
        binding("b", "p", matchResources=match(objectSelector={"matchLabels": {"tier": "web"}})),
    )
    assert not await admitted(vap, deployment(tier="web"))
    assert await admitted(vap, deployment(tier="db"))
    assert await admitted(vap, deployment(tier="web"), namespace="dev")
    # a namespace's own labels; a cluster-scoped kind is always selected
    namespace = {"metadata": {"name": "n", "labels": {"env": "prod", "tier": "web"}}}
    assert not await admitted(vap, namespace, target=("", "v1", "namespaces"), namespace=None)
    node = {"metadata": {"name": "n1", "labels": {"tier": "web"}}}
    assert not await admitted(vap, node, target=("", "v1", "nodes"), namespace=None)
    # the old object's labels count when the new one's do not match
    assert not await admitted(
        vap, deployment(tier="db"), old=deployment(tier="web"), operation=UPDATE
    )
    # a namespace that does not exist: kube's NotFound, as a configuration error
    assert (await message(vap, deployment(tier="web"), namespace="gone")).endswith(
        "ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: "
        'namespaces "gone" not found'
    )


async def test_excluded_rules_resource_names_and_operations(vap: Fixture) -> None:
    named = {**EVERYTHING_RULE, "resourceNames": ["special"]}
    constraints = match(
        EVERYTHING_RULE,
        excludeResourceRules=[{**EVERYTHING_RULE, "resources": ["configmaps"]}],
    )
    vap.add(policy("p", {"expression": "false"}, matchConstraints=constraints), binding("b", "p"))
    config_map = {"metadata": {"name": "c"}}
    assert await admitted(vap, config_map, target=("", "v1", "configmaps"))
    assert not await admitted(vap, config_map, target=("", "v1", "secrets"))
    vap.add(policy("p", {"expression": "false"}, matchConstraints=match(named)))
    assert await admitted(vap, config_map, target=("", "v1", "secrets"))
    special = {"metadata": {"name": "special"}}
    assert not await admitted(vap, special, target=("", "v1", "secrets"))
    # the binding's matchResources narrow the policy's further
    vap.add(
        policy("p", {"expression": "false"}),
        binding("b", "p", matchResources=match({**EVERYTHING_RULE, "operations": ["DELETE"]})),
    )
    assert await admitted(vap)


async def test_the_admission_configuration_kinds_are_exempt(vap: Fixture) -> None:
    vap.add(
        policy("p", {"expression": "false"}, matchConstraints=match(EVERYTHING_RULE)),
        binding("b", "p"),
    )
    for plural in ("validatingadmissionpolicies", "validatingwebhookconfigurations"):
        target = ("admissionregistration.k8s.io", "v1", plural)
        assert await admitted(vap, {"metadata": {"name": "x"}}, target=target, namespace=None)


async def test_equivalent_versions_see_the_object_converted(vap: Fixture) -> None:
    v1_rule = {**EVERYTHING_RULE, "apiGroups": ["autoscaling"], "apiVersions": ["v1"]}
    check = {
        "expression": "object.apiVersion == 'autoscaling/v1' && "
        "object.spec.targetCPUUtilizationPercentage == 50 && "
        "request.kind.version == 'v1' && request.requestKind.version == 'v2' && "
        "request.resource.version == 'v1' && request.requestResource.version == 'v2'",
    }
    vap.add(policy("p", check, matchConstraints=match(v1_rule)), binding("b", "p"))
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h", "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "minReplicas": 1,
            "maxReplicas": 3,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 50},
                    },
                }
            ],
        },
    }
    target = ("autoscaling", "v2", "horizontalpodautoscalers")
    assert await admitted(vap, hpa, target=target)
    hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] = 70
    assert not await admitted(vap, hpa, target=target)
    vap.add(policy("p", check, matchConstraints=match(v1_rule, matchPolicy="Exact")))
    assert await admitted(vap, hpa, target=target)


async def config_map(vap: Fixture, name: str, namespace: str, **fields: Any) -> None:
    await vap.registry.create(
        vap.info("", "v1", "configmaps"), namespace, {"metadata": {"name": name}, **fields}
    )


async def test_params_by_name_and_selector(vap: Fixture) -> None:
    await config_map(vap, "limits", "default", data={"max": "3"})
    await config_map(
        vap, "low", "dev", data={"max": "2"}, metadata={"name": "low", "labels": {"kind": "limit"}}
    )
    await config_map(
        vap,
        "high",
        "dev",
        data={"max": "4"},
        metadata={"name": "high", "labels": {"kind": "limit"}},
    )
    by_name = {"name": "limits", "parameterNotFoundAction": "Deny"}
    vap.add(policy("p", LIMIT, paramKind=PARAMS), binding("b", "p", paramRef=by_name))
    assert await admitted(vap, deployment(replicas=3))
    assert not await admitted(vap, deployment(replicas=4))
    # each selected param is one evaluation: the strictest decides
    by_label = {
        "selector": {"matchLabels": {"kind": "limit"}},
        "namespace": "dev",
        "parameterNotFoundAction": "Allow",
    }
    vap.add(binding("b", "p", paramRef=by_label))
    assert await admitted(vap, deployment(replicas=2))
    assert not await admitted(vap, deployment(replicas=3))
    # without a paramRef: params is null
    vap.add(policy("p", {"expression": "params == null"}, paramKind=PARAMS), binding("b", "p"))
    assert await admitted(vap)


async def test_params_not_found_and_configuration_errors(vap: Fixture) -> None:
    allow = {"name": "absent", "parameterNotFoundAction": "Allow"}
    vap.add(
        policy("p", {"expression": "false"}, paramKind=PARAMS), binding("b", "p", paramRef=allow)
    )
    assert await admitted(vap)
    deny = {**allow, "parameterNotFoundAction": "Deny"}
    vap.add(binding("b", "p", paramRef=deny))
    prefix = (
        "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed to configure "
        "binding: "
    )
    assert (await message(vap)).endswith(
        prefix + "no params found for policy binding with `Deny` parameterNotFoundAction"
    )
    node = {"metadata": {"name": "n1"}}
    vap.add(
        policy(
            "p", {"expression": "false"}, paramKind=PARAMS, matchConstraints=match(EVERYTHING_RULE)
        )
    )
    assert (await message(vap, node, target=("", "v1", "nodes"), namespace=None)).endswith(
        prefix + "cannot use namespaced paramRef in policy binding that matches cluster-scoped "
        "resources"
    )
    unknown = {"apiVersion": "example.com/v1", "kind": "Limit"}
    vap.add(policy("p", {"expression": "false"}, paramKind=unknown))
    assert (await message(vap)).endswith(
        "ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: failed to "
        "find resource referenced by paramKind: 'example.com/v1, Kind=Limit'"
    )
    vap.add(policy("p", {"expression": "false"}, paramKind=unknown, failurePolicy="Ignore"))
    assert await admitted(vap)
    cluster = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
    vap.add(policy("p", {"expression": "false"}, paramKind=cluster))
    vap.add(
        binding(
            "b",
            "p",
            paramRef={"name": "x", "namespace": "default", "parameterNotFoundAction": "Allow"},
        )
    )
    assert (await message(vap)).endswith(
        prefix + "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
    )
