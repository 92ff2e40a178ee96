"""The RBAC bootstrap policy (kube-apiserver's ``rbac/bootstrap-roles`` post-start hook) and the
ClusterRole aggregation controller, over a real SQLite store through the registry.

Exact objects are checked against kube's rendering of the 1.36 policy
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/*.yaml)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from kubelite.api.auth.rbaccover import covers
from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.controllers.rbacaggregation import MANAGER, ClusterRoleAggregator
from kubelite.api.errors import APIError
from kubelite.api.kinds import new_registry
from kubelite.api.kinds.core.namespaces import ensure_system_namespaces
from kubelite.api.kinds.rbac.bootstrap import ensure_bootstrap_policy
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.selectors import SelectorError, label_selector_of
from kubelite.storage import Store

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"
AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
READ = ["get", "list", "watch"]


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_builtin_catalogue(tmp_path_factory.mktemp("cache"))


@dataclass
class Cluster:
    registry: Registry
    catalogue: Catalogue

    def info(self, plural: str) -> ResourceInfo:
        info = self.catalogue.lookup(GROUP, "v1", plural)
        assert info is not None
        return info

    async def bootstrap(self) -> None:
        await ensure_bootstrap_policy(self.registry, self.catalogue)

    async def get(self, plural: str, name: str, namespace: str | None = None) -> Obj:
        return await self.registry.get(self.info(plural), namespace, name)

    async def items(self, plural: str) -> list[Obj]:
        listing = await self.registry.list(self.info(plural), None)
        return list(listing["items"])

    async def versions(self) -> dict[tuple[str, str, str], str]:
        out = {}
        for plural in ("clusterroles", "clusterrolebindings", "roles", "rolebindings"):
            for obj in await self.items(plural):
                meta = obj["metadata"]
                out[plural, meta.get("namespace", ""), meta["name"]] = meta["resourceVersion"]
        return out

    async def put(self, plural: str, obj: Obj) -> Obj:
        meta = obj["metadata"]
        written, _ = await self.registry.update(
            self.info(plural), meta.get("namespace"), meta["name"], obj
        )
        return written

    async def create(self, plural: str, obj: Obj) -> Obj:
        namespace = obj["metadata"].get("namespace")
        return await self.registry.create(self.info(plural), namespace, obj)

    async def delete(self, plural: str, name: str) -> None:
        await self.registry.delete(self.info(plural), None, name)


@pytest.fixture
async def cluster(store: Store, catalogue: Catalogue) -> Cluster:
    registry = new_registry(store, catalogue)
    await ensure_system_namespaces(registry, catalogue)
    return Cluster(registry, catalogue)


@pytest.fixture
async def booted(cluster: Cluster) -> Cluster:
    await cluster.bootstrap()
    return cluster


@pytest.fixture
async def aggregator(booted: Cluster) -> AsyncIterator[ClusterRoleAggregator]:
    controller = ClusterRoleAggregator(booted.registry, booted.catalogue, debounce_seconds=0.005)
    controller.start()
    try:
        await controller.wait_idle()
        yield controller
    finally:
        await controller.close()


def role(name: str, rules: list[Obj], labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels or {}},
        "rules": rules,
    }


def res(verbs: list[str], group: str, *resources: str) -> Obj:
    return {"verbs": verbs, "apiGroups": [group], "resources": list(resources)}


def rule_set(obj: Obj) -> list[Obj]:
    return list(obj.get("rules") or [])


def user(name: str) -> Obj:
    return {"kind": "User", "apiGroup": GROUP, "name": name}


def group(name: str) -> Obj:
    return {"kind": "Group", "apiGroup": GROUP, "name": name}


# -- the objects -------------------------------------------------------------------------------

CLUSTER_ROLES = {
    "admin", "cluster-admin", "edit", "view",
    "system:aggregate-to-admin", "system:aggregate-to-edit", "system:aggregate-to-view",
    "system:auth-delegator", "system:basic-user", "system:discovery", "system:heapster",
    "system:kube-aggregator", "system:kube-controller-manager", "system:kube-dns",
    "system:kube-scheduler", "system:kubelet-api-admin", "system:monitoring", "system:node",
    "system:node-bootstrapper", "system:node-problem-detector", "system:node-proxier",
    "system:persistent-volume-provisioner", "system:public-info-viewer",
    "system:service-account-issuer-discovery", "system:volume-scheduler",
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    "system:certificates.k8s.io:kube-apiserver-client-approver",
    "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
    "system:certificates.k8s.io:kubelet-serving-approver",
    "system:certificates.k8s.io:legacy-unknown-approver",
}  # fmt: skip
CLUSTER_ROLE_BINDINGS = {
    "cluster-admin", "system:basic-user", "system:discovery", "system:kube-controller-manager",
    "system:kube-dns", "system:kube-scheduler", "system:monitoring", "system:node",
    "system:node-proxier", "system:public-info-viewer", "system:service-account-issuer-discovery",
    "system:volume-scheduler",
}  # fmt: skip
ROLES = {
    ("kube-public", "system:controller:bootstrap-signer"),
    ("kube-system", "extension-apiserver-authentication-reader"),
    ("kube-system", "system::leader-locking-kube-controller-manager"),
    ("kube-system", "system::leader-locking-kube-scheduler"),
    ("kube-system", "system:controller:bootstrap-signer"),
    ("kube-system", "system:controller:cloud-provider"),
    ("kube-system", "system:controller:token-cleaner"),
}
ROLE_BINDINGS = {
    ("kube-public", "system:controller:bootstrap-signer"),
    ("kube-system", "system::extension-apiserver-authentication-reader"),
    ("kube-system", "system::leader-locking-kube-controller-manager"),
    ("kube-system", "system::leader-locking-kube-scheduler"),
    ("kube-system", "system:controller:bootstrap-signer"),
    ("kube-system", "system:controller:cloud-provider"),
    ("kube-system", "system:controller:token-cleaner"),
}


async def test_bootstrap_creates_every_object(booted: Cluster) -> None:
    roles = await booted.items("clusterroles")
    bindings = await booted.items("clusterrolebindings")
    assert {r["metadata"]["name"] for r in roles} == CLUSTER_ROLES
    assert {b["metadata"]["name"] for b in bindings} == CLUSTER_ROLE_BINDINGS
    namespaced = {
        plural: {
            (o["metadata"]["namespace"], o["metadata"]["name"]) for o in await booted.items(plural)
        }
        for plural in ("roles", "rolebindings")
    }
    assert namespaced == {"roles": ROLES, "rolebindings": ROLE_BINDINGS}
    for obj in [*roles, *bindings]:
        meta = obj["metadata"]
        assert meta["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults", meta["name"]
        assert meta["annotations"] == {AUTOUPDATE: "true"}, meta["name"]
        assert meta["managedFields"][0]["manager"] == "kube-apiserver"


async def test_second_run_changes_nothing(booted: Cluster) -> None:
    before = await booted.versions()
    await booted.bootstrap()
    assert await booted.versions() == before


async def test_objects_as_kube_renders_them(booted: Cluster) -> None:
    discovery = await booted.get("clusterroles", "system:discovery")
    assert discovery["rules"] == [
        {
            "verbs": ["get"],
            "nonResourceURLs": [
                "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                "/openapi/*", "/readyz", "/version", "/version/",
            ],
        }
    ]  # fmt: skip
    view = await booted.get("clusterroles", "view")
    assert view["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {f"{GROUP}/aggregate-to-view": "true"}}]
    }
    assert view["metadata"]["labels"] == {
        "kubernetes.io/bootstrapping": "rbac-defaults",
        f"{GROUP}/aggregate-to-edit": "true",
    }
    assert not view.get("rules")  # the aggregation controller's to fill
    admin = await booted.get("clusterroles", "system:aggregate-to-admin")
    assert admin["rules"] == [
        {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
         "resources": ["localsubjectaccessreviews"]},
        {"verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                   "watch"], "apiGroups": [GROUP], "resources": ["rolebindings", "roles"]},
    ]  # fmt: skip
    basic = await booted.get("clusterroles", "system:basic-user")
    assert basic["rules"] == [
        {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
         "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
        {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
         "resources": ["selfsubjectreviews"]},
    ]  # fmt: skip
    aggregate_view = await booted.get("clusterroles", "system:aggregate-to-view")
    assert aggregate_view["rules"][3] == {
        "verbs": READ,
        "apiGroups": ["", "events.k8s.io"],
        "resources": ["events"],
    }
    assert "secrets" not in {r for rule in aggregate_view["rules"] for r in rule["resources"]}
    approver = await booted.get(
        "clusterroles", "system:certificates.k8s.io:kubelet-serving-approver"
    )
    assert approver["rules"] == [
        {"verbs": ["approve"], "apiGroups": ["certificates.k8s.io"], "resources": ["signers"],
         "resourceNames": ["kubernetes.io/kubelet-serving"]},
    ]  # fmt: skip


async def test_bindings_as_kube_renders_them(booted: Cluster) -> None:
    admin = await booted.get("clusterrolebindings", "cluster-admin")
    assert admin["subjects"] == [group("system:masters")]
    assert admin["roleRef"] == {"apiGroup": GROUP, "kind": "ClusterRole", "name": "cluster-admin"}
    public = await booted.get("clusterrolebindings", "system:public-info-viewer")
    assert public["subjects"] == [group("system:authenticated"), group("system:unauthenticated")]
    discovery = await booted.get("clusterrolebindings", "system:discovery")
    assert discovery["subjects"] == [group("system:authenticated")]
    node = await booted.get("clusterrolebindings", "system:node")
    assert not node.get("subjects")
    dns = await booted.get("clusterrolebindings", "system:kube-dns")
    assert dns["subjects"] == [
        {"kind": "ServiceAccount", "name": "kube-dns", "namespace": "kube-system"}
    ]
    locking = await booted.get(
        "rolebindings", "system::leader-locking-kube-controller-manager", "kube-system"
    )
    assert locking["roleRef"] == {
        "apiGroup": GROUP,
        "kind": "Role",
        "name": "system::leader-locking-kube-controller-manager",
    }
    assert locking["subjects"] == [
        user("system:kube-controller-manager"),
        {"kind": "ServiceAccount", "name": "kube-controller-manager", "namespace": "kube-system"},
        {
            "kind": "ServiceAccount",
            "name": "leader-election-controller",
            "namespace": "kube-system",
        },
    ]


# -- reconciling -------------------------------------------------------------------------------


async def test_extra_rules_survive_reconcile(booted: Cluster) -> None:
    extra = res(READ, "", "secrets")
    view = await booted.get("clusterroles", "view")
    view["rules"] = [extra]
    await booted.put("clusterroles", view)
    basic = await booted.get("clusterroles", "system:basic-user")
    basic["rules"] = [*basic["rules"], res(["get"], "example.com", "widgets")]
    await booted.put("clusterroles", basic)
    await booted.bootstrap()
    assert (await booted.get("clusterroles", "view"))["rules"] == [extra]
    assert (await booted.get("clusterroles", "system:basic-user"))["rules"] == basic["rules"]


async def test_removed_stock_rules_are_added_back(booted: Cluster) -> None:
    discovery = await booted.get("clusterroles", "system:discovery")
    kept = {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*"]}
    discovery["rules"] = [kept]
    await booted.put("clusterroles", discovery)
    await booted.bootstrap()
    rules = (await booted.get("clusterroles", "system:discovery"))["rules"]
    assert rules[0] == kept
    # kube appends each missing permission on its own (Covers' breakdown)
    assert rules[1:] == [
        {"verbs": ["get"], "nonResourceURLs": [url]}
        for url in ("/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
                    "/readyz", "/version", "/version/")
    ]  # fmt: skip
    before = await booted.versions()
    await booted.bootstrap()
    assert await booted.versions() == before


async def test_a_covering_rule_counts(booted: Cluster) -> None:
    """A stored rule broader than the stock ones (a wildcard) covers them: nothing added."""
    heapster = await booted.get("clusterroles", "system:heapster")
    heapster["rules"] = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
    written = await booted.put("clusterroles", heapster)
    await booted.bootstrap()
    after = await booted.get("clusterroles", "system:heapster")
    assert after["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]


async def test_labels_and_annotations_merge_stored_values_win(booted: Cluster) -> None:
    edit = await booted.get("clusterroles", "edit")
    edit["metadata"]["labels"] = {f"{GROUP}/aggregate-to-admin": "false", "team": "a"}
    edit["metadata"]["annotations"] = {"note": "mine"}
    await booted.put("clusterroles", edit)
    await booted.bootstrap()
    meta = (await booted.get("clusterroles", "edit"))["metadata"]
    assert meta["labels"] == {
        f"{GROUP}/aggregate-to-admin": "false",
        "team": "a",
        "kubernetes.io/bootstrapping": "rbac-defaults",
    }
    assert meta["annotations"] == {"note": "mine", AUTOUPDATE: "true"}


async def test_missing_aggregation_selectors_are_appended(booted: Cluster) -> None:
    edit = await booted.get("clusterroles", "edit")
    mine = {"matchLabels": {"team": "a"}}
    edit["aggregationRule"] = {"clusterRoleSelectors": [mine]}
    await booted.put("clusterroles", edit)
    await booted.bootstrap()
    rule = (await booted.get("clusterroles", "edit"))["aggregationRule"]
    assert rule == {
        "clusterRoleSelectors": [mine, {"matchLabels": {f"{GROUP}/aggregate-to-edit": "true"}}]
    }


async def test_autoupdate_false_is_left_alone(booted: Cluster) -> None:
    basic = await booted.get("clusterroles", "system:basic-user")
    basic["metadata"]["annotations"][AUTOUPDATE] = "false"
    basic["metadata"]["labels"] = {}
    basic["rules"] = [res(["create"], "authorization.k8s.io", "selfsubjectaccessreviews")]
    basic = await booted.put("clusterroles", basic)
    binding = await booted.get("clusterrolebindings", "system:discovery")
    binding["metadata"]["annotations"][AUTOUPDATE] = "false"
    binding["subjects"] = [user("alice")]
    binding = await booted.put("clusterrolebindings", binding)
    await booted.bootstrap()
    assert await booted.get("clusterroles", "system:basic-user") == basic
    assert await booted.get("clusterrolebindings", "system:discovery") == binding


async def test_missing_subjects_added_extra_kept(booted: Cluster) -> None:
    binding = await booted.get("clusterrolebindings", "system:public-info-viewer")
    binding["subjects"] = [user("alice"), group("system:unauthenticated")]
    await booted.put("clusterrolebindings", binding)
    await booted.bootstrap()
    after = await booted.get("clusterrolebindings", "system:public-info-viewer")
    assert after["subjects"] == [
        user("alice"),
        group("system:unauthenticated"),
        group("system:authenticated"),
    ]


async def test_binding_with_another_role_ref_is_recreated(booted: Cluster) -> None:
    old = await booted.get("clusterrolebindings", "system:basic-user")
    await booted.delete("clusterrolebindings", "system:basic-user")
    imposter = await booted.create("clusterrolebindings", {
        "metadata": {"name": "system:basic-user", "labels": {"mine": "yes"}},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [user("mallory")],
    })  # fmt: skip
    await booted.bootstrap()
    after = await booted.get("clusterrolebindings", "system:basic-user")
    assert after["metadata"]["uid"] not in (old["metadata"]["uid"], imposter["metadata"]["uid"])
    assert after["roleRef"] == {
        "apiGroup": GROUP,
        "kind": "ClusterRole",
        "name": "system:basic-user",
    }
    assert after["subjects"] == [group("system:authenticated")]
    assert after["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}


async def test_deleted_objects_come_back(booted: Cluster) -> None:
    await booted.delete("clusterroles", "system:discovery")
    await booted.registry.delete(
        booted.info("rolebindings"), "kube-public", "system:controller:bootstrap-signer"
    )
    await booted.bootstrap()
    assert (await booted.get("clusterroles", "system:discovery"))["rules"]
    binding = await booted.get("rolebindings", "system:controller:bootstrap-signer", "kube-public")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "bootstrap-signer", "namespace": "kube-system"}
    ]


async def test_namespaced_roles_create_their_namespace(store: Store, catalogue: Catalogue) -> None:
    cluster = Cluster(new_registry(store, catalogue), catalogue)  # no system namespaces yet
    await cluster.bootstrap()
    namespaces = catalogue.lookup("", "v1", "namespaces")
    assert namespaces is not None
    for name in ("kube-system", "kube-public"):
        assert (await cluster.registry.get(namespaces, None, name))["metadata"]["name"] == name


async def test_two_servers_bootstrap_at_once(store: Store, catalogue: Catalogue) -> None:
    """Two registries over one store (two servers over one etcd) race: both finish, one set."""
    first, second = (Cluster(new_registry(store, catalogue), catalogue) for _ in range(2))
    await ensure_system_namespaces(first.registry, catalogue)
    await asyncio.gather(first.bootstrap(), second.bootstrap())
    assert {r["metadata"]["name"] for r in await first.items("clusterroles")} == CLUSTER_ROLES
    before = await first.versions()
    await second.bootstrap()
    assert await first.versions() == before


async def test_pre_aggregation_roles_are_migrated(cluster: Cluster) -> None:
    """An ``admin`` from before aggregation: its own rules move to system:aggregate-to-admin,
    and it gets the aggregation rule."""
    custom = res(READ, "example.com", "widgets")
    await cluster.create("clusterroles", role("admin", [custom]))
    await cluster.bootstrap()
    moved = await cluster.get("clusterroles", "system:aggregate-to-admin")
    assert moved["rules"][0] == custom
    assert len(moved["rules"]) > 1  # and the stock ones it lacked
    admin = await cluster.get("clusterroles", "admin")
    assert admin["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {f"{GROUP}/aggregate-to-admin": "true"}}]
    }


async def test_discovery_binding_seeds_public_info_viewer(cluster: Cluster) -> None:
    await cluster.create("clusterrolebindings", {
        "metadata": {"name": "system:discovery"},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "system:discovery"},
        "subjects": [user("bob")],
    })  # fmt: skip
    await cluster.bootstrap()
    public = await cluster.get("clusterrolebindings", "system:public-info-viewer")
    assert public["subjects"] == [
        user("bob"),
        group("system:authenticated"),
        group("system:unauthenticated"),
    ]


def test_covers_breaks_rules_down() -> None:
    owner = [
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "*/status"]},
        {"verbs": ["*"], "nonResourceURLs": ["/healthz/*"]},
    ]
    servant = [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "nodes/status"]},
        {"verbs": ["get"], "nonResourceURLs": ["/healthz/etcd", "/healthz"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]},
    ]
    assert covers(owner, servant)[1] == [
        {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["list"], "apiGroups": [""], "resources": ["nodes/status"]},
        {"verbs": ["get"], "nonResourceURLs": ["/healthz"]},
    ]


async def test_rbac_names_are_path_segments(cluster: Cluster) -> None:
    await cluster.create("clusterroles", role("system:mine", []))
    with pytest.raises(APIError) as caught:
        await cluster.create("clusterroles", role("a/b", []))
    assert caught.value.code == 422
    assert "may not contain '/'" in str(caught.value)


# -- aggregation -------------------------------------------------------------------------------


def keys(rules: list[Obj]) -> list[str]:
    return [repr(sorted((k, tuple(v)) for k, v in r.items())) for r in rules]


async def test_admin_edit_view_aggregate(
    booted: Cluster, aggregator: ClusterRoleAggregator
) -> None:
    view, edit, admin = [await booted.get("clusterroles", n) for n in ("view", "edit", "admin")]
    stock_view = await booted.get("clusterroles", "system:aggregate-to-view")
    assert view["rules"] == stock_view["rules"]
    assert set(keys(view["rules"])) < set(keys(edit["rules"])) < set(keys(admin["rules"]))
    # members sorted by name: edit is system:aggregate-to-edit's rules, then view's
    stock_edit = await booted.get("clusterroles", "system:aggregate-to-edit")
    assert edit["rules"] == [*stock_edit["rules"], *view["rules"]]
    stock_admin = await booted.get("clusterroles", "system:aggregate-to-admin")
    assert admin["rules"] == [*edit["rules"], *stock_admin["rules"]]
    assert "secrets" not in {r for rule in view["rules"] for r in rule["resources"]}
    entry = next(e for e in view["metadata"]["managedFields"] if e["manager"] == MANAGER)
    assert entry["operation"] == "Apply"
    assert entry["fieldsV1"] == {"f:rules": {}}


async def test_new_labelled_role_joins_view_edit_admin(
    booted: Cluster, aggregator: ClusterRoleAggregator
) -> None:
    widgets = res(READ, "example.com", "widgets")
    label = {f"{GROUP}/aggregate-to-view": "true"}
    await booted.create("clusterroles", role("widget-viewer", [widgets], label))
    await aggregator.wait_idle()
    for name in ("view", "edit", "admin"):
        assert widgets in (await booted.get("clusterroles", name))["rules"], name

    # the label removed: the rule goes
    viewer = await booted.get("clusterroles", "widget-viewer")
    viewer["metadata"]["labels"] = {}
    await booted.put("clusterroles", viewer)
    await aggregator.wait_idle()
    for name in ("view", "edit", "admin"):
        assert widgets not in (await booted.get("clusterroles", name))["rules"], name


async def test_deleted_member_takes_its_rules(
    booted: Cluster, aggregator: ClusterRoleAggregator
) -> None:
    gadgets = res(["create", "delete"], "example.com", "gadgets")
    label = {f"{GROUP}/aggregate-to-edit": "true"}
    await booted.create("clusterroles", role("gadget-editor", [gadgets], label))
    await aggregator.wait_idle()
    assert gadgets in (await booted.get("clusterroles", "admin"))["rules"]
    assert gadgets not in (await booted.get("clusterroles", "view"))["rules"]
    await booted.delete("clusterroles", "gadget-editor")
    await aggregator.wait_idle()
    for name in ("edit", "admin"):
        assert gadgets not in (await booted.get("clusterroles", name))["rules"], name


async def test_selectors_in_order_members_by_name_equal_rules_once(
    booted: Cluster, aggregator: ClusterRoleAggregator
) -> None:
    a, b, c = (res(READ, "example.com", x) for x in ("a", "b", "c"))
    await booted.create("clusterroles", role("m-2", [b, a], {"team": "x"}))
    await booted.create("clusterroles", role("m-1", [a], {"team": "y", "tier": "gold"}))
    await booted.create("clusterroles", role("m-3", [c], {"team": "y"}))
    await booted.create("clusterroles", role("m-4", [c], {"team": "z"}))
    combined = role("combined", [], {"team": "x"})  # matches its own selector: left out
    combined["aggregationRule"] = {"clusterRoleSelectors": [
        {"matchExpressions": [{"key": "team", "operator": "In", "values": ["y", "z"]},
                              {"key": "tier", "operator": "DoesNotExist"}]},
        {"matchLabels": {"team": "x"}},
    ]}  # fmt: skip
    await booted.create("clusterroles", combined)
    await aggregator.wait_idle()
    # first selector: m-3, m-4 (m-1 has a tier); second: m-2 (combined itself excluded)
    assert (await booted.get("clusterroles", "combined"))["rules"] == [c, b, a]


async def test_a_burst_of_changes(booted: Cluster, aggregator: ClusterRoleAggregator) -> None:
    label = {f"{GROUP}/aggregate-to-view": "true"}
    made = [res(READ, "burst.example.com", f"r{i}") for i in range(20)]
    await asyncio.gather(
        *(booted.create("clusterroles", role(f"burst-{i}", [r], label)) for i, r in enumerate(made))
    )
    await aggregator.wait_idle()
    rules = (await booted.get("clusterroles", "admin"))["rules"]
    assert all(r in rules for r in made)


async def test_hand_edits_of_aggregated_rules_are_undone(
    booted: Cluster, aggregator: ClusterRoleAggregator
) -> None:
    view = await booted.get("clusterroles", "view")
    stock = view["rules"]
    view["rules"] = [res(READ, "", "secrets")]
    await booted.put("clusterroles", view)
    await aggregator.wait_idle()
    assert (await booted.get("clusterroles", "view"))["rules"] == stock


async def test_rules_emptied_when_nothing_matches(
    booted: Cluster, aggregator: ClusterRoleAggregator
) -> None:
    """The rules a user wrote (so co-owned) still go when nothing is selected any more."""
    lonely = role("lonely", [res(READ, "", "pods")])
    lonely["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"nobody": "here"}}]}
    await booted.create("clusterroles", lonely)
    await aggregator.wait_idle()
    assert not (await booted.get("clusterroles", "lonely")).get("rules")


def test_label_selector_of() -> None:
    empty = label_selector_of({})
    assert empty.matches({})
    assert empty.matches({"a": "b"})
    selector = label_selector_of({
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]},
                             {"key": "team", "operator": "Exists"}],
    })  # fmt: skip
    assert selector.matches({"app": "web", "team": "a"})
    assert selector.matches({"app": "web", "team": "a", "tier": "front"})
    assert not selector.matches({"app": "web", "team": "a", "tier": "db"})
    assert not selector.matches({"app": "web"})
    with pytest.raises(SelectorError, match='"Near" is not a valid label selector operator'):
        label_selector_of({"matchExpressions": [{"key": "a", "operator": "Near"}]})


async def test_a_deleted_aggregated_role_stays_deleted(
    booted: Cluster, aggregator: ClusterRoleAggregator
) -> None:
    await booted.delete("clusterroles", "view")
    widgets = res(READ, "example.com", "widgets")
    label = {f"{GROUP}/aggregate-to-view": "true"}
    await booted.create("clusterroles", role("widget-viewer", [widgets], label))
    await aggregator.wait_idle()
    with pytest.raises(APIError) as caught:
        await booted.get("clusterroles", "view")
    assert caught.value.code == 404
    assert widgets not in (await booted.get("clusterroles", "edit"))["rules"]


async def test_changes_made_while_stopped_are_caught_up(booted: Cluster) -> None:
    widgets = res(READ, "example.com", "widgets")
    label = {f"{GROUP}/aggregate-to-view": "true"}
    await booted.create("clusterroles", role("widget-viewer", [widgets], label))
    controller = ClusterRoleAggregator(booted.registry, booted.catalogue, debounce_seconds=0)
    controller.start()
    try:
        await controller.wait_idle()
    finally:
        await controller.close()
    assert widgets in (await booted.get("clusterroles", "admin"))["rules"]
