"""The field manager's operations on plain objects: what they leave alone (the stored object, the
applied configuration), the Scale view's mapping of the replica count's owners, and the 10-entry
cap, without a server."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.fieldmanager import managedfields
from kubelite.api.fieldmanager.apply import apply
from kubelite.api.machinery import scale

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


def info_of(catalogue: Catalogue, group: str, version: str, plural: str) -> ResourceInfo:
    found = catalogue.lookup(group, version, plural)
    assert found is not None
    return found


def deployment(replicas: int, image: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "template": {"spec": {"containers": [{"name": "app", "image": image}]}},
        },
    }


def test_apply_changes_neither_the_live_object_nor_the_configuration(
    catalogue: Catalogue,
) -> None:
    info = info_of(catalogue, "apps", "v1", "deployments")
    live = apply(info, None, deployment(2, "app:1"), "ci")
    live["metadata"]["resourceVersion"] = "7"
    config = deployment(3, "app:2")
    live_before, config_before = copy.deepcopy(live), copy.deepcopy(config)
    merged = apply(info, live, config, "ci", force=True)
    assert live == live_before
    assert config == config_before
    merged["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    merged["metadata"]["labels"]["x"] = "y"
    assert live == live_before
    assert config == config_before


def test_track_update_changes_neither_the_stored_object_nor_shares_its_entries(
    catalogue: Catalogue,
) -> None:
    info = info_of(catalogue, "", "v1", "configmaps")
    live: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
    managedfields.track_update(info, None, live, "creator")
    live["metadata"]["resourceVersion"] = "3"
    before = copy.deepcopy(live)
    new = copy.deepcopy(live)
    new["metadata"].pop("resourceVersion")
    managedfields.track_update(info, live, new, "other")  # changes nothing: entries kept
    assert live == before
    assert new["metadata"]["managedFields"] == live["metadata"]["managedFields"]
    assert new["metadata"]["managedFields"] is not live["metadata"]["managedFields"]
    new["data"] = {"a": "1"}
    managedfields.track_update(info, live, new, "other")
    assert live == before
    assert [e["manager"] for e in new["metadata"]["managedFields"]] == ["creator", "other"]


def test_the_scale_view_maps_the_replica_count_owners_both_ways(catalogue: Catalogue) -> None:
    info = info_of(catalogue, "apps", "v1", "deployments")
    parent = apply(info, None, deployment(2, "app:1"), "ci")
    replicas = managedfields.dotted_path(".spec.replicas")
    (owner,) = scale.to_scale_entries(parent["metadata"]["managedFields"], replicas)
    assert (owner["manager"], owner["apiVersion"]) == ("ci", "autoscaling/v1")
    assert owner["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    hpa = {**owner, "manager": "hpa", "subresource": "scale"}
    back = scale.from_scale_entries(parent["metadata"]["managedFields"], [hpa], replicas, "apps/v1")
    by_manager = {e["manager"]: e for e in back}
    assert by_manager["hpa"]["apiVersion"] == "apps/v1"
    assert by_manager["hpa"]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in by_manager["ci"]["fieldsV1"]["f:spec"]


def test_a_time_only_change_keeps_the_stored_times(catalogue: Catalogue) -> None:
    info = info_of(catalogue, "", "v1", "configmaps")
    current: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    current["data"] = {"a": "1"}
    managedfields.track_update(info, None, current, "me")
    new = copy.deepcopy(current)
    new["metadata"]["managedFields"][0]["time"] = "2030-01-01T00:00:00Z"
    managedfields.keep_stored_times(new, current)
    assert new["metadata"]["managedFields"] == current["metadata"]["managedFields"]
    new["data"] = {"a": "2"}
    new["metadata"]["managedFields"] = copy.deepcopy(current["metadata"]["managedFields"])
    new["metadata"]["managedFields"][0]["time"] = "2030-01-01T00:00:00Z"
    managedfields.keep_stored_times(new, current)  # another change too: the new times stand
    assert new["metadata"]["managedFields"][0]["time"] == "2030-01-01T00:00:00Z"
