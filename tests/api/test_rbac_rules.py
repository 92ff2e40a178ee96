"""RBAC's rule matching, subjects and 403 texts (kubernetes ``plugin/pkg/auth/authorizer/rbac``),
on request attributes as the request-info filter makes them."""

from __future__ import annotations

from typing import Any

import pytest

from kubelite.api.auth.rbac import forbidden, rule_allows, subject_matches
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User

BOB = User("bob", ("devs", "system:authenticated"))


def resource(verb: str, resource: str, **more: Any) -> RequestInfo:
    return RequestInfo("/x", verb, True, "api", resource=resource, **more)


def path(verb: str, url: str) -> RequestInfo:
    return RequestInfo(url, verb, False)


def rule(verbs: str, resources: str, groups: str = "", **more: Any) -> dict[str, Any]:
    """A rule from space-separated lists (``groups`` "" is the core group)."""
    return {"verbs": verbs.split(), "apiGroups": groups.split() or [""],
            "resources": resources.split(), **more}  # fmt: skip


def urls(verbs: str, paths: str) -> dict[str, Any]:
    return {"verbs": verbs.split(), "nonResourceURLs": paths.split()}


@pytest.mark.parametrize(
    ("given", "info", "allowed"),
    [
        (rule("get", "pods"), resource("get", "pods"), True),
        (rule("*", "*", "*"), resource("delete", "x"), True),
        (rule("Get", "pods"), resource("get", "pods"), False),
        (rule("get", "pods", "apps"), resource("get", "pods"), False),
        # subresources: exact, */sub; "pods" is not "pods/status", "pods/*" is no wildcard
        (rule("get", "pods"), resource("get", "pods", subresource="status"), False),
        (rule("get", "pods/status"), resource("get", "pods", subresource="status"), True),
        (rule("get", "*/status"), resource("get", "pods", subresource="status"), True),
        (rule("get", "pods/*"), resource("get", "pods", subresource="status"), False),
        # resourceNames: a request without a name never matches them
        (rule("get", "pods", resourceNames=["a"]), resource("get", "pods", name="a"), True),
        (rule("list", "pods", resourceNames=["a"]), resource("list", "pods"), False),
        # non-resource URLs: exact, *, prefix*; resource rules never match them
        (urls("get", "/healthz"), path("get", "/healthz"), True),
        (urls("get", "/healthz/*"), path("get", "/healthz/etcd"), True),
        (urls("get", "/healthz/*"), path("get", "/healthz"), False),
        (urls("get", "*"), path("get", "/anything"), True),
        (rule("get", "*", "*"), path("get", "/version"), False),
        (urls("get", "*"), resource("get", "pods"), False),
    ],
)
def test_rule_matching(given: dict[str, Any], info: RequestInfo, allowed: bool) -> None:
    assert rule_allows(info, given) is allowed


def test_subjects() -> None:
    sa = User("system:serviceaccount:ns1:builder", ())
    assert subject_matches({"kind": "User", "name": "bob"}, BOB, "")
    assert subject_matches({"kind": "Group", "name": "devs"}, BOB, "")
    assert not subject_matches({"kind": "Group", "name": "ops"}, BOB, "")
    assert subject_matches({"kind": "ServiceAccount", "name": "builder"}, sa, "ns1")
    assert subject_matches(
        {"kind": "ServiceAccount", "name": "builder", "namespace": "ns1"}, sa, ""
    )
    # a ClusterRoleBinding's account without a namespace matches nothing
    assert not subject_matches({"kind": "ServiceAccount", "name": "builder"}, sa, "")
    assert not subject_matches({"kind": "Robot", "name": "bob"}, BOB, "")


def test_forbidden_texts() -> None:
    listed = forbidden(BOB, resource("list", "deployments", api_group="apps", namespace="default"))
    assert (listed.code, listed.reason) == (403, "Forbidden")
    assert listed.message == (
        'deployments.apps is forbidden: User "bob" cannot list resource "deployments" in API '
        'group "apps" in the namespace "default"'
    )
    assert listed.details == {"group": "apps", "kind": "deployments"}
    named = forbidden(
        BOB, resource("get", "namespaces", name="kube-system", namespace="kube-system")
    )
    assert named.message == (
        'namespaces "kube-system" is forbidden: User "bob" cannot get resource "namespaces" in '
        'API group "" in the namespace "kube-system"'
    )
    assert named.details == {"name": "kube-system", "kind": "namespaces"}
    exec_ = forbidden(BOB, resource("create", "pods", name="p", namespace="d", subresource="exec"))
    assert exec_.message == (
        'pods "p" is forbidden: User "bob" cannot create resource "pods/exec" in API group "" '
        'in the namespace "d"'
    )
    nodes = forbidden(
        BOB,
        resource("list", "nodes"),
        'RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found',
    )
    assert nodes.message == (
        'nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the '
        'cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found'
    )
    url = forbidden(User("system:anonymous", ()), path("get", "/foo<&>"))
    assert url.message == 'forbidden: User "system:anonymous" cannot get path "/foo&lt;&amp;&gt;"'
    assert url.details == {}
