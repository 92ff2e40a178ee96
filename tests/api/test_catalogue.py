"""The resource catalogue: built-in kinds derived from lightkube-models and kubernetes-validate,
the hand-written additions, the JSON cache, schema lookups and Table cells."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kubelite.api import catalogue as cat
from kubelite.api.catalogue import (
    STANDARD_VERBS,
    Catalogue,
    CatalogueError,
    Column,
    ResourceInfo,
    extra,
    load_builtin_catalogue,
)
from kubelite.server import table as rendering


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_builtin_catalogue(tmp_path_factory.mktemp("cache"))


def info(catalogue: Catalogue, group: str, version: str, plural: str) -> ResourceInfo:
    found = catalogue.lookup(group, version, plural)
    assert found is not None, (group, version, plural)
    return found


def test_configmap(catalogue: Catalogue) -> None:
    cm = info(catalogue, "", "v1", "configmaps")
    assert (cm.group, cm.version, cm.kind, cm.singular) == ("", "v1", "ConfigMap", "configmap")
    assert cm.namespaced
    assert cm.short_names == ("cm",)
    assert cm.verbs == STANDARD_VERBS  # includes watch and deletecollection
    assert cm.subresources == ()
    assert cm.list_kind == "ConfigMapList"
    assert (cm.group_version, cm.api_version, cm.qualified_resource) == ("v1", "v1", "configmaps")
    assert cm.schema_ref == "io.k8s.api.core.v1.ConfigMap"
    assert cm.strategic_merge
    assert [c.name for c in cm.table_columns] == ["Name", "Data", "Age"]
    assert catalogue.lookup_kind("", "v1", "ConfigMap") is cm
    assert catalogue.lookup_api_version("v1", "ConfigMap") is cm


def test_deployment(catalogue: Catalogue) -> None:
    deploy = info(catalogue, "apps", "v1", "deployments")
    assert deploy.kind == "Deployment"
    assert deploy.api_version == "apps/v1"
    assert deploy.qualified_resource == "deployments.apps"
    assert deploy.short_names == ("deploy",)
    assert deploy.categories == ("all",)
    assert set(deploy.subresources) == {"scale", "status"}
    scale = deploy.subresource("scale")
    assert scale is not None
    assert (scale.group, scale.version, scale.kind) == ("autoscaling", "v1", "Scale")
    assert scale.verbs == ("get", "patch", "update")
    status = deploy.subresource("status")
    assert status is not None
    assert (status.group, status.version, status.kind) == ("apps", "v1", "Deployment")
    assert [c.name for c in deploy.table_columns] == [
        "Name",
        "Ready",
        "Up-to-date",
        "Available",
        "Age",
    ]
    assert catalogue.lookup_api_version("apps/v1", "Deployment") is deploy


def test_namespace_is_cluster_scoped(catalogue: Catalogue) -> None:
    ns = info(catalogue, "", "v1", "namespaces")
    assert not ns.namespaced
    assert ns.short_names == ("ns",)
    assert set(ns.subresources) == {"finalize", "status"}
    assert "deletecollection" not in ns.verbs  # as in kube-apiserver


def test_custom_resource_definition(catalogue: Catalogue) -> None:
    crd = info(catalogue, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert crd.kind == "CustomResourceDefinition"
    assert not crd.namespaced
    assert crd.short_names == ("crd", "crds")
    assert crd.categories == ("api-extensions",)
    assert crd.subresources == ("status",)
    assert [c.name for c in crd.table_columns] == ["Name", "Created At"]


def test_served_versions_and_groups(catalogue: Catalogue) -> None:
    assert len(catalogue) > 40
    assert all(cat.SERVED_VERSION.fullmatch(i.version) for i in catalogue)  # GA only
    groups = catalogue.groups()
    assert groups[0].name == ""
    assert groups[0].versions == ("v1",)
    names = [g.name for g in groups]
    for group in (
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "coordination.k8s.io",
        "policy",
        "networking.k8s.io",
        "storage.k8s.io",
        "autoscaling",
        "apiextensions.k8s.io",
        "events.k8s.io",
        "discovery.k8s.io",
    ):
        assert group in names
    assert len(names) == len(set(names))
    autoscaling = catalogue.group("autoscaling")
    assert autoscaling is not None
    assert autoscaling.versions == ("v2", "v1")
    assert autoscaling.preferred_version == "v2"
    hpa_versions = [i.version for i in catalogue if i.plural == "horizontalpodautoscalers"]
    assert hpa_versions == ["v2", "v1"]


def test_resources_of_a_group_version_are_sorted(catalogue: Catalogue) -> None:
    plurals = [i.plural for i in catalogue.resources("", "v1")]
    assert plurals == sorted(plurals)
    assert {"pods", "services", "secrets", "configmaps", "namespaces"} <= set(plurals)


def test_every_kind_has_its_openapi_definition(catalogue: Catalogue) -> None:
    definitions = cat.load_schema_definitions()
    strict = cat.load_schema_definitions(strict=True)
    for i in catalogue:
        definition = definitions[i.schema_ref]
        gvks = definition["x-kubernetes-group-version-kind"]
        assert {"group": i.group, "version": i.version, "kind": i.kind} in gvks, i.kind
        assert i.schema_ref in strict
        for sub in i.known_subresources:
            assert cat.definition_name(sub.group, sub.version, sub.kind) is not None, sub


def test_schema_for_resolves_refs() -> None:
    deploy = ResourceInfo(
        "apps", "v1", "Deployment", "deployments", True, schema_ref="io.k8s.api.apps.v1.Deployment"
    )
    schema = cat.schema_for(deploy)
    spec_ref = schema["properties"]["spec"]["$ref"]
    assert spec_ref == "#/$defs/io.k8s.api.apps.v1.DeploymentSpec"
    pod_spec = cat.resolve_ref(
        cat.resolve_ref(cat.resolve_ref(spec_ref)["properties"]["template"]["$ref"])["properties"][
            "spec"
        ]["$ref"]
    )
    containers = pod_spec["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert schema["$defs"]["io.k8s.api.core.v1.PodSpec"] is pod_spec
    strict = cat.schema_for(deploy, strict=True)
    assert strict["additionalProperties"] is False
    with pytest.raises(KeyError):
        cat.schema_for(ResourceInfo("example.com", "v1", "Widget", "widgets", True))


def test_verbs_are_kubernetes_verbs(catalogue: Catalogue) -> None:
    for i in catalogue:
        assert set(i.verbs) <= set(STANDARD_VERBS), i.kind
        assert list(i.verbs) == sorted(i.verbs)
    reviews = info(catalogue, "authorization.k8s.io", "v1", "subjectaccessreviews")
    assert reviews.verbs == ("create",)


def test_pod_subresources_known_but_only_those_kubelite_serves_served(
    catalogue: Catalogue,
) -> None:
    pods = info(catalogue, "", "v1", "pods")
    assert pods.subresources == ("binding", "ephemeralcontainers", "eviction", "log", "status")
    log = pods.subresource("log")
    assert log is not None
    assert log.served
    resize = pods.subresource("resize")
    assert resize is not None
    assert not resize.served
    eviction = pods.subresource("eviction")
    assert eviction is not None
    assert (eviction.group, eviction.version, eviction.kind) == ("policy", "v1", "Eviction")
    assert eviction.served
    assert pods.categories == ("all",)
    assert pods.short_names == ("po",)


def test_scale_subresources(catalogue: Catalogue) -> None:
    scalable = {(i.group, i.plural) for i in catalogue if "scale" in i.subresources}
    assert scalable == {
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("", "replicationcontrollers"),
    }


def test_category_all_matches_kubectl_get_all(catalogue: Catalogue) -> None:
    in_all = {i.plural for i in catalogue if "all" in i.categories}
    assert in_all == {
        "pods",
        "services",
        "replicationcontrollers",
        "deployments",
        "replicasets",
        "statefulsets",
        "daemonsets",
        "jobs",
        "cronjobs",
        "horizontalpodautoscalers",
    }


def test_hand_written_tables_name_served_kinds(catalogue: Catalogue) -> None:
    served = {(i.group, i.plural) for i in catalogue}
    tables: list[object] = [
        extra.SHORT_NAMES,
        extra.CATEGORIES,
        extra.TABLE_COLUMNS,
    ]
    for table in tables:
        assert isinstance(table, dict | frozenset)
        assert set(table) <= served, set(table) - served


def test_short_names_are_unambiguous(catalogue: Catalogue) -> None:
    owners: dict[str, set[str]] = {}
    for i in catalogue:
        for short in i.short_names:
            owners.setdefault(short, set()).add(i.plural)
    # "ev" is both core and events.k8s.io events, as in kube-apiserver; same plural, no clash.
    assert all(len(plurals) == 1 for plurals in owners.values()), owners
    expected = {
        "cm": "configmaps",
        "svc": "services",
        "po": "pods",
        "ns": "namespaces",
        "sa": "serviceaccounts",
        "pvc": "persistentvolumeclaims",
        "pv": "persistentvolumes",
        "rs": "replicasets",
        "sts": "statefulsets",
        "ds": "daemonsets",
        "cj": "cronjobs",
        "hpa": "horizontalpodautoscalers",
        "ing": "ingresses",
        "netpol": "networkpolicies",
        "pdb": "poddisruptionbudgets",
        "ep": "endpoints",
        "ev": "events",
        "no": "nodes",
        "limits": "limitranges",
        "quota": "resourcequotas",
        "rc": "replicationcontrollers",
        "crds": "customresourcedefinitions",
        "pc": "priorityclasses",
        "sc": "storageclasses",
    }
    assert {short: owners[short].pop() for short in expected} == expected


def test_cache_is_written_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_builtin_catalogue(tmp_path)
    files = list(tmp_path.glob("catalogue-*.json"))
    assert len(files) == 1
    assert files[0] == cat.cache_path(tmp_path)
    document = json.loads(files[0].read_text())
    assert document["key"] == cat.cache_key()
    assert len(document["resources"]) == len(first)

    def no_rebuild() -> Catalogue:
        raise AssertionError("a warm start must read the cache, not derive the catalogue")

    monkeypatch.setattr(cat, "build_builtin_catalogue", no_rebuild)
    second = load_builtin_catalogue(tmp_path)
    assert second == first
    assert second is not first
    assert list(second) == list(first)


def test_corrupt_or_stale_cache_is_rebuilt(tmp_path: Path) -> None:
    good = load_builtin_catalogue(tmp_path)
    path = cat.cache_path(tmp_path)
    path.write_text("{not json")
    assert load_builtin_catalogue(tmp_path) == good
    stale = json.loads(path.read_text())
    stale["key"]["lightkube-models"] = "0.0.0"
    stale["resources"] = []
    path.write_text(json.dumps(stale))
    assert load_builtin_catalogue(tmp_path) == good
    assert json.loads(path.read_text())["key"] == cat.cache_key()


def test_unwritable_cache_dir_still_loads(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert len(load_builtin_catalogue(blocker / "cache")) > 40  # mkdir fails: no cache


def test_warm_load_is_fast(tmp_path: Path) -> None:
    load_builtin_catalogue(tmp_path)
    start = time.perf_counter()
    load_builtin_catalogue(tmp_path)
    assert time.perf_counter() - start < 0.2


def test_json_round_trip(catalogue: Catalogue) -> None:
    for i in catalogue:
        assert ResourceInfo.from_json(json.loads(json.dumps(i.to_json()))) == i


def test_add_and_remove_a_custom_resource(catalogue: Catalogue) -> None:
    own = Catalogue(catalogue)
    widget = ResourceInfo(
        group="example.com",
        version="v1",
        kind="Widget",
        plural="widgets",
        namespaced=True,
        subresources=("status", "scale"),
        short_names=("wd",),
        builtin=False,
    )
    own.add(widget)
    assert own.lookup("example.com", "v1", "widgets") is widget
    assert own.lookup_api_version("example.com/v1", "Widget") is widget
    assert widget.singular == "widget"
    assert widget.list_kind == "WidgetList"
    assert not widget.strategic_merge
    assert [c.name for c in widget.table_columns] == ["Name", "Age"]
    status, scale = widget.subresource("status"), widget.subresource("scale")
    assert status is not None
    assert (status.group, status.kind) == ("example.com", "Widget")
    assert scale is not None
    assert (scale.group, scale.version, scale.kind) == ("autoscaling", "v1", "Scale")
    assert [g.name for g in own.groups()][-1] == "example.com"  # after the built-in groups
    assert len(own) == len(catalogue) + 1

    with pytest.raises(CatalogueError):
        own.add(replace(widget, plural="widgetz"))  # same kind at the same group-version
    v2 = replace(widget, short_names=("w",))
    own.add(v2, replace=True)
    assert own.lookup("example.com", "v1", "widgets") is v2

    assert own.remove("example.com", "v1", "widgets") is v2
    assert own.lookup("example.com", "v1", "widgets") is None
    assert own.lookup_kind("example.com", "v1", "Widget") is None
    assert own == catalogue
    with pytest.raises(KeyError):
        own.remove("example.com", "v1", "widgets")


def test_version_priority() -> None:
    versions = ["v1alpha1", "v1", "v2beta1", "v11alpha2", "v1beta2", "v2", "foo", "v1beta1"]
    assert sorted(versions, key=cat.version_priority) == [
        "v2",
        "v1",
        "v2beta1",
        "v1beta2",
        "v1beta1",
        "v11alpha2",
        "v1alpha1",
        "foo",
    ]


NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def cells(i: ResourceInfo, obj: dict[str, Any]) -> dict[str, object]:
    return {c.name: rendering.render_cell(c, obj, NOW) for c in i.table_columns}


def test_table_cells_for_common_kinds(catalogue: Catalogue) -> None:
    pod = {
        "metadata": {"name": "web", "creationTimestamp": "2026-01-01T11:57:50Z"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "node-1"},
        "status": {
            "phase": "Running",
            "containerStatuses": [
                {"name": "a", "ready": True, "restartCount": 2},
                {"name": "b", "ready": False, "restartCount": 1},
            ],
        },
    }
    assert cells(info(catalogue, "", "v1", "pods"), pod) == {
        "Name": "web",
        "Ready": "1/2",
        "Status": "Running",
        "Restarts": "3",
        "Age": "2m10s",
        "IP": "<none>",
        "Node": "node-1",
        "Nominated Node": "<none>",
    }
    restarted = {"finishedAt": "2026-01-01T11:59:48Z", "exitCode": 1}
    pod["status"]["containerStatuses"][0]["lastState"] = {"terminated": restarted}
    pod["spec"]["initContainers"] = [{"name": "side", "restartPolicy": "Always"}]
    pod["status"]["initContainerStatuses"] = [{"name": "side", "ready": True, "restartCount": 0}]
    found = cells(info(catalogue, "", "v1", "pods"), pod)
    assert (found["Ready"], found["Restarts"]) == ("2/3", "3 (12s ago)")
    deployment = {
        "metadata": {"name": "d", "creationTimestamp": "2026-01-01T11:59:15Z"},
        "spec": {"replicas": 3},
        "status": {"readyReplicas": 2, "updatedReplicas": 3},
    }
    assert cells(info(catalogue, "apps", "v1", "deployments"), deployment) == {
        "Name": "d",
        "Ready": "2/3",
        "Up-to-date": 3,
        "Available": 0,
        "Age": "45s",
    }
    configmap = {
        "metadata": {"name": "cm", "creationTimestamp": "2025-12-31T12:00:00Z"},
        "data": {"a": "1", "b": "2"},
        "binaryData": {"c": ""},
    }
    assert cells(info(catalogue, "", "v1", "configmaps"), configmap) == {
        "Name": "cm",
        "Data": 3,
        "Age": "24h",
    }
    service = {"metadata": {"name": "s"}, "spec": {"type": "NodePort", "clusterIP": "10.0.0.1"}}
    assert cells(info(catalogue, "", "v1", "services"), service) == {
        "Name": "s",
        "Type": "NodePort",
        "Cluster-IP": "10.0.0.1",
        "Age": "<unknown>",
    }
    namespace = {"metadata": {"name": "ns"}, "status": {"phase": "Terminating"}}
    assert cells(info(catalogue, "", "v1", "namespaces"), namespace)["Status"] == "Terminating"
    crd = {"metadata": {"name": "widgets.example.com", "creationTimestamp": "2026-01-01T00:00:00Z"}}
    crds = info(catalogue, "apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert cells(crds, crd) == {"Name": "widgets.example.com", "Created At": "2026-01-01T00:00:00Z"}


def test_every_column_renders_an_empty_object(catalogue: Catalogue) -> None:
    for i in catalogue:
        assert i.table_columns[0].name == "Name"
        for column in i.table_columns:
            rendering.render_cell(column, {}, NOW)  # every path parses; no render mode fails


def test_json_path_values() -> None:
    obj = {
        "a": {"b": [{"n": 1, "ok": True}, {"n": 2, "ok": False}, {"n": 3, "ok": True}]},
        "m": {"x": 1, "y": 2},
    }
    assert cat.json_path_values(".a.b[*].n", obj) == [1, 2, 3]
    assert cat.json_path_values(".a.b[-1].n", obj) == [3]
    assert cat.json_path_values(".a.b[?(@.ok==true)].n", obj) == [1, 3]
    assert cat.json_path_values(".m[*]", obj) == [1, 2]
    assert cat.json_path_values(".a['b'][0].n", obj) == [1]
    assert cat.json_path_values(".missing.deeper", obj) == []
    with pytest.raises(ValueError, match="unsupported JSON path"):
        cat.json_path_values("a.b", obj)
    column = Column("X", json_path=".a.b[*].n")
    assert rendering.render_cell(column, obj) == "1,2,3"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (45, "45s"),
        (119, "119s"),
        (130, "2m10s"),
        (300, "5m"),
        (3599, "59m"),
        (3 * 3600 + 12 * 60, "3h12m"),
        (20 * 3600, "20h"),
        (4 * 86400 + 3 * 3600, "4d3h"),
        (120 * 86400, "120d"),
        (3 * 365 * 86400 + 10 * 86400, "3y10d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: int, shown: str) -> None:
    assert rendering.human_duration(seconds) == shown
