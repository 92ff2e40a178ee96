"""Review of the RBAC authorizer against kube-apiserver: the index and its decisions on odd stored
objects and repeated resolution errors, the texts RBAC writes (Go ``%q`` quoting), and
non-resource URL wildcards (plugin/pkg/auth/authorizer/rbac/rbac.go, pkg/registry/rbac/
validation/rule.go, pkg/apis/rbac/v1/evaluation_helpers.go, apiserver responsewriters)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubelite import cli
from kubelite.api.auth.rbac import forbidden, rule_allows
from kubelite.api.auth.rbacindex import PolicyFollower, PolicyIndex, RBACAuthorizer
from kubelite.api.catalogue import load_builtin_catalogue
from kubelite.api.controllers.rbacaggregation import aggregate_all
from kubelite.api.encoding.stored import storage_key
from kubelite.api.kinds import new_registry
from kubelite.api.kinds.authorization.reviews import access_status
from kubelite.api.kinds.rbac.bootstrap import reconcile_binding, reconcile_role
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User
from kubelite.storage import Store

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"
BOB = User("bob", ("devs", "system:authenticated"))
LIST_CMS = RequestInfo("/api/v1/namespaces/ns1/configmaps", "list", True, "api", "", "v1", "ns1",
                       "configmaps")  # fmt: skip


def crb(name: str, role: str, subjects: Any, kind: str = "ClusterRole", ref: Any = None) -> Obj:
    return {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role} if ref is None else ref,
        "subjects": subjects,
    }


def rb(name: str, namespace: str, role: str, subjects: Any, kind: str = "ClusterRole") -> Obj:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role},
        "subjects": subjects,
    }


def authorizer(index: PolicyIndex) -> RBACAuthorizer:
    """An RBAC authorizer over ``index`` (no store: nothing is listed or watched)."""
    return RBACAuthorizer(index)


def test_a_binding_whose_role_ref_is_not_an_object_is_indexed_as_one_that_resolves_nothing() -> (
    None
):
    """A binding stored before validation with ``roleRef`` a string (or a list) must not stop
    the index: it grants nothing, and the other bindings still count."""
    index = PolicyIndex()
    index.replace(
        "clusterrolebindings",
        [
            crb("a-bad", "", [{"kind": "User", "name": "bob"}], ref="cluster-admin"),
            crb("b-bad", "", [{"kind": "User", "name": "bob"}], ref=["x"]),
            crb("c-good", "viewer", [{"kind": "User", "name": "bob"}]),
        ],
    )
    index.put("clusterroles", {"metadata": {"name": "viewer"},
                               "rules": [{"verbs": ["list"], "apiGroups": [""],
                                          "resources": ["configmaps"]}]})  # fmt: skip
    decision = authorizer(index).authorize(BOB, LIST_CMS)
    assert decision.allowed
    assert decision.reason == (
        'RBAC: allowed by ClusterRoleBinding "c-good" of ClusterRole "viewer" to User "bob"'
    )


async def test_the_authorizer_starts_over_a_store_holding_such_a_binding(store: Store) -> None:
    """The server's authorizer lists every binding at start: one stored with a string roleRef
    (written before kubelite validated RBAC kinds) must not keep the server from starting."""
    catalogue = load_builtin_catalogue()
    info = catalogue.require(GROUP, "v1", "clusterrolebindings")
    bad = crb("bad", "", [{"kind": "User", "name": "bob"}], ref="cluster-admin")
    await store.create(storage_key(info, None, "bad"), orjson.dumps(bad))
    index = PolicyIndex()
    follower = PolicyFollower(new_registry(store, catalogue), catalogue, index)
    await follower.start()
    try:
        assert not RBACAuthorizer(index).authorize(BOB, LIST_CMS).allowed
        assert index.holds("clusterrolebindings", "", "bad")
    finally:
        await follower.close()


def test_a_role_ref_kind_or_name_that_is_null_reads_as_empty() -> None:
    index = PolicyIndex()
    index.put("clusterrolebindings", crb("b", "", [{"kind": "User", "name": "bob"}],
                                         ref={"kind": None, "name": None}))  # fmt: skip
    decision = authorizer(index).authorize(BOB, LIST_CMS)
    assert decision.reason == 'RBAC: unsupported role reference kind: ""'


def test_a_cluster_role_binding_to_a_role_finds_no_role() -> None:
    """``GetRoleReferenceRules`` looks a Role up in the binding's namespace, "" for a cluster
    role binding: not found (not an unsupported kind)."""
    index = PolicyIndex()
    index.put("clusterrolebindings", crb("b", "r", [{"kind": "User", "name": "bob"}], "Role"))
    decision = authorizer(index).authorize(BOB, LIST_CMS)
    assert decision.reason == f'RBAC: role.{GROUP} "r" not found'


def test_the_bootstrap_recreates_a_stock_binding_whose_role_ref_is_not_an_object() -> None:
    expected = crb("cluster-admin", "cluster-admin", [{"kind": "Group", "name": "system:masters"}])
    stored = crb("cluster-admin", "", [], ref="cluster-admin")
    assert reconcile_binding(stored, expected).operation == "recreate"


def test_the_same_resolution_error_twice_is_written_once() -> None:
    """apimachinery's aggregate drops repeated messages: two bindings of one missing role give
    one error, not a bracketed pair."""
    index = PolicyIndex()
    index.put("clusterrolebindings", crb("a", "missing", [{"kind": "User", "name": "bob"}]))
    index.put("rolebindings", rb("b", "ns1", "missing", [{"kind": "Group", "name": "devs"}]))
    decision = authorizer(index).authorize(BOB, LIST_CMS)
    assert decision.reason == f'RBAC: clusterrole.{GROUP} "missing" not found'
    index.put("rolebindings", rb("c", "ns1", "gone", [{"kind": "User", "name": "bob"}], "Role"))
    decision = authorizer(index).authorize(BOB, LIST_CMS)
    assert decision.reason == (
        f'RBAC: [clusterrole.{GROUP} "missing" not found, role.{GROUP} "gone" not found]'
    )


def test_rbac_resolution_errors_are_a_reason_not_an_evaluation_error() -> None:
    """kube's RBAC authorizer returns NoOpinion, the reason ``RBAC: ...`` and a nil error: a
    SubjectAccessReview's status has no evaluationError."""
    index = PolicyIndex()
    index.put("clusterrolebindings", crb("a", "missing", [{"kind": "User", "name": "bob"}]))
    decision = authorizer(index).authorize(BOB, LIST_CMS)
    assert access_status(decision) == {
        "allowed": False,
        "reason": f'RBAC: clusterrole.{GROUP} "missing" not found',
    }


