"""OpenAPI v3 documents generated from the catalogue (unit level: no server)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.server import openapi


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_builtin_catalogue(tmp_path_factory.mktemp("cache"))


def _doc(catalogue: Catalogue, path: str) -> dict[str, Any]:
    document = openapi.openapi_document(catalogue, path, {})
    assert document is not None
    return document


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                found.add(value)
            elif key != "description":
                _refs(value, found)
    elif isinstance(node, list):
        for item in node:
            _refs(item, found)


def test_root_lists_every_served_group_version(catalogue: Catalogue) -> None:
    root = _doc(catalogue, "/openapi/v3")
    expected = {f"apis/{i.group}/{i.version}" if i.group else f"api/{i.version}" for i in catalogue}
    assert set(root["paths"]) == expected
    assert {"api/v1", "apis/apps/v1", "apis/autoscaling/v2"} <= expected
    url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/apps/v1?hash=")
    assert _doc(catalogue, "/openapi/v3/") == root


def test_hash_is_stable_and_follows_content(catalogue: Catalogue) -> None:
    first = _doc(catalogue, "/openapi/v3")["paths"]["api/v1"]["serverRelativeURL"]
    openapi.clear_cache()
    again = load_builtin_catalogue()
    assert _doc(again, "/openapi/v3")["paths"]["api/v1"]["serverRelativeURL"] == first
    cm = again.lookup("", "v1", "configmaps")
    assert cm is not None
    again.add(replace(cm, short_names=("c",)), replace=True)  # same content, same hash
    assert _doc(again, "/openapi/v3")["paths"]["api/v1"]["serverRelativeURL"] == first
    again.remove("", "v1", "configmaps")
    changed = _doc(again, "/openapi/v3")["paths"]["api/v1"]["serverRelativeURL"]
    assert changed != first


@pytest.mark.parametrize(
    ("path", "item", "gvk"),
    [
        (
            "/openapi/v3/api/v1",
            "/api/v1/namespaces/{namespace}/configmaps/{name}",
            {"group": "", "version": "v1", "kind": "ConfigMap"},
        ),
        (
            "/openapi/v3/api/v1",
            "/api/v1/namespaces/{name}",
            {"group": "", "version": "v1", "kind": "Namespace"},
        ),
        (
            "/openapi/v3/apis/apps/v1",
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
            {"group": "apps", "version": "v1", "kind": "Deployment"},
        ),
    ],
)
def test_patch_operation_carries_gvk_and_field_validation(
    catalogue: Catalogue, path: str, item: str, gvk: dict[str, str]
) -> None:
    patch = _doc(catalogue, path)["paths"][item]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == gvk
    names = {p["name"]: p for p in patch["parameters"]}
    assert names["fieldValidation"]["in"] == "query"
    assert "requestBody" not in patch


def test_every_kind_has_a_path_and_a_schema(catalogue: Catalogue) -> None:
    for group, version in {(i.group, i.version) for i in catalogue}:
        prefix = f"/openapi/v3/apis/{group}/{version}" if group else f"/openapi/v3/api/{version}"
        document = _doc(catalogue, prefix)
        infos = catalogue.resources(group, version)
        gvks = [op["patch"]["x-kubernetes-group-version-kind"] for op in document["paths"].values()]
        assert sorted(g["kind"] for g in gvks) == sorted(i.kind for i in infos)
        schemas = document["components"]["schemas"]
        for info in infos:
            assert {"group": group, "version": version, "kind": info.kind} in schemas[
                info.schema_ref
            ]["x-kubernetes-group-version-kind"]


def test_schemas_are_openapi_v3_and_self_contained(catalogue: Catalogue) -> None:
    document = _doc(catalogue, "/openapi/v3/apis/apps/v1")
    schemas = document["components"]["schemas"]
    found: set[str] = set()
    _refs(schemas, found)
    assert found
    for ref in found:
        assert ref.startswith("#/components/schemas/")
        assert ref.removeprefix("#/components/schemas/") in schemas
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert deployment["properties"]["kind"]["type"] == "string"
    assert "io.k8s.api.core.v1.ConfigMap" not in schemas  # only what apps/v1 reaches
    assert "io.k8s.api.core.v1.PodSpec" in schemas


def test_documents_are_cached(catalogue: Catalogue) -> None:
    first = _doc(catalogue, "/openapi/v3/api/v1")
    assert _doc(catalogue, "/openapi/v3/api/v1") is first


@pytest.mark.parametrize(
    "path",
    ["/openapi/v2", "/openapi/v3/api/v2", "/openapi/v3/apis/nope/v1", "/openapi/v3/apis", "/api"],
)
def test_unknown_paths(catalogue: Catalogue, path: str) -> None:
    assert openapi.openapi_document(catalogue, path, {}) is None


def test_kind_without_definition_uses_schema_source(catalogue: Catalogue) -> None:
    crds = Catalogue(catalogue)
    widget = ResourceInfo("example.com", "v1", "Widget", "widgets", True, builtin=False)
    crds.add(widget)
    spec = {"type": "object", "properties": {"spec": {"type": "object"}}}
    document = openapi.openapi_document(
        crds, "/openapi/v3/apis/example.com/v1", {}, schema_source=lambda info: spec
    )
    assert document is not None
    schema = document["components"]["schemas"]["com.example.v1.Widget"]
    assert schema["properties"]["spec"] == {"type": "object"}
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "version": "v1", "kind": "Widget"}
    ]
    patch = document["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert patch["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Widget"
