"""Objects stored before kubelite decoded, defaulted and validated built-in kinds (written as a
client sent them): they read, update and delete as kube-apiserver would, which defaults what
it reads from storage; garbage in them never turns a request into a 500."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.kinds import new_registry
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.selectors import object_matcher
from kubelite.storage import Store

Obj = dict[str, Any]
MERGE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


def info(catalogue: Catalogue, group: str, plural: str) -> ResourceInfo:
    found = catalogue.lookup(group, "v1", plural)
    assert found is not None
    return found


async def stored(store: Store, key: str, obj: Obj) -> None:
    await store.create(key, orjson.dumps(obj))


@pytest.fixture
async def registry(store: Store, catalogue: Catalogue) -> Registry:
    registry = new_registry(store, catalogue)
    await registry.create(
        info(catalogue, "", "namespaces"), None, {"metadata": {"name": "default"}}
    )
    return registry


async def test_an_undefaulted_job_takes_a_label_patch(
    store: Store, registry: Registry, catalogue: Catalogue
) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "default", "uid": "u-1", "labels": {}},
        "spec": {
            "manualSelector": True,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]},
            },
        },
    }
    await stored(store, "/registry/batch/jobs/default/j", job)
    jobs = info(catalogue, "batch", "jobs")
    patched = await registry.patch(
        jobs, "default", "j", MERGE, {"metadata": {"labels": {"x": "y"}}}
    )
    assert patched["metadata"]["labels"]["x"] == "y"
    assert patched["spec"]["completions"] == 1  # defaulted as it was read


async def test_a_service_stored_with_a_cluster_ip_only_takes_a_label_patch(
    store: Store, registry: Registry, catalogue: Catalogue
) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": "default", "uid": "u-2"},
        "spec": {"clusterIP": "None", "ports": [{"port": 80}]},
    }
    await stored(store, "/registry/services/default/s", service)
    services = info(catalogue, "", "services")
    patched = await registry.patch(
        services, "default", "s", MERGE, {"metadata": {"labels": {"x": "y"}}}
    )
    assert patched["spec"]["clusterIPs"] == ["None"]


async def test_labels_of_another_shape_match_no_selector(
    store: Store, registry: Registry, catalogue: Catalogue
) -> None:
    bad = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "uid": "u-3", "labels": ["a", "b"]},
    }
    await stored(store, "/registry/configmaps/default/c", bad)
    configmaps = info(catalogue, "", "configmaps")
    for text in ("a=b", "a!=b", "a"):
        listing = await registry.list(
            configmaps, "default", ListOptions(label_selector=object_matcher(text, ""))
        )
        names = [item["metadata"]["name"] for item in listing["items"]]
        assert names == (["c"] if text == "a!=b" else [])
