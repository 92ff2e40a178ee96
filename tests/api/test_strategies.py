"""The kind table: each built-in kind's storages serve exactly the verbs Kubernetes declares for
it, and its strategy carries kube-apiserver's rules (generation, update policies, what DELETE
answers and does to dependents). Also the generic rules every kind shares: the propagation
policy's finalizers and the finalizer rule for objects being deleted."""

from __future__ import annotations

from typing import Any

import pytest

from kubelite.api.auth.authn import ServiceAccountTokens
from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.kinds import BuiltinKinds
from kubelite.api.kinds.apiextensions.customresources import CustomResourceStrategy
from kubelite.api.machinery.deletion import gc_finalizers
from kubelite.api.machinery.objectmeta import update_causes
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import DeleteOptions, SpeaksOwnKind, verbs
from kubelite.api.machinery.strategy import (
    DELETE_DEPENDENTS,
    ORPHAN_DEPENDENTS,
    UNSUPPORTED,
    Strategy,
)
from kubelite.storage import Store

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


@pytest.fixture
def registry(store: Store, catalogue: Catalogue) -> Registry:
    return Registry(store, BuiltinKinds(catalogue, ServiceAccountTokens("test-token")))


TABLE = BuiltinKinds(Catalogue())


def strategy(group: str, plural: str) -> Strategy:
    return TABLE.strategy(group, plural)


async def test_every_kinds_storages_serve_exactly_its_declared_verbs(
    registry: Registry, catalogue: Catalogue
) -> None:
    """The verbs a storage implements are the verbs lightkube-models records for the kind
    (kube-apiserver's own discovery), for every resource and every served subresource."""
    for info in catalogue:
        storages = registry.storages(info)
        assert verbs(storages[""]) == info.verbs, info.plural
        # beyond the catalogue's, only subresources naming their own kind (pods/exec...)
        own = {name for name, storage in storages.items() if isinstance(storage, SpeaksOwnKind)}
        assert set(storages) - {""} - own == set(info.subresources), info.plural
        for name in info.subresources:
            declared = info.subresource(name)
            assert declared is not None
            assert verbs(storages[name]) == declared.verbs, f"{info.plural}/{name}"


@pytest.mark.parametrize(
    ("group", "plural", "create_on_update", "unconditional", "returns_object"),
    [
        ("", "configmaps", False, True, False),
        ("", "endpoints", True, True, False),
        ("", "events", True, True, False),
        ("", "services", True, True, True),
        ("", "pods", False, True, True),
        ("", "serviceaccounts", False, True, True),
        ("apps", "deployments", False, True, False),
        ("coordination.k8s.io", "leases", True, False, False),
        ("rbac.authorization.k8s.io", "roles", True, True, False),
        ("policy", "poddisruptionbudgets", False, False, False),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", False, False, False),
        ("node.k8s.io", "runtimeclasses", True, False, False),
        ("storage.k8s.io", "storageclasses", False, True, True),
    ],
)
def test_update_and_delete_policies(
    group: str, plural: str, create_on_update: bool, unconditional: bool, returns_object: bool
) -> None:
    chosen = strategy(group, plural)
    assert chosen.allow_create_on_update is create_on_update
    assert chosen.allow_unconditional_update is unconditional
    assert chosen.returns_deleted_object is returns_object


def obj(**fields: Any) -> Obj:
    return {"apiVersion": "x", "kind": "X", "metadata": {"generation": 1}, **fields}


def bumped(chosen: Strategy, info: ResourceInfo, old: Obj, new: Obj) -> int:
    chosen.prepare_for_update(info, new, old)
    generation: int = new["metadata"].get("generation", 0)
    return generation


def test_generation_rules(catalogue: Catalogue) -> None:
    def info(group: str, plural: str) -> ResourceInfo:
        for candidate in catalogue:
            if (candidate.group, candidate.plural) == (group, plural):
                return candidate
        raise AssertionError(plural)

    rs, deploy = info("apps", "replicasets"), info("apps", "deployments")
    annotated = obj(spec={"a": 1})
    annotated["metadata"]["annotations"] = {"x": "y"}
    assert bumped(strategy("apps", "replicasets"), rs, obj(spec={"a": 1}), annotated) == 1
    assert bumped(strategy("apps", "replicasets"), rs, obj(spec={"a": 1}), obj(spec={"a": 2})) == 2
    annotated = obj(spec={"a": 1})
    annotated["metadata"]["annotations"] = {"x": "y"}
    assert bumped(strategy("apps", "deployments"), deploy, obj(spec={"a": 1}), annotated) == 2
    cm = info("", "configmaps")
    assert bumped(strategy("", "configmaps"), cm, obj(data={"a": 1}), obj(data={"b": 2})) == 0
    slices = info("discovery.k8s.io", "endpointslices")
    labelled = obj(endpoints=[])
    labelled["metadata"]["labels"] = {"x": "y"}
    chosen = strategy(slices.group, slices.plural)
    assert bumped(chosen, slices, obj(endpoints=[]), labelled) == 2
    hooks = info("admissionregistration.k8s.io", "validatingwebhookconfigurations")
    chosen = strategy(hooks.group, hooks.plural)
    assert bumped(chosen, hooks, obj(webhooks=[]), obj(webhooks=[{"name": "a"}])) == 2
    classes = info("scheduling.k8s.io", "priorityclasses")
    chosen = strategy(classes.group, classes.plural)
    assert bumped(chosen, classes, obj(value=1), obj(value=2)) == 1  # 1 on create, then never


