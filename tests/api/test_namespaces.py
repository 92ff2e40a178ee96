"""Namespace lifecycle: DELETE marks Terminating, the controller empties and purges, finalize.

These run the namespace kind's storages, the NamespaceLifecycle admission plugin and the
namespace controller over a real SQLite store, without HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.controllers.namespace import NamespaceController
from kubelite.api.errors import APIError
from kubelite.api.kinds import new_registry
from kubelite.api.kinds.core.namespaces import (
    NamespaceLifecycleAdmission,
    NamespaceStrategy,
    namespace_info,
)
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import DeleteOptions
from kubelite.storage import Store, StoreOptions, open_store

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_builtin_catalogue(tmp_path_factory.mktemp("cache"))


def kind(catalogue: Catalogue, group: str, plural: str) -> ResourceInfo:
    info = catalogue.lookup(group, "v1", plural)
    assert info is not None
    return info


@dataclass
class Cluster:
    """The namespace kind at work: registry (with the admission plugin) and controller."""

    registry: Registry
    catalogue: Catalogue
    controller: NamespaceController

    @property
    def info(self) -> ResourceInfo:
        return self.controller.info

    async def delete(self, name: str, **options: Any) -> Obj:
        answer, _ = await self.registry.delete(self.info, None, name, DeleteOptions(**options))
        return answer

    async def finalize(self, name: str, body: Obj) -> Obj:
        body = {"metadata": {"name": name}, **body}
        obj, _ = await self.registry.update(self.info, None, name, body, subresource="finalize")
        return obj


def cluster_on(store: Store, catalogue: Catalogue) -> Cluster:
    registry = new_registry(store, catalogue)
    registry.admission.mutating.append(
        NamespaceLifecycleAdmission(registry, namespace_info(catalogue))
    )
    controller = NamespaceController(
        registry, catalogue, retry_min_seconds=0.01, retry_max_seconds=0.05
    )
    return Cluster(registry, catalogue, controller)


@pytest.fixture
async def lifecycle(store: Store, catalogue: Catalogue) -> AsyncIterator[Cluster]:
    cluster = cluster_on(store, catalogue)
    try:
        yield cluster
    finally:
        await cluster.controller.close()


async def make_ns(lc: Cluster, name: str) -> Obj:
    return await lc.registry.create(lc.info, None, {"metadata": {"name": name}})


async def make(lc: Cluster, group: str, plural: str, ns: str, name: str, **extra: Any) -> Obj:
    info = kind(lc.catalogue, group, plural)
    meta: Obj = {"name": name, **extra}
    body: Obj = {"metadata": meta}
    if plural == "deployments":
        body["spec"] = {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        }
    return await lc.registry.create(info, ns, body)


async def names(lc: Cluster, group: str, plural: str, ns: str | None) -> list[str]:
    listing = await lc.registry.list(kind(lc.catalogue, group, plural), ns)
    return [i["metadata"]["name"] for i in listing["items"]]


async def ns_exists(lc: Cluster, name: str) -> bool:
    return name in await names(lc, "", "namespaces", None)


def test_prepare_create_and_update(catalogue: Catalogue) -> None:
    strategy, info = NamespaceStrategy(), namespace_info(catalogue)
    obj: Obj = {"metadata": {"name": "a"}, "status": {"phase": "Terminating"}}
    strategy.prepare_for_create(info, obj)
    assert obj == {
        "metadata": {"name": "a"},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
    obj = {"metadata": {}, "spec": {"finalizers": ["example.com/x"]}}
    strategy.prepare_for_create(info, obj)
    assert obj["spec"]["finalizers"] == ["example.com/x", "kubernetes"]
    current = {
        "metadata": {},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Terminating"},
    }
    new: Obj = {"metadata": {"labels": {"a": "b"}}, "spec": {}, "status": {}}
    strategy.prepare_for_update(info, new, current)
    assert new["spec"] == {"finalizers": ["kubernetes"]}
    assert new["status"] == {"phase": "Terminating"}


async def test_delete_marks_terminating_then_409(lifecycle: Cluster) -> None:
    created = await make_ns(lifecycle, "team")
    obj = await lifecycle.delete("team")
    assert obj["metadata"]["deletionTimestamp"]
    assert obj["status"]["phase"] == "Terminating"
    assert obj["spec"]["finalizers"] == ["kubernetes"]
    assert int(obj["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    stored = await lifecycle.registry.get(lifecycle.info, None, "team")
    assert stored == obj
    with pytest.raises(APIError) as exc:
        await lifecycle.delete("team")
    assert exc.value.code == 409
    assert exc.value.reason == "Conflict"
    assert exc.value.message == (
        'Operation cannot be fulfilled on namespaces "team": The system is ensuring all content '
        "is removed from this namespace.  Upon completion, this namespace will automatically be "
        "purged by the system."
    )
    assert exc.value.details == {"name": "team", "kind": "namespaces"}


async def test_delete_missing_and_preconditions(lifecycle: Cluster) -> None:
    with pytest.raises(APIError) as exc:
        await lifecycle.delete("nope")
    assert (exc.value.code, exc.value.message) == (404, 'namespaces "nope" not found')
    await make_ns(lifecycle, "p")
    with pytest.raises(APIError) as exc:
        await lifecycle.delete("p", precondition_uid="other")
    assert exc.value.code == 409
    assert "Precondition failed: UID in precondition: other" in exc.value.message
    dry = await lifecycle.delete("p", dry_run=True)
    assert dry["status"]["phase"] == "Terminating"
    stored = await lifecycle.registry.get(lifecycle.info, None, "p")
    assert "deletionTimestamp" not in stored["metadata"]


@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
async def test_protected_namespaces(lifecycle: Cluster, name: str) -> None:
    await make_ns(lifecycle, name)
    with pytest.raises(APIError) as exc:
        await lifecycle.delete(name)
    assert exc.value.code == 403
    assert exc.value.reason == "Forbidden"
    assert (
        exc.value.message == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
    )
    assert exc.value.details == {"name": name, "kind": "namespaces"}
    assert await ns_exists(lifecycle, name)


async def test_create_in_terminating_and_missing(lifecycle: Cluster) -> None:
    await make_ns(lifecycle, "t")
    await make(lifecycle, "", "configmaps", "t", "keep", finalizers=["example.com/hold"])
    await lifecycle.delete("t")
    with pytest.raises(APIError) as exc:
        await make(lifecycle, "", "configmaps", "t", "cm")
    assert exc.value.code == 403
    assert exc.value.message == (
        'configmaps "cm" is forbidden: unable to create new content in namespace t because it '
        "is being terminated"
    )
    assert exc.value.details == {
        "name": "cm",
        "kind": "configmaps",
        "causes": [
            {
                "reason": "NamespaceTerminating",
                "message": "namespace t is being terminated",
                "field": "metadata.namespace",
            }
        ],
    }
    with pytest.raises(APIError) as exc:
        await make(lifecycle, "apps", "deployments", "t", "d")
    assert exc.value.message.startswith('deployments.apps "d" is forbidden: unable to create')
    with pytest.raises(APIError) as exc:
        await make(lifecycle, "", "configmaps", "missing", "cm")
    assert (exc.value.code, exc.value.message) == (404, 'namespaces "missing" not found')
    assert exc.value.details == {"name": "missing", "kind": "namespaces"}


async def test_controller_empties_and_purges(lifecycle: Cluster) -> None:
    for ns in ("ns", "ns2", "other"):
        await make_ns(lifecycle, ns)
        for i in range(3):
            await make(lifecycle, "", "configmaps", ns, f"cm{i}")
        await make(lifecycle, "apps", "deployments", ns, "web")
        await make(lifecycle, "", "secrets", ns, "s")
    lifecycle.controller.page_size = 2  # several pages per kind
    lifecycle.controller.start()
    await lifecycle.delete("ns")
    await asyncio.wait_for(lifecycle.controller.wait_idle(), 10)
    assert not await ns_exists(lifecycle, "ns")
    for ns in ("ns", "ns2", "other"):
        expect_cms = [] if ns == "ns" else ["cm0", "cm1", "cm2"]
        assert await names(lifecycle, "", "configmaps", ns) == expect_cms
        assert await names(lifecycle, "apps", "deployments", ns) == ([] if ns == "ns" else ["web"])
        assert await names(lifecycle, "", "secrets", ns) == ([] if ns == "ns" else ["s"])
    assert await ns_exists(lifecycle, "ns2")
    # the name is free again, and a new namespace of that name starts empty and Active
    again = await make_ns(lifecycle, "ns")
    assert again["spec"]["finalizers"] == ["kubernetes"]
    assert await names(lifecycle, "", "configmaps", "ns") == []


async def test_finalizer_holds_namespace(lifecycle: Cluster) -> None:
    await make_ns(lifecycle, "held")
    await make(lifecycle, "", "configmaps", "held", "a")
    await make(lifecycle, "", "configmaps", "held", "pinned", finalizers=["example.com/hold"])
    lifecycle.controller.start()
    await lifecycle.delete("held")
    await asyncio.wait_for(lifecycle.controller.wait_idle(), 10)
    assert await names(lifecycle, "", "configmaps", "held") == ["pinned"]
    cm_info = kind(lifecycle.catalogue, "", "configmaps")
    pinned = await lifecycle.registry.get(cm_info, "held", "pinned")
    assert pinned["metadata"]["deletionTimestamp"]
    ns = await lifecycle.registry.get(lifecycle.info, None, "held")
    assert ns["spec"]["finalizers"] == ["kubernetes"]
    assert ns["status"]["phase"] == "Terminating"
    await asyncio.sleep(0.1)  # several back-off retries; still held
    assert await ns_exists(lifecycle, "held")
    await lifecycle.registry.patch(
        cm_info,
        "held",
        "pinned",
        "application/merge-patch+json",
        {"metadata": {"finalizers": None}},
    )
    for _ in range(200):  # picked up by the back-off retry, no wake-up needed
        if not await ns_exists(lifecycle, "held"):
            break
        await asyncio.sleep(0.01)
    assert not await ns_exists(lifecycle, "held")
    assert await names(lifecycle, "", "configmaps", "held") == []


async def test_controller_resumes_after_restart(tmp_path: Path, catalogue: Catalogue) -> None:
    url = f"sqlite://{tmp_path}/state.db"
    options = StoreOptions(compaction_interval_seconds=0)
    store = await open_store(url, options)
    lc = cluster_on(store, catalogue)
    await make_ns(lc, "gone")
    await make_ns(lc, "stay")
    for i in range(5):
        await make(lc, "", "configmaps", "gone", f"cm{i}")
    await make(lc, "", "configmaps", "stay", "cm0")
    await lc.delete("gone")  # the controller is not running: a crash right after the mark
    await store.close()

    store = await open_store(url, options)
    lc = cluster_on(store, catalogue)
    try:
        assert await names(lc, "", "configmaps", "gone") == [f"cm{i}" for i in range(5)]
        lc.controller.start()
        await asyncio.wait_for(lc.controller.wait_idle(), 10)
        assert not await ns_exists(lc, "gone")
        assert await names(lc, "", "configmaps", "gone") == []
        assert await names(lc, "", "configmaps", "stay") == ["cm0"]
    finally:
        await lc.controller.close()
        await store.close()


async def test_finalize(lifecycle: Cluster) -> None:
    await make_ns(lifecycle, "f")
    await make(lifecycle, "", "configmaps", "f", "cm")
    obj = await lifecycle.finalize("f", {"spec": {"finalizers": ["example.com/x"]}})
    assert obj["spec"]["finalizers"] == ["example.com/x"]
    with pytest.raises(APIError) as exc:
        await lifecycle.finalize("f", {"spec": {"finalizers": ["bad"]}})
    assert exc.value.code == 422
    assert exc.value.message == (
        'Namespace "f" is invalid: spec.finalizers[0]: Invalid value: "bad": name is neither a '
        "standard finalizer name nor is it fully qualified"
    )
    with pytest.raises(APIError) as exc:
        await lifecycle.finalize("f", {"metadata": {"resourceVersion": "1"}, "spec": {}})
    assert exc.value.code == 409
    await lifecycle.delete("f")
    # "kubernetes" is gone, so the controller leaves this namespace alone (its content too)
    lifecycle.controller.start()
    await asyncio.wait_for(lifecycle.controller.wait_idle(), 10)
    assert await ns_exists(lifecycle, "f")
    assert await names(lifecycle, "", "configmaps", "f") == ["cm"]
    # clearing the last finalizer of a terminating namespace purges it in the same write
    obj = await lifecycle.finalize("f", {"spec": {"finalizers": []}})
    assert "finalizers" not in obj["spec"]
    assert not await ns_exists(lifecycle, "f")


async def test_close_is_prompt_and_idempotent(lifecycle: Cluster) -> None:
    lifecycle.controller.start()
    lifecycle.controller.start()
    await asyncio.wait_for(lifecycle.controller.wait_idle(), 10)
    await asyncio.wait_for(lifecycle.controller.close(), 1)
    await lifecycle.controller.close()
    with pytest.raises(RuntimeError):
        await lifecycle.controller.wait_idle()


async def test_content_that_orphans_by_default_is_deleted_too(lifecycle: Cluster) -> None:
    """The controller deletes in the background, as kube's namespace deleter: a Job (batch/v1
    orphans by default) must not wait on an ``orphan`` finalizer nobody removes."""
    await make_ns(lifecycle, "jobs")
    job = kind(lifecycle.catalogue, "batch", "jobs")
    template = {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}}
    await lifecycle.registry.create(
        job, "jobs", {"metadata": {"name": "j"}, "spec": {"template": template}}
    )
    lifecycle.controller.start()
    await lifecycle.delete("jobs")
    await asyncio.wait_for(lifecycle.controller.wait_idle(), 10)
    assert await names(lifecycle, "batch", "jobs", "jobs") == []
    assert not await ns_exists(lifecycle, "jobs")


async def test_the_first_delete_applies_the_propagation_policy(lifecycle: Cluster) -> None:
    await make_ns(lifecycle, "o")
    marked = await lifecycle.delete("o", propagation_policy="Orphan")
    assert marked["metadata"]["finalizers"] == ["orphan"]
    assert marked["status"]["phase"] == "Terminating"


async def test_finalizer_names_are_checked_on_create(lifecycle: Cluster) -> None:
    namespaces = kind(lifecycle.catalogue, "", "namespaces")
    body = {"metadata": {"name": "f"}, "spec": {"finalizers": [""]}}
    with pytest.raises(APIError) as exc:
        await lifecycle.registry.create(namespaces, None, body)
    assert (exc.value.code, exc.value.message) == (
        422,
        'Namespace "f" is invalid: spec.finalizers[0]: Invalid value: "": name is neither a '
        "standard finalizer name nor is it fully qualified",
    )
