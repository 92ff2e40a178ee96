"""The rules webhooks and policies share (kubelite.api.admission.rules), case by case against kube's
``predicates/rules``, ``namespace`` and ``object`` matchers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kubelite.api.admission.rules import (
    exempt,
    labels_of,
    namespace_selected,
    object_selected,
    rule_matches,
    selector_matches,
)
from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.machinery.admission import CREATE, DELETE, UPDATE, Attributes
from kubelite.api.machinery.user import ADMIN

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


def info(catalogue: Catalogue, group: str, version: str, plural: str) -> ResourceInfo:
    return catalogue.require(group, version, plural)


def attrs(
    target: ResourceInfo,
    operation: str = CREATE,
    namespace: str | None = "default",
    *,
    subresource: str = "",
    name: str = "x",
    obj: Obj | None = None,
    old: Obj | None = None,
) -> Attributes:
    return Attributes(operation, target, namespace, name, obj, old, ADMIN, subresource)


def rule(**fields: Any) -> Obj:
    base: Obj = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}
    return {**base, **fields}


def test_operations_groups_and_versions(catalogue: Catalogue) -> None:
    deployments = info(catalogue, "apps", "v1", "deployments")
    write = attrs(deployments, UPDATE)
    assert rule_matches(rule(), write)
    assert rule_matches(rule(operations=["CREATE", "UPDATE"]), write)
    assert not rule_matches(rule(operations=["CREATE"]), write)
    assert not rule_matches(rule(operations=[]), write)
    assert rule_matches(rule(apiGroups=["apps"]), write)
    assert not rule_matches(rule(apiGroups=[""]), write)
    assert rule_matches(rule(apiVersions=["v1"]), write)
    assert not rule_matches(rule(apiVersions=["v1beta1"]), write)
    # the version a write is matched at may be another than the request's
    assert rule_matches(rule(apiVersions=["v1beta1"]), write, version="v1beta1")


@pytest.mark.parametrize(
    ("resources", "subresource", "expected"),
    [
        (["*"], "", True),
        (["*"], "status", False),
        (["*/*"], "", True),
        (["*/*"], "scale", True),
        (["deployments"], "", True),
        (["deployments"], "status", False),
        (["deployments/*"], "", True),
        (["deployments/*"], "scale", True),
        (["deployments/status"], "status", True),
        (["deployments/status"], "scale", False),
        (["*/status"], "status", True),
        (["pods"], "", False),
        (["pods", "deployments"], "", True),
        ([], "", False),
    ],
)
def test_resources_and_subresources(
    catalogue: Catalogue, resources: list[str], subresource: str, expected: bool
) -> None:
    write = attrs(info(catalogue, "apps", "v1", "deployments"), UPDATE, subresource=subresource)
    assert rule_matches(rule(resources=resources), write) is expected


def test_scope(catalogue: Catalogue) -> None:
    pods = attrs(info(catalogue, "", "v1", "pods"))
    nodes = attrs(info(catalogue, "", "v1", "nodes"), namespace=None)
    namespace = attrs(info(catalogue, "", "v1", "namespaces"), namespace=None)
    for scope, expected in [
        (None, (True, True, True)),
        ("*", (True, True, True)),
        ("Namespaced", (True, False, False)),
        ("Cluster", (False, True, True)),  # a Namespace itself is cluster-scoped
        ("Elsewhere", (False, False, False)),
    ]:
        given = rule() if scope is None else rule(scope=scope)
        assert tuple(rule_matches(given, a) for a in (pods, nodes, namespace)) == expected, scope
    # a namespace's own request carries its name as the namespace in kube: still cluster
    named = attrs(info(catalogue, "", "v1", "namespaces"), namespace="team")
    assert rule_matches(rule(scope="Cluster"), named)
    assert not rule_matches(rule(scope="Namespaced"), named)


def test_exempt_configuration_kinds(catalogue: Catalogue) -> None:
    group = "admissionregistration.k8s.io"
    for plural in (
        "validatingwebhookconfigurations",
        "mutatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
        "mutatingadmissionpolicies",
        "mutatingadmissionpolicybindings",
    ):
        assert exempt(attrs(info(catalogue, group, "v1", plural), namespace=None)), plural
    assert not exempt(attrs(info(catalogue, "", "v1", "configmaps")))


def test_selectors() -> None:
    labels = {"env": "prod", "tier": "web"}
    assert selector_matches(None, labels)
    assert selector_matches({}, labels)
    assert selector_matches({"matchLabels": {"env": "prod"}}, labels)
    assert not selector_matches({"matchLabels": {"env": "dev"}}, labels)
    expressions = [{"key": "tier", "operator": "In", "values": ["web", "api"]}]
    assert selector_matches({"matchExpressions": expressions}, labels)
    assert not selector_matches({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, {})
    assert selector_matches({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, {})
    # a selector that does not parse selects nothing
    assert not selector_matches({"matchExpressions": [{"key": "x", "operator": "Near"}]}, {})
    assert labels_of({"metadata": {"labels": {"a": "b"}}}) == {"a": "b"}
    assert labels_of(None) == {} == labels_of({"metadata": {}})


async def test_namespace_selector(catalogue: Catalogue) -> None:
    known = {"prod": {"env": "prod"}, "dev": {"env": "dev"}}
    asked: list[str] = []

    async def labels(name: str) -> Mapping[str, str] | None:
        asked.append(name)
        return known.get(name)

    selector = {"matchLabels": {"env": "prod"}}
    pods = info(catalogue, "", "v1", "pods")
    assert await namespace_selected(selector, attrs(pods, namespace="prod"), labels)
    assert not await namespace_selected(selector, attrs(pods, namespace="dev"), labels)
    assert not await namespace_selected(selector, attrs(pods, namespace="gone"), labels)
    assert asked == ["prod", "dev", "gone"]
    # an empty selector reads nothing
    assert await namespace_selected({}, attrs(pods, namespace="dev"), labels)
    assert asked == ["prod", "dev", "gone"]
    # cluster-scoped requests are always selected, Namespaces by their own labels
    nodes = info(catalogue, "", "v1", "nodes")
    assert await namespace_selected(selector, attrs(nodes, namespace=None), labels)
    namespaces = info(catalogue, "", "v1", "namespaces")
    own = {"metadata": {"name": "n", "labels": {"env": "prod"}}}
    assert await namespace_selected(selector, attrs(namespaces, namespace=None, obj=own), labels)
    deleted = attrs(namespaces, DELETE, namespace=None, old=own)
    assert await namespace_selected(selector, deleted, labels)
    other = {"metadata": {"name": "n", "labels": {"env": "dev"}}}
    assert not await namespace_selected(
        selector, attrs(namespaces, namespace=None, obj=other), labels
    )
    assert asked == ["prod", "dev", "gone"]


def test_object_selector_reads_the_new_object_then_the_old(catalogue: Catalogue) -> None:
    pods = info(catalogue, "", "v1", "pods")
    selector = {"matchLabels": {"app": "web"}}
    web = {"metadata": {"labels": {"app": "web"}}}
    api = {"metadata": {"labels": {"app": "api"}}}
    assert object_selected(selector, attrs(pods, obj=web))
    assert not object_selected(selector, attrs(pods, obj=api))
    assert object_selected(selector, attrs(pods, UPDATE, obj=api, old=web))
    assert object_selected(selector, attrs(pods, DELETE, old=web))
    assert not object_selected(selector, attrs(pods, DELETE, old=api))
    assert object_selected({}, attrs(pods, DELETE))