def test_custom_resources_count_any_change_outside_metadata() -> None:
    chosen = CustomResourceStrategy()
    info = ResourceInfo("example.com", "v1", "Widget", "widgets", True, builtin=False)
    assert bumped(chosen, info, obj(status={"a": 1}), obj(status={"a": 2})) == 2
    with_status = ResourceInfo(
        "example.com", "v1", "Widget", "widgets", True, builtin=False, subresources=("status",)
    )
    assert bumped(chosen, with_status, obj(status={"a": 1}), obj(status={"a": 2})) == 1
    assert not chosen.allow_unconditional_update
    assert not chosen.allow_create_on_update


def test_default_garbage_collection_policies(catalogue: Catalogue) -> None:
    policies = {
        (info.group, info.version, info.plural): strategy(
            info.group, info.plural
        ).default_gc_policy(info)
        for info in catalogue
    }
    assert policies["batch", "v1", "jobs"] == ORPHAN_DEPENDENTS
    assert policies["", "v1", "replicationcontrollers"] == ORPHAN_DEPENDENTS
    assert policies["", "v1", "events"] == UNSUPPORTED
    assert policies["events.k8s.io", "v1", "events"] == UNSUPPORTED
    assert policies["apps", "v1", "deployments"] == DELETE_DEPENDENTS
    assert policies["batch", "v1", "cronjobs"] == DELETE_DEPENDENTS
    assert policies["", "v1", "configmaps"] == DELETE_DEPENDENTS


@pytest.mark.parametrize(
    ("default", "options", "before", "after"),
    [
        (DELETE_DEPENDENTS, {}, [], []),
        (DELETE_DEPENDENTS, {"propagation_policy": "Orphan"}, ["a"], ["a", "orphan"]),
        (DELETE_DEPENDENTS, {"propagation_policy": "Foreground"}, [], ["foregroundDeletion"]),
        (
            DELETE_DEPENDENTS,
            {"propagation_policy": "Foreground"},
            ["orphan", "a"],
            ["a", "foregroundDeletion"],
        ),
        (DELETE_DEPENDENTS, {"propagation_policy": "Background"}, ["orphan", "a"], ["a"]),
        (ORPHAN_DEPENDENTS, {}, [], ["orphan"]),
        (ORPHAN_DEPENDENTS, {"propagation_policy": "Background"}, [], []),
        (DELETE_DEPENDENTS, {}, ["foregroundDeletion"], ["foregroundDeletion"]),  # kept
        (ORPHAN_DEPENDENTS, {}, ["foregroundDeletion"], ["foregroundDeletion"]),  # theirs first
        (DELETE_DEPENDENTS, {"orphan_dependents": True}, [], ["orphan"]),
        (DELETE_DEPENDENTS, {"orphan_dependents": False}, ["orphan"], []),
        (UNSUPPORTED, {"propagation_policy": "Orphan"}, [], []),
        (UNSUPPORTED, {}, ["a", "orphan", "foregroundDeletion"], ["a"]),  # stripped
    ],
)
def test_propagation_policy_finalizers(
    default: str, options: dict[str, Any], before: list[str], after: list[str]
) -> None:
    assert gc_finalizers(default, DeleteOptions(**options), before) == after


def test_new_finalizers_are_refused_only_while_deleting() -> None:
    old: Obj = {"metadata": {"finalizers": ["b"]}}
    new: Obj = {"metadata": {"finalizers": ["b", "c", "a"]}}
    assert update_causes(new, old) == []
    old["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    (cause,) = update_causes(new, old)
    assert cause.field == "metadata.finalizers"
    assert cause.message == (
        "Forbidden: no new finalizers can be added if the object is being deleted, found new "
        'finalizers []string{"a", "c"}'
    )
    assert update_causes({"metadata": {"finalizers": []}}, old) == []  # removing is allowed


def test_reset_fields_name_what_each_write_keeps_from_the_stored_object(
    catalogue: Catalogue,
) -> None:
    """What server-side apply will not count as the writer's: the status on a write of the main
    resource (when a status subresource owns it), the spec (and for some kinds metadata) on a
    status write."""
    deployments = catalogue.lookup("apps", "v1", "deployments")
    configmaps = catalogue.lookup("", "v1", "configmaps")
    assert deployments is not None
    assert configmaps is not None
    deployment = strategy("apps", "deployments")
    assert deployment.reset_fields(deployments) == ("status",)
    assert deployment.status_strategy().reset_fields(deployments) == ("spec", "metadata.labels")
    assert strategy("", "configmaps").reset_fields(configmaps) == ()
