"""OpenAPI v3 documents generated from the catalogue (unit level: no server)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.server import openapi


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_builtin_catalogue(tmp_path_factory.mktemp("cache"))


def _doc(catalogue: Catalogue, path: str) -> dict[str, Any]:
    document = openapi.openapi_document(catalogue, path)
    assert document is not None
    return document


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value)
            elif key == "properties" and isinstance(value, dict):
                for sub in value.values():  # property names are not keywords ("$ref")
                    _refs(sub, found)
            elif key not in ("description", "example", "default", "enum"):
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
    # kubectl computes apply's strategic merge patch from v3 when patch accepts it
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]


def test_every_kind_has_its_operations_and_a_schema(catalogue: Catalogue) -> None:
    for group, version in {(i.group, i.version) for i in catalogue}:
        prefix = f"/openapi/v3/apis/{group}/{version}" if group else f"/openapi/v3/api/{version}"
        document = _doc(catalogue, prefix)
        infos = catalogue.resources(group, version)
        actions: dict[str, set[str]] = {}
        for item in document["paths"].values():
            for method, op in item.items():
                if (
                    method != "parameters"
                    and op["x-kubernetes-group-version-kind"]["group"] == group
                ):
                    kind = op["x-kubernetes-group-version-kind"]["kind"]
                    actions.setdefault(kind, set()).add(op["x-kubernetes-action"])
        schemas = document["components"]["schemas"]
        for info in infos:
            expected = {
                {"create": "post", "update": "put"}.get(verb, verb)
                for verb in info.verbs
                if verb != "watch"  # a query parameter of list
            }
            assert expected <= actions[info.kind], info.kind
            assert {"group": group, "version": version, "kind": info.kind} in schemas[
                info.schema_ref
            ]["x-kubernetes-group-version-kind"]


def test_operations_of_a_namespaced_kind(catalogue: Catalogue) -> None:
    paths = _doc(catalogue, "/openapi/v3/apis/apps/v1")["paths"]
    base = "/apis/apps/v1/namespaces/{namespace}/deployments"
    ids = {
        path: {method: op["operationId"] for method, op in item.items() if method != "parameters"}
        for path, item in paths.items()
        if "deployments" in path
    }
    assert ids == {
        "/apis/apps/v1/deployments": {"get": "listAppsV1DeploymentForAllNamespaces"},
        base: {
            "get": "listAppsV1NamespacedDeployment",
            "post": "createAppsV1NamespacedDeployment",
            "delete": "deleteCollectionAppsV1NamespacedDeployment",
        },
        base + "/{name}": {
            "get": "readAppsV1NamespacedDeployment",
            "put": "replaceAppsV1NamespacedDeployment",
            "patch": "patchAppsV1NamespacedDeployment",
            "delete": "deleteAppsV1NamespacedDeployment",
        },
        base + "/{name}/status": {
            "get": "readAppsV1NamespacedDeploymentStatus",
            "put": "replaceAppsV1NamespacedDeploymentStatus",
            "patch": "patchAppsV1NamespacedDeploymentStatus",
        },
        base + "/{name}/scale": {
            "get": "readAppsV1NamespacedDeploymentScale",
            "put": "replaceAppsV1NamespacedDeploymentScale",
            "patch": "patchAppsV1NamespacedDeploymentScale",
        },
    }
    listing = paths[base]["get"]
    assert {p["name"] for p in listing["parameters"]} >= {"watch", "labelSelector", "limit"}
    assert listing["x-kubernetes-action"] == "list"
    ref = listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert ref == "#/components/schemas/io.k8s.api.apps.v1.DeploymentList"
    scale = paths[base + "/{name}/scale"]["patch"]
    assert scale["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
    }
    params = {p["name"]: p for p in paths[base + "/{name}"]["parameters"]}
    assert params["name"] == {
        "name": "name",
        "in": "path",
        "description": "name of the Deployment",
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }
    assert params["namespace"]["in"] == "path"
    assert params["namespace"]["required"] is True


def test_create_only_kind_has_no_patch(catalogue: Catalogue) -> None:
    paths = _doc(catalogue, "/openapi/v3/apis/authentication.k8s.io/v1")["paths"]
    item = paths["/apis/authentication.k8s.io/v1/tokenreviews"]
    assert set(item) == {"post", "parameters"}
    assert item["post"]["x-kubernetes-action"] == "post"


_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def check_openapi_v3(document: dict[str, Any]) -> None:
    """What an OpenAPI 3.0 loader requires of a document (the parts of the OpenAPI 3.0.x
    specification these documents use): every path template parameter declared ``in: path``
    and required, operation ids unique, responses present, each parameter with a name, a valid
    ``in`` and a schema, request bodies with content, every ``$ref`` resolving."""
    assert document["openapi"].startswith("3.0.")
    assert {"title", "version"} <= set(document["info"])
    schemas = document["components"]["schemas"]
    seen_ids: set[str] = set()
    for path, item in document["paths"].items():
        assert path.startswith("/")
        template = set(re.findall(r"{([^}]+)}", path))
        shared = item.get("parameters", [])
        for method, op in item.items():
            if method == "parameters":
                continue
            assert method in _METHODS, (path, method)
            params = shared + op.get("parameters", [])
            keys = [(p["name"], p["in"]) for p in params]
            assert len(keys) == len(set(keys)), (path, method, keys)
            for p in params:
                assert p["in"] in ("query", "header", "path", "cookie")
                assert "schema" in p or "content" in p
                if p["in"] == "path":
                    assert p.get("required") is True
                    assert p["name"] in template, (path, p["name"])
            assert {p["name"] for p in params if p["in"] == "path"} == template, (path, method)
            assert op["operationId"] not in seen_ids, op["operationId"]
            seen_ids.add(op["operationId"])
            assert op["responses"]
            for code, response in op["responses"].items():
                assert code == "default" or re.fullmatch(r"[1-5]\d\d", code)
                assert isinstance(response["description"], str)
            if "requestBody" in op:
                assert op["requestBody"]["content"]
    found: set[str] = set()
    _refs(document, found)
    for ref in found:
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.removeprefix("#/components/schemas/") in schemas, ref


def test_every_document_is_valid_openapi_v3(catalogue: Catalogue) -> None:
    root = _doc(catalogue, "/openapi/v3")
    for entry in root["paths"].values():
        check_openapi_v3(_doc(catalogue, entry["serverRelativeURL"].split("?")[0]))


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
    assert openapi.openapi_document(catalogue, path) is None


def test_kind_without_definition_uses_schema_source(catalogue: Catalogue) -> None:
    crds = Catalogue(catalogue)
    widget = ResourceInfo("example.com", "v1", "Widget", "widgets", True, builtin=False)
    crds.add(widget)
    spec = {"type": "object", "properties": {"spec": {"type": "object"}}}
    document = openapi.openapi_document(
        crds, "/openapi/v3/apis/example.com/v1", schema_source=lambda info: spec
    )
    assert document is not None
    schema = document["components"]["schemas"]["com.example.v1.Widget"]
    assert schema["properties"]["spec"] == {"type": "object"}
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "version": "v1", "kind": "Widget"}
    ]
    patch = document["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert patch["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Widget"
    # no strategic merge for custom resources, as kube-apiserver
    assert "application/strategic-merge-patch+json" not in patch["patch"]["requestBody"]["content"]
    assert schema["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    listed = document["components"]["schemas"]["com.example.v1.WidgetList"]
    assert listed["properties"]["items"]["items"] == {
        "$ref": "#/components/schemas/com.example.v1.Widget"
    }
    check_openapi_v3(document)


def test_property_named_like_a_keyword_is_followed(catalogue: Catalogue) -> None:
    """JSONSchemaProps has a property called ``default``: its ref is part of the document."""
    document = _doc(catalogue, "/openapi/v3/apis/apiextensions.k8s.io/v1")
    assert (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON"
        in (document["components"]["schemas"])
    )
