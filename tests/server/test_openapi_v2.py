"""``/openapi/v2``: the Swagger 2.0 document (JSON and gnostic protobuf), unit level and over
HTTP, and what real kubectl does with it (client-side validation, ``explain`` from v2, a CRD and
its objects applied from one file)."""

from __future__ import annotations

import json
import re
import ssl
import struct
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import Server

from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.server import openapi
from kubelite.server.protobuf.wire import read_fields

PROTOBUF_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_builtin_catalogue(tmp_path_factory.mktemp("cache"))


WIDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size", "note"],
            "properties": {
                "size": {"type": "integer"},
                "port": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                },
                "raw": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"a": {"type": "string"}},
                },
                "note": {"type": "string", "nullable": True},
                "anything": {"type": "array", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    },
}


@pytest.fixture(scope="module")
def with_widget(catalogue: Catalogue) -> Catalogue:
    crds = Catalogue(catalogue)
    crds.add(
        ResourceInfo(
            "example.com",
            "v1",
            "Widget",
            "widgets",
            True,
            builtin=False,
            subresources=("status",),
            schema=json.dumps(WIDGET_SCHEMA),
        )
    )
    return crds


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value)
            elif key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    _refs(sub, found)
            elif key not in ("description", "example", "default", "enum") and not key.startswith(
                "x-"
            ):
                _refs(value, found)
    elif isinstance(node, list):
        for item in node:
            _refs(item, found)


# --- the JSON document ------------------------------------------------------------------------