def test_names_in_texts_are_go_quoted() -> None:
    """``User %q`` in the 403 text and ``%s %q`` in the allow reason: a quote in a name is
    escaped."""
    odd = User('a"b\\c', ("system:authenticated",))
    refused = forbidden(odd, LIST_CMS)
    assert refused.message == (
        'configmaps is forbidden: User "a\\"b\\\\c" cannot list resource "configmaps" in API '
        'group "" in the namespace "ns1"'
    )
    path = forbidden(odd, RequestInfo("/foo", "get"))
    assert path.message == 'forbidden: User "a\\"b\\\\c" cannot get path "/foo"'
    index = PolicyIndex()
    index.put("clusterrolebindings", crb('b"1', "viewer", [{"kind": "User", "name": 'a"b\\c'}]))
    index.put("clusterroles", {"metadata": {"name": "viewer"},
                               "rules": [{"verbs": ["*"], "apiGroups": ["*"],
                                          "resources": ["*"]}]})  # fmt: skip
    decision = authorizer(index).authorize(odd, LIST_CMS)
    assert decision.reason == (
        'RBAC: allowed by ClusterRoleBinding "b\\"1" of ClusterRole "viewer" to User "a\\"b\\\\c"'
    )


def test_a_non_resource_url_ending_in_several_stars_is_a_prefix() -> None:
    """``NonResourceURLMatches`` trims every trailing ``*`` (strings.TrimRight)."""
    rule = {"verbs": ["get"], "nonResourceURLs": ["/logs**"]}
    assert rule_allows(RequestInfo("/logs/kube", "get"), rule)
    assert rule_allows(RequestInfo("/logs", "get"), rule)
    assert not rule_allows(RequestInfo("/log", "get"), rule)


def test_aggregation_passes_over_a_cluster_role_whose_labels_are_of_another_shape() -> None:
    """A ClusterRole stored before validation with ``labels`` a list matches no selector (as
    in a list's label selector) instead of failing every aggregation pass."""
    pods = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}
    roles = [
        {"metadata": {"name": "a", "labels": ["x"]}, "rules": [pods]},
        {"metadata": {"name": "agg"},
         "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}},
        {"metadata": {"name": "b", "labels": {"x": "y"}}, "rules": [pods]},
    ]  # fmt: skip
    assert aggregate_all(roles) == {"agg": [pods]}


def test_the_bootstrap_reconciles_a_stock_role_whose_labels_are_of_another_shape() -> None:
    expected = {"metadata": {"name": "view", "labels": {"kubernetes.io/bootstrapping": "x"},
                             "annotations": {}}, "rules": []}  # fmt: skip
    stored = {"metadata": {"name": "view", "labels": ["a"], "annotations": "b"}, "rules": []}
    result = reconcile_role(stored, expected)
    assert result.operation == "update"
    assert result.obj["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "x"}


@pytest.mark.parametrize("expiration", ["0", "-5", "500ms", "nan", "inf", "1e30"])
def test_kubeconfig_refuses_a_validity_no_token_can_have(
    expiration: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kubelite kubeconfig --expiration``: a usage error, not a kubeconfig whose token has
    already expired nor a traceback."""
    with pytest.raises(SystemExit) as exited:
        cli.main(["kubeconfig", "--user", "u", "--data-dir", "/nonexistent",
                  "--expiration", expiration])  # fmt: skip
    assert exited.value.code == 2
    assert "argument --expiration: invalid validity" in capsys.readouterr().err


def test_kubeconfig_refuses_an_empty_user_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["kubeconfig", "--user", "", "--data-dir", "/nonexistent"])
    assert exited.value.code == 2
    assert "argument --user: a user name may not be empty" in capsys.readouterr().err
