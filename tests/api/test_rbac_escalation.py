"""Escalation prevention (kubernetes ``pkg/registry/rbac/escalation_check.go``): rule coverage and
its failure text as pure functions (:mod:`kubelite.api.auth.rbaccover`), and the RBAC kinds'
storages refusing a role or binding that grants what the writer does not hold, over a real SQLite
store, with a small authorizer over fixed rule lists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from rbac_helpers import RulesAuthorizer

from kubelite.api.auth.rbaccover import (
    aggregate,
    breakdown,
    compact,
    compact_string,
    covers,
    escalation,
)
from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.errors import APIError
from kubelite.api.kinds import BuiltinKinds
from kubelite.api.machinery.objectmeta import replacement
from kubelite.api.machinery.patching import Applied, apply_update, patch_update
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.rest import Context, Creater, Updater, WriteOptions
from kubelite.api.machinery.user import ADMIN, User
from kubelite.storage import Store

Obj = dict[str, Any]
RBAC = "rbac.authorization.k8s.io"
BOB = User("bob", ("devs", "system:authenticated"))


def rule(verbs: str, resources: str, groups: str = "", **more: Any) -> Obj:
    """A rule from space-separated lists (``groups`` "" is the core group)."""
    return {"verbs": verbs.split(), "apiGroups": groups.split() or [""],
            "resources": resources.split(), **more}  # fmt: skip


def urls(verbs: str, paths: str) -> Obj:
    return {"verbs": verbs.split(), "nonResourceURLs": paths.split()}


STAR = rule("*", "*", "*")
ALL_URLS = urls("*", "*")
HEAD = 'user "bob" (groups=["devs" "system:authenticated"]) is attempting to grant RBAC '
HEAD += "permissions not currently held:\n"


# -- coverage ------------------------------------------------------------------------------------


def test_a_rule_breaks_down_into_atoms_of_one_verb_and_one_name() -> None:
    atoms = breakdown(rule("get list", "pods", resourceNames=["a", "b"]))
    assert atoms == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["b"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"], "resourceNames": ["a"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"], "resourceNames": ["b"]},
    ]
    assert breakdown(urls("get post", "/a")) == [
        {"nonResourceURLs": ["/a"], "verbs": ["get"]},
        {"nonResourceURLs": ["/a"], "verbs": ["post"]},
    ]


@pytest.mark.parametrize(
    ("held", "wanted", "covered"),
    [
        ([STAR], [rule("delete", "anything", "apps")], True),
        ([rule("get list", "pods")], [rule("get", "pods")], True),
        ([rule("get", "pods")], [rule("get list", "pods")], False),
        ([rule("get", "pods", "apps")], [rule("get", "pods")], False),
        # subresources: exact, or */sub; "pods" does not cover "pods/status"
        ([rule("get", "pods")], [rule("get", "pods/status")], False),
        ([rule("get", "*/status")], [rule("get", "pods/status")], True),
        ([rule("get", "pods/status")], [rule("get", "pods/status")], True),
        # names: a held rule with names covers only those; an atom without names needs none
        ([rule("get", "pods", resourceNames=["a"])], [rule("get", "pods")], False),
        (
            [rule("get", "pods", resourceNames=["a"])],
            [rule("get", "pods", resourceNames=["a"])],
            True,
        ),
        ([rule("get", "pods")], [rule("get", "pods", resourceNames=["a"])], True),
        # URLs: exact, or a * prefix; resource rules never cover them
        ([urls("get", "/healthz/*")], [urls("get", "/healthz/etcd")], True),
        ([urls("get", "/healthz/*")], [urls("get", "/healthz")], False),
        ([STAR], [urls("get", "/healthz")], False),
        ([urls("*", "*")], [urls("get", "/anything")], True),
        ([urls("*", "*")], [rule("get", "pods")], False),
        # the verb * is held only as *, not as every verb listed
        ([rule("get list watch create update patch delete", "*", "*")], [STAR], False),
        ([], [], True),
    ],
)
def test_coverage(held: list[Obj], wanted: list[Obj], covered: bool) -> None:
    assert covers(held, wanted)[0] is covered


def test_covers_returns_the_atoms_not_covered() -> None:
    held = [rule("get", "pods", resourceNames=["a"])]
    ok, missing = covers(held, [rule("get", "pods", resourceNames=["a", "b"])])
    assert not ok
    assert missing == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["b"]}
    ]


def test_compaction_merges_atoms_differing_only_by_verb() -> None:
    missing = covers([], [rule("get list", "pods deployments", "apps"), urls("get put", "/x")])[1]
    assert sorted(compact_string(r) for r in compact(missing)) == [
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}',
        '{APIGroups:["apps"], Resources:["pods"], Verbs:["get" "list"]}',
        '{NonResourceURLs:["/x"], Verbs:["get"]}',
        '{NonResourceURLs:["/x"], Verbs:["put"]}',
    ]


def test_compact_string_has_only_the_parts_present_in_kube_order() -> None:
    assert compact_string({"verbs": ["get"], "nonResourceURLs": ["/a"]}) == (
        '{NonResourceURLs:["/a"], Verbs:["get"]}'
    )
    full = rule("get", "pods", resourceNames=['q"uote'])
    assert compact_string(full) == (
        '{APIGroups:[""], Resources:["pods"], ResourceNames:["q\\"uote"], Verbs:["get"]}'
    )


def test_the_escalation_message_lists_the_missing_rules_sorted() -> None:
    held = [rule("get", "pods"), urls("get", "/healthz")]
    wanted = [
        rule("get list", "deployments", "apps"),
        rule("get delete", "pods"),
        urls("get", "/x"),
    ]
    assert escalation(BOB, held, [], wanted) == HEAD + "\n".join(
        [
            '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}',
            '{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}',
            '{NonResourceURLs:["/x"], Verbs:["get"]}',
        ]
    )
    assert escalation(BOB, held, [], [rule("get", "pods")]) == ""


def test_the_escalation_message_names_resolution_errors() -> None:
    lost = 'clusterrole.rbac.authorization.k8s.io "gone" not found'
    text = escalation(BOB, [], [lost], [rule("get", "pods")])
    assert text.endswith(f'Verbs:["get"]}}; resolution errors: [{lost}]')
    assert escalation(User("u", ()), [], [], [rule("get", "pods")]).startswith(
        'user "u" (groups=[]) is attempting'
    )
    # resolution errors do not matter when the rules are covered
    assert escalation(BOB, [STAR], [lost], [rule("get", "pods")]) == ""


def test_error_aggregates_read_as_apimachinery_prints_them() -> None:
    assert aggregate(["a"]) == "a"
    assert aggregate(["a", "b", "a"]) == "[a, b]"
    assert aggregate(["a", "a"]) == "a"


# -- the storages --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_builtin_catalogue(tmp_path_factory.mktemp("cache"))


@dataclass
class RBACKinds:
    registry: Registry
    kinds: BuiltinKinds
    authorizer: RulesAuthorizer

    def info(self, plural: str) -> ResourceInfo:
        return self.kinds.catalogue.require(RBAC, "v1", plural)

    def ctx(
        self, plural: str, namespace: str | None, user: User, name: str = "", verb: str = "create"
    ) -> Context:
        request = RequestInfo("/apis/rbac", verb, True, api_group=RBAC, api_version="v1",
                              namespace=namespace or "", resource=plural, name=name)  # fmt: skip
        return Context(namespace, user, request)

    async def create(self, plural: str, namespace: str | None, body: Obj, user: User = BOB) -> Obj:
        storage = self.registry.storage(self.info(plural))
        assert isinstance(storage, Creater)
        return await storage.create(self.ctx(plural, namespace, user), body, WriteOptions())

    async def put(
        self, plural: str, namespace: str | None, body: Obj, user: User = BOB
    ) -> tuple[Obj, bool]:
        info, name = self.info(plural), body["metadata"]["name"]
        storage = self.registry.storage(info)
        assert isinstance(storage, Updater)
        update = replacement(info, namespace, name, body)
        ctx = self.ctx(plural, namespace, user, name, "update")
        return await storage.update(ctx, name, update, WriteOptions())

    async def patch(
        self, plural: str, namespace: str | None, name: str, patch: Obj, user: User = BOB
    ) -> Obj:
        info = self.info(plural)
        storage = self.registry.storage(info)
        assert isinstance(storage, Updater)
        update = patch_update(info, name, "application/merge-patch+json", patch, schema=info)
        ctx = self.ctx(plural, namespace, user, name, "patch")
        obj, _ = await storage.update(ctx, name, update, WriteOptions(patch=True))
        return obj

    async def apply(self, plural: str, namespace: str | None, config: Obj, user: User = BOB) -> Obj:
        info, name = self.info(plural), config["metadata"]["name"]
        storage = self.registry.storage(info)
        assert isinstance(storage, Updater)
        update = apply_update(info, namespace, name, Applied(config), "test", force=True)
        ctx = self.ctx(plural, namespace, user, name, "patch")
        obj, _ = await storage.update(
            ctx, name, update, WriteOptions(field_manager="test", apply=True)
        )
        return obj


@pytest.fixture
def rbac(store: Store, catalogue: Catalogue) -> RBACKinds:
    kinds = BuiltinKinds(catalogue)
    authorizer = RulesAuthorizer({})
    kinds.authorizer = authorizer
    registry = Registry(store, kinds)
    return RBACKinds(registry, kinds, authorizer)


def role(name: str, *rules: Obj, **more: Any) -> Obj:
    return {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": name},
            "rules": list(rules), **more}  # fmt: skip


def cluster_role(name: str, *rules: Obj, **more: Any) -> Obj:
    return {**role(name, *rules, **more), "kind": "ClusterRole"}


def binding(name: str, kind: str, ref: str, *, cluster: bool = False) -> Obj:
    return {
        "apiVersion": f"{RBAC}/v1",
        "kind": "ClusterRoleBinding" if cluster else "RoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC, "kind": kind, "name": ref},
        "subjects": [{"kind": "User", "name": "carol", "apiGroup": RBAC}],
    }


async def refused(call: Any) -> APIError:
    with pytest.raises(APIError) as caught:
        await call
    return caught.value


async def test_a_role_within_the_writers_rules_is_created(rbac: RBACKinds) -> None:
    rbac.authorizer.rules["bob"] = {"ns1": [rule("get list", "pods")]}
    created = await rbac.create("roles", "ns1", role("reader", rule("get", "pods")))
    assert created["metadata"]["name"] == "reader"


async def test_a_role_granting_more_is_forbidden_with_kubes_text(rbac: RBACKinds) -> None:
    rbac.authorizer.rules["bob"] = {"ns1": [rule("get", "pods")]}
    wanted = role("writer", rule("get delete", "pods"), rule("get", "deployments", "apps"))
    error = await refused(rbac.create("roles", "ns1", wanted))
    assert error.code == 403
    assert error.reason == "Forbidden"
    assert error.message == 'roles.rbac.authorization.k8s.io "writer" is forbidden: ' + HEAD + (
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}\n'
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}'
    )
    assert error.details == {"name": "writer", "group": RBAC, "kind": "roles"}


async def test_rules_held_in_another_namespace_do_not_count(rbac: RBACKinds) -> None:
    rbac.authorizer.rules["bob"] = {"ns1": [rule("get", "pods")]}
    error = await refused(rbac.create("roles", "ns2", role("r", rule("get", "pods"))))
    assert error.code == 403


async def test_a_generated_name_is_not_named_in_the_refusal(rbac: RBACKinds) -> None:
    body = role("x", rule("get", "pods"))
    body["metadata"] = {"generateName": "r-"}
    error = await refused(rbac.create("roles", "ns1", body))
    assert error.message.startswith("roles.rbac.authorization.k8s.io is forbidden: user ")
    assert error.details == {"group": RBAC, "kind": "roles"}


async def test_masters_and_a_server_without_authorizer_are_not_checked(rbac: RBACKinds) -> None:
    await rbac.create("clusterroles", None, cluster_role("admin-ish", STAR), user=ADMIN)
    rbac.kinds.authorizer = None
    await rbac.create("clusterroles", None, cluster_role("bobs", STAR))
    assert rbac.authorizer.asked == []


async def test_the_escalate_verb_allows_any_rules(rbac: RBACKinds) -> None:
    rbac.authorizer.rules["bob"] = {"": [rule("escalate", "clusterroles", RBAC)]}
    await rbac.create("clusterroles", None, cluster_role("big", STAR))
    _, escalate = rbac.authorizer.asked[0]
    assert (escalate.verb, escalate.resource, escalate.api_group) == (
        "escalate", "clusterroles", RBAC,
    )  # fmt: skip
    assert (escalate.api_version, escalate.name, escalate.namespace) == ("*", "", "")


async def test_escalate_on_a_named_role_is_asked_with_the_requests_name(rbac: RBACKinds) -> None:
    rbac.authorizer.rules["bob"] = {"ns1": [rule("escalate", "roles", RBAC, resourceNames=["r"])]}
    # a create has no name in its request: the named permission does not apply
    assert (await refused(rbac.create("roles", "ns1", role("r", STAR)))).code == 403
    await rbac.create("roles", "ns1", role("r"), user=ADMIN)
    obj, created = await rbac.put("roles", "ns1", role("r", rule("*", "*", "*")))
    assert not created
    assert obj["rules"] == [STAR]


async def test_a_cluster_role_is_checked_against_cluster_wide_rules_only(rbac: RBACKinds) -> None:
    rbac.authorizer.rules["bob"] = {"ns1": [STAR], "": [rule("get", "pods")]}
    await rbac.create("clusterroles", None, cluster_role("ok", rule("get", "pods")))
    error = await refused(
        rbac.create("clusterroles", None, cluster_role("no", rule("list", "pods")))
    )
    assert error.message.startswith('clusterroles.rbac.authorization.k8s.io "no" is forbidden: ')


async def test_an_aggregation_rule_needs_full_authority(rbac: RBACKinds) -> None:
    selectors = {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}
    aggregated = cluster_role("agg", rule("get", "pods"), aggregationRule=selectors)
    # every rule held but the verb escalate (which * would include)
    rbac.authorizer.rules["bob"] = {"": [rule("get", "pods"), ALL_URLS]}
    error = await refused(rbac.create("clusterroles", None, aggregated))
    assert error.code == 403
    assert error.message == (
        'clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin '
        "privileges to use the aggregationRule"
    )
    assert error.details == {"name": "agg", "group": RBAC, "kind": "clusterroles"}
    # the rules are checked first
    more = cluster_role("agg", rule("list", "pods"), aggregationRule=selectors)
    error = await refused(rbac.create("clusterroles", None, more))
    assert "is attempting to grant RBAC permissions not currently held" in error.message


async def test_removing_an_aggregation_rule_needs_full_authority(rbac: RBACKinds) -> None:
    selectors = {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}
    await rbac.create("clusterroles", None, cluster_role("agg", aggregationRule=selectors), ADMIN)
    rbac.authorizer.rules["bob"] = {"": [rule("get", "pods")]}
    error = await refused(rbac.put("clusterroles", None, cluster_role("agg")))
    assert "must have cluster-admin privileges to use the aggregationRule" in error.message


async def test_updates_check_the_new_object(rbac: RBACKinds) -> None:
    await rbac.create("roles", "ns1", role("r", rule("get", "pods")), user=ADMIN)
    rbac.authorizer.rules["bob"] = {"ns1": [rule("get list", "pods")]}
    await rbac.put("roles", "ns1", role("r", rule("get list", "pods")))
    error = await refused(rbac.put("roles", "ns1", role("r", rule("delete", "pods"))))
    assert error.message.endswith('{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}')
    error = await refused(rbac.patch("roles", "ns1", "r", {"rules": [rule("get", "secrets")]}))
    assert error.code == 403
    stored = await rbac.registry.get(rbac.info("roles"), "ns1", "r")
    assert stored["rules"] == [rule("get list", "pods")]


async def test_create_on_update_and_apply_are_checked(rbac: RBACKinds) -> None:
    rbac.authorizer.rules["bob"] = {"ns1": [rule("get", "pods")]}
    error = await refused(rbac.put("roles", "ns1", role("new", rule("list", "pods"))))
    assert error.code == 403
    _, created = await rbac.put("roles", "ns1", role("new", rule("get", "pods")))
    assert created
    error = await refused(rbac.apply("roles", "ns1", role("applied", rule("list", "pods"))))
    assert error.message.startswith('roles.rbac.authorization.k8s.io "applied" is forbidden')
    applied = await rbac.apply("roles", "ns1", role("applied", rule("get", "pods")))
    assert applied["rules"] == [rule("get", "pods")]


async def test_an_update_of_only_finalizers_or_owners_is_not_checked(rbac: RBACKinds) -> None:
    await rbac.create("clusterroles", None, cluster_role("big", STAR), user=ADMIN)
    rbac.authorizer.rules["bob"] = {}
    patched = await rbac.patch(
        "clusterroles", None, "big", {"metadata": {"finalizers": ["example.com/hold"]}}
    )
    assert patched["metadata"]["finalizers"] == ["example.com/hold"]
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1"}
    await rbac.patch("clusterroles", None, "big", {"metadata": {"ownerReferences": [owner]}})
    # anything else is checked, a label too
    error = await refused(
        rbac.patch("clusterroles", None, "big", {"metadata": {"labels": {"a": "b"}}})
    )
    assert error.code == 403


async def test_resolution_errors_follow_the_missing_rules(rbac: RBACKinds) -> None:
    rbac.authorizer.errors = ['clusterrole.rbac.authorization.k8s.io "gone" not found']
    error = await refused(rbac.create("roles", "ns1", role("r", rule("get", "pods"))))
    assert error.message.endswith(
        '; resolution errors: [clusterrole.rbac.authorization.k8s.io "gone" not found]'
    )


async def test_a_binding_to_a_role_the_writer_holds_is_created(rbac: RBACKinds) -> None:
    await rbac.create("clusterroles", None, cluster_role("view", rule("get list", "pods")), ADMIN)
    rbac.authorizer.rules["bob"] = {"ns1": [rule("get list watch", "pods")]}
    await rbac.create("rolebindings", "ns1", binding("b", "ClusterRole", "view"))
    error = await refused(rbac.create("rolebindings", "ns2", binding("b", "ClusterRole", "view")))
    assert error.message == (
        'rolebindings.rbac.authorization.k8s.io "b" is forbidden: ' + HEAD
        + '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}'
    )  # fmt: skip
    assert error.details == {"name": "b", "group": RBAC, "kind": "rolebindings"}


async def test_a_binding_to_a_missing_role_is_not_found(rbac: RBACKinds) -> None:
    error = await refused(rbac.create("rolebindings", "ns1", binding("b", "ClusterRole", "nope")))
    assert (error.code, error.message) == (
        404, 'clusterroles.rbac.authorization.k8s.io "nope" not found',
    )  # fmt: skip
    error = await refused(rbac.create("rolebindings", "ns1", binding("b", "Role", "nope")))
    assert (error.code, error.message) == (404, 'roles.rbac.authorization.k8s.io "nope" not found')
    error = await refused(rbac.create("rolebindings", "ns1", binding("b", "Widget", "w")))
    assert (error.code, error.message) == (500, 'unsupported role reference kind: "Widget"')


async def test_the_bind_verb_allows_binding_without_holding_the_rules(rbac: RBACKinds) -> None:
    ref = rule("bind", "clusterroles", RBAC, resourceNames=["admin"])
    rbac.authorizer.rules["bob"] = {"ns1": [ref]}
    # bind needs no role to look up: the binding may come before its role
    await rbac.create("rolebindings", "ns1", binding("b", "ClusterRole", "admin"))
    _, bind = rbac.authorizer.asked[-1]
    assert (bind.verb, bind.resource, bind.name, bind.namespace, bind.api_version) == (
        "bind", "clusterroles", "admin", "ns1", "*",
    )  # fmt: skip
    # a namespace's bind does not reach a ClusterRoleBinding
    crb = binding("c", "ClusterRole", "admin", cluster=True)
    assert (await refused(rbac.create("clusterrolebindings", None, crb))).code == 404
    rbac.authorizer.rules["bob"] = {"": [ref]}
    await rbac.create("clusterrolebindings", None, crb)


async def test_bind_is_asked_with_the_defaulted_role_ref_group(rbac: RBACKinds) -> None:
    rbac.authorizer.rules["bob"] = {"ns1": [rule("bind", "roles", RBAC)]}
    body = binding("b", "Role", "r")
    del body["roleRef"]["apiGroup"]
    created = await rbac.create("rolebindings", "ns1", body)
    assert created["roleRef"]["apiGroup"] == RBAC


async def test_binding_updates_are_checked_except_gc_fields(rbac: RBACKinds) -> None:
    await rbac.create("clusterroles", None, cluster_role("edit", rule("*", "pods")), ADMIN)
    await rbac.create("rolebindings", "ns1", binding("b", "ClusterRole", "edit"), ADMIN)
    rbac.authorizer.rules["bob"] = {"ns1": [rule("get", "pods")]}
    error = await refused(
        rbac.patch("rolebindings", "ns1", "b", {"subjects": [{"kind": "User", "name": "bob"}]})
    )
    assert error.message.endswith('{APIGroups:[""], Resources:["pods"], Verbs:["*"]}')
    await rbac.patch("rolebindings", "ns1", "b", {"metadata": {"finalizers": ["x.io/y"]}})