def test_document_is_swagger_2_with_every_kind(catalogue: Catalogue) -> None:
    document = openapi.swagger(catalogue).document
    assert document["swagger"] == "2.0"
    assert document["info"] == {"title": "Kubernetes", "version": "v1.37.0"}
    definitions = document["definitions"]
    for info in catalogue:
        assert {"group": info.group, "version": info.version, "kind": info.kind} in definitions[
            info.schema_ref
        ]["x-kubernetes-group-version-kind"]
    found: set[str] = set()
    _refs(document, found)
    for ref in found:
        assert ref.startswith("#/definitions/"), ref
        assert ref.removeprefix("#/definitions/") in definitions, ref
    deployment = definitions["io.k8s.api.apps.v1.Deployment"]
    assert deployment["properties"]["metadata"]["$ref"] == (
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    containers = definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == (
        "int-or-string"
    )
    assert definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"


def test_patch_operation_has_gvk_and_field_validation(catalogue: Catalogue) -> None:
    """What kubectl 1.27/1.28 (and 1.29+ for kinds missing from v3) look for."""
    paths = openapi.swagger(catalogue).document["paths"]
    item = paths["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    patch = item["patch"]
    assert patch["operationId"] == "patchCoreV1NamespacedConfigMap"
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "",
        "version": "v1",
        "kind": "ConfigMap",
    }
    assert patch["x-kubernetes-action"] == "patch"
    params = {p["name"]: p for p in patch["parameters"]}
    assert params["fieldValidation"]["in"] == "query"
    assert params["body"]["in"] == "body"
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    assert [p["name"] for p in item["parameters"] if p["in"] == "path"] == ["name", "namespace"]
    assert set(item) == {"get", "put", "patch", "delete", "parameters"}


def test_every_path_declares_its_template_parameters(catalogue: Catalogue) -> None:
    seen: set[str] = set()
    for path, item in openapi.swagger(catalogue).document["paths"].items():
        template = set(re.findall(r"{([^}]+)}", path))
        declared = {p["name"] for p in item["parameters"] if p["in"] == "path"}
        assert declared == template, path
        for method, op in item.items():
            if method == "parameters":
                continue
            assert op["operationId"] not in seen
            seen.add(op["operationId"])
            assert op["responses"]


def test_custom_schema_converted_as_apiextensions_does_for_v2(with_widget: Catalogue) -> None:
    document = openapi.swagger(with_widget).document
    widget = document["definitions"]["com.example.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [
        {"group": "example.com", "version": "v1", "kind": "Widget"}
    ]
    assert widget["properties"]["metadata"]["$ref"] == (
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    spec = widget["properties"]["spec"]
    assert spec["required"] == ["size"]  # nullable fields are not required in v2
    props = spec["properties"]
    assert props["size"] == {"type": "integer"}
    assert props["port"] == {"x-kubernetes-int-or-string": True}  # anyOf dropped
    assert props["raw"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["note"] == {}  # nullable: untyped
    assert props["anything"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert "com.example.v1.WidgetList" in document["definitions"]
    item = document["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert "application/strategic-merge-patch+json" not in item["patch"]["consumes"]
    assert (
        "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status" in (document["paths"])
    )


def test_cached_and_keyed_by_content(catalogue: Catalogue, with_widget: Catalogue) -> None:
    first = openapi.swagger(catalogue)
    assert openapi.swagger(catalogue) is first
    other = openapi.swagger(with_widget)
    assert other.etag != first.etag
    assert re.fullmatch(r"[0-9A-F]{128}", first.etag)
    assert json.loads(first.json) == first.document


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("", openapi.V2_JSON),
        ("*/*", openapi.V2_JSON),
        ("application/json", openapi.V2_JSON),
        ("application/*", openapi.V2_JSON),
        (PROTOBUF_ACCEPT, openapi.V2_PROTOBUF),
        ("application/com.github.proto-openapi.spec.v2.v1.0+protobuf", openapi.V2_PROTOBUF),
        (f"application/json;q=0.5, {PROTOBUF_ACCEPT}", openapi.V2_PROTOBUF),
        (f"{PROTOBUF_ACCEPT}, application/json", openapi.V2_PROTOBUF),
        ("text/html", None),
        ("application/json;q=0", None),
        ("application/yaml", None),
    ],
)
def test_negotiation(accept: str, expected: str | None) -> None:
    assert openapi.negotiate_v2(accept) == expected


# --- the protobuf form --------------------------------------------------------------------------


def _fields(data: bytes) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for number, _, value in read_fields(data):
        out.setdefault(number, []).append(value)
    return out


def _text(value: Any) -> str:
    assert isinstance(value, bytes)
    return value.decode()


def _named(data: bytes, field: int) -> dict[str, bytes]:
    """A repeated Named* field (name=1, value=2) as a dict."""
    out: dict[str, bytes] = {}
    for entry in _fields(data).get(field, []):
        parts = _fields(entry)
        out[_text(parts[1][0])] = parts.get(2, [b""])[0]
    return out


def _vendor(data: bytes, field: int) -> dict[str, Any]:
    """Repeated NamedAny: values are Any messages whose yaml (2) is read back with a YAML
    parser, as kubectl reads them."""
    return {
        name: yaml.safe_load(_text(_fields(value)[2][0]))
        for name, value in _named(data, field).items()
    }


def _schema(data: bytes) -> dict[str, Any]:
    """The part of a gnostic Schema these documents use, back as JSON."""
    fields = _fields(data)
    out: dict[str, Any] = {}
    for number, key in ((1, "$ref"), (2, "format"), (4, "description"), (13, "pattern")):
        if number in fields:
            out[key] = _text(fields[number][0])
    if 19 in fields:
        out["required"] = [_text(v) for v in fields[19]]
    if 20 in fields:
        out["enum"] = [yaml.safe_load(_text(_fields(v)[2][0])) for v in fields[20]]
    if 5 in fields:
        out["default"] = yaml.safe_load(_text(_fields(fields[5][0])[2][0]))
    if 7 in fields:
        out["maximum"] = struct.unpack("<d", fields[7][0].to_bytes(8, "little"))[0]
    if 21 in fields:
        inner = _fields(fields[21][0])
        out["additionalProperties"] = _schema(inner[1][0]) if 1 in inner else bool(inner[2][0])
    if 22 in fields:
        (kind,) = _fields(fields[22][0])[1]
        out["type"] = _text(kind)
    if 23 in fields:
        (item,) = _fields(fields[23][0])[1]
        out["items"] = _schema(item)
    if 24 in fields:
        out["allOf"] = [_schema(v) for v in fields[24]]
    if 25 in fields:
        out["properties"] = {n: _schema(v) for n, v in _named(fields[25][0], 1).items()}
    out.update(_vendor(data, 31))
    return out


def _parameter(data: bytes) -> dict[str, Any]:
    parameter = _fields(_fields(data)[1][0])
    if 1 in parameter:  # body
        body = _fields(parameter[1][0])
        return {"name": _text(body[2][0]), "in": _text(body[3][0])}
    non_body = _fields(parameter[2][0])
    ((where, sub),) = non_body.items()
    fields = _fields(sub[0])
    out = {"name": _text(fields[4][0]), "in": _text(fields[2][0])}
    assert out["in"] == {3: "query", 4: "path"}[where]
    if 1 in fields:
        out["required"] = bool(fields[1][0])
    return out


def test_protobuf_is_the_same_document(with_widget: Catalogue) -> None:
    entry = openapi.swagger(with_widget)
    document = entry.document
    top = _fields(entry.protobuf)
    assert _text(top[1][0]) == "2.0"
    info = _fields(top[2][0])
    assert (_text(info[1][0]), _text(info[2][0])) == ("Kubernetes", "v1.37.0")
    definitions = _named(top[9][0], 1)
    assert list(definitions) == list(document["definitions"])
    for name in (
        "io.k8s.api.apps.v1.Deployment",
        "io.k8s.api.core.v1.PodSpec",
        "io.k8s.api.core.v1.Container",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        "io.k8s.api.core.v1.ServicePort",
        "com.example.v1.Widget",
        "com.example.v1.WidgetList",
    ):
        assert _schema(definitions[name]) == document["definitions"][name], name
    paths = _named(top[8][0], 2)
    assert list(paths) == list(document["paths"])
    item = paths["/api/v1/namespaces/{namespace}/configmaps/{name}"]
    fields = _fields(item)
    assert [_parameter(p) for p in fields[9]][:2] == [
        {"name": "name", "in": "path", "required": True},
        {"name": "namespace", "in": "path", "required": True},
    ]
    patch = fields[8][0]
    assert _vendor(patch, 13)["x-kubernetes-group-version-kind"] == {
        "group": "",
        "version": "v1",
        "kind": "ConfigMap",
    }
    names = [_parameter(p)["name"] for p in _fields(patch)[8]]
    assert names == ["body", "dryRun", "fieldManager", "fieldValidation", "force"]
    assert _text(_fields(patch)[5][0]) == "patchCoreV1NamespacedConfigMap"


def test_additional_properties_false_is_written(catalogue: Catalogue) -> None:
    """A oneof member is written even when false (proto3 keeps set oneof fields)."""
    encoded = openapi.swagger_protobuf(
        {"definitions": {"X": {"type": "object", "additionalProperties": False}}}
    )
    definitions = _named(_fields(encoded)[9][0], 1)
    assert _schema(definitions["X"]) == {"type": "object", "additionalProperties": False}


# --- over HTTP and with kubectl ------------------------------------------------------------------


def _get(server: Server, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(server.url + "/openapi/v2")
    req.add_header("Authorization", f"Bearer {server.token}")
    for key, value in headers.items():
        req.add_header(key, value)
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    try:
        with urllib.request.urlopen(req, timeout=30, context=context) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def test_served_as_json_and_protobuf_with_etag(server: Server) -> None:
    status, headers, body = _get(server, {})
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert headers["vary"] == "Accept"
    document = json.loads(body)
    assert document["swagger"] == "2.0"
    assert "io.k8s.api.core.v1.ConfigMap" in document["definitions"]
    etag = headers["etag"]
    assert re.fullmatch(r'"[0-9A-F]{128}"', etag)

    status, headers, body = _get(server, {"Accept": PROTOBUF_ACCEPT})
    assert status == 200
    assert headers["content-type"] == ("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    assert headers["etag"] == etag
    assert _text(_fields(body)[1][0]) == "2.0"

    status, headers, body = _get(server, {"If-None-Match": etag})
    assert (status, body) == (304, b"")
    assert headers["etag"] == etag
    status, _, body = _get(server, {"Accept": "text/html"})
    assert (status, body) == (406, b"")


CRD_AND_WIDGET = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {size: 3}
"""


@pytest.mark.fresh_server  # the manifest's Widget is in namespace default
def test_kubectl_applies_crd_and_object_from_one_file(server: Server, tmp_path: Path) -> None:
    """kubectl validates the Widget against v2 (its CRD is not there yet, so v3 has no
    document for it), finds no definition, then cannot map the kind: kube's message. Applied
    again, both exist."""
    manifest = tmp_path / "both.yaml"
    manifest.write_text(CRD_AND_WIDGET)
    first = server.kubectl("apply", "-f", str(manifest), check=False)
    assert first.returncode == 1
    assert "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created" in (
        first.stdout
    )
    assert first.stderr == (
        'error: resource mapping not found for name: "w1" namespace: "default" from '
        f'"{manifest}": no matches for kind "Widget" in version "example.com/v1"\n'
        "ensure CRDs are installed first\n"
    )
    for _ in range(10):  # kubectl may hold discovery from before the CRD for a moment
        second = server.kubectl("apply", "-f", str(manifest), check=False)
        if second.returncode == 0:
            break
        time.sleep(0.3)
    assert "widget.example.com/w1 created" in second.stdout, second.stderr
    explained = server.kubectl("explain", "widgets.spec", "--output", "plaintext-openapiv2")
    assert "size\t<integer>" in explained.stdout


def test_kubectl_explain_and_validation_from_v2(server: Server, tmp_path: Path) -> None:
    explained = server.kubectl(
        "explain", "deployments.spec.template.spec.containers", "--output", "plaintext-openapiv2"
    )
    assert "RESOURCE: containers <[]Object>" in explained.stdout
    assert "image\t<string>" in explained.stdout
    # A create-only kind has no patch operation: kubectl validates it against v2 itself, as
    # against kube-apiserver.
    review = tmp_path / "review.yaml"
    review.write_text(
        "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec: {token: abc, bogus: 1}\n"
    )
    result = server.kubectl("create", "-f", str(review), check=False)
    assert result.returncode == 1
    assert result.stderr == (
        f'error: error validating "{review}": error validating data: '
        'ValidationError(TokenReview.spec): unknown field "bogus" in '
        "io.k8s.api.authentication.v1.TokenReviewSpec; if you choose to ignore these errors, "
        "turn validation off with --validate=false\n"
    )
