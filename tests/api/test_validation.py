"""Server-side field validation (fieldValidation=Strict|Warn|Ignore): unknown and duplicate
fields found from the kinds' schemas, and kube-apiserver's exact texts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.errors import APIError
from kubelite.api.machinery import validation as v


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_builtin_catalogue(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def configmap(catalogue: Catalogue) -> ResourceInfo:
    info = catalogue.lookup("", "v1", "configmaps")
    assert info is not None
    return info


@pytest.fixture(scope="module")
def deployment(catalogue: Catalogue) -> ResourceInfo:
    info = catalogue.lookup("apps", "v1", "deployments")
    assert info is not None
    return info


def _deployment(**spec_extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"app": "x"}, "annotations": {"k": "v"}},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "nginx",
                            "ports": [{"containerPort": 80}],
                            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                            "env": [{"name": "A", "value": "1"}],
                        }
                    ]
                },
            },
            **spec_extra,
        },
    }


def test_valid_objects_have_no_unknown_fields(
    configmap: ResourceInfo, deployment: ResourceInfo
) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}}
    assert v.unknown_fields(configmap, cm) == []
    assert v.unknown_fields(deployment, _deployment(replicas=2)) == []


def test_unknown_top_level_field(configmap: ResourceInfo) -> None:
    assert v.unknown_fields(configmap, {"apiVersion": "v1", "foo": 1}) == ["foo"]


def test_unknown_nested_and_list_item_fields_in_document_order(deployment: ResourceInfo) -> None:
    obj = _deployment(foo=1, strategy={"rollingUpdate": {"maxUnaivailable": 5}})
    container = obj["spec"]["template"]["spec"]["containers"][0]
    container["foo"] = True
    container["ports"][0]["nodeport"] = 1
    assert v.unknown_fields(deployment, obj) == [
        "spec.template.spec.containers[0].ports[0].nodeport",
        "spec.template.spec.containers[0].foo",
        "spec.foo",
        "spec.strategy.rollingUpdate.maxUnaivailable",
    ]


def test_metadata_is_checked_against_objectmeta(configmap: ResourceInfo) -> None:
    obj = {"metadata": {"name": "x", "app": "y", "labels": {"any": "thing"}}}
    assert v.unknown_fields(configmap, obj) == ["metadata.app"]


def test_maps_and_opaque_values_are_not_flagged(
    configmap: ResourceInfo, deployment: ResourceInfo
) -> None:
    managed = [{"manager": "m", "fieldsV1": {"f:data": {"f:a": {}}, "anything": {}}}]
    cm = {
        "metadata": {
            "labels": {"x": "y"},
            "annotations": {"whatever": "1"},
            "managedFields": managed,
        },
        "data": {"free": "form"},
        "binaryData": {"b": "AA=="},
    }
    assert v.unknown_fields(configmap, cm) == []
    # resources.limits is a map of quantities; IntOrString is a scalar
    obj = _deployment(strategy={"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}})
    assert v.unknown_fields(deployment, obj) == []


def test_preserve_unknown_fields_schema_is_not_flagged(configmap: ResourceInfo) -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer"},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                },
            }
        },
    }
    obj = {"spec": {"size": 1, "extra": {"a": {"b": 1}}, "color": "blue"}, "status": {}}
    assert v.unknown_fields(configmap, obj, schema) == ["spec.color", "status"]


def test_types_are_not_checked(configmap: ResourceInfo) -> None:
    assert v.unknown_fields(configmap, {"data": "not-a-map", "immutable": {"a": 1}}) == []


def test_duplicate_fields_need_the_raw_body(configmap: ResourceInfo) -> None:
    body = b'{"data":{"a":"1","a":"2"},"immutable":true,"immutable":false,"foo":1,"foo":2}'
    assert v.strict_errors(configmap, body) == [
        'duplicate field "data.a"',
        'duplicate field "immutable"',
        'unknown field "foo"',
    ]
    assert v.unknown_fields(configmap, body) == ["foo"]


def test_strict_error_message_single(configmap: ResourceInfo) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "foo": 1}
    error = v.field_validation_error(configmap, v.unknown_fields(configmap, obj), obj)
    assert (error.code, error.reason) == (400, "BadRequest")
    assert error.message == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        'strict decoding error: unknown field "foo"'
    )


def test_strict_error_message_several(deployment: ResourceInfo) -> None:
    obj = _deployment(foo=1)
    obj["bar"] = 2
    error = v.field_validation_error(deployment, v.strict_errors(deployment, obj), obj)
    assert error.message == (
        'Deployment in version "v1" cannot be handled as a Deployment: '
        'strict decoding error: unknown field "spec.foo", unknown field "bar"'
    )


def test_warnings_and_headers() -> None:
    warnings = v.warnings_for(["foo", 'unknown field "spec.x"', "foo"])
    assert warnings == ['unknown field "foo"', 'unknown field "spec.x"']
    assert v.warning_headers(warnings) == [
        (b"warning", b'299 - "unknown field \\"foo\\""'),
        (b"warning", b'299 - "unknown field \\"spec.x\\""'),
    ]


def test_long_warnings_are_truncated() -> None:
    warnings = [f"unknown field {'x' * 300}{i}" for i in range(20)]
    headers = v.warning_headers(warnings)
    assert len(headers) == 20
    assert all(len(value) == len('299 - ""') + 256 for _, value in headers)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, "Warn"),
        ({"fieldValidation": ""}, "Warn"),
        ({"fieldValidation": "Strict"}, "Strict"),
        ({"fieldValidation": "Ignore"}, "Ignore"),
        ({"fieldValidation": "Warn"}, "Warn"),
    ],
)
def test_directive(query: dict[str, str], expected: str) -> None:
    assert v.directive(query) == expected


def test_invalid_directive() -> None:
    with pytest.raises(APIError) as caught:
        v.directive({"fieldValidation": "strict"}, "patch")
    assert caught.value.code == 422
    assert caught.value.reason == "Invalid"
    assert caught.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": '
        'supported values: "", "Ignore", "Strict", "Warn"'
    )


def test_patch_error_names_the_patched_object() -> None:
    error = v.patch_validation_error({"a": 1}, ["foo"])
    assert (error.code, error.reason) == (422, "Invalid")
    assert error.message == (
        ' "" is invalid: patch: Invalid value: "{\\"a\\":1}": '
        'strict decoding error: unknown field "foo"'
    )


def test_may_repeat_keys_is_false_only_when_no_key_can_repeat() -> None:
    plain = b'{"metadata": {"name": "a"}, "data": {"k": "v"}}'
    assert v.may_repeat_keys(plain, json.loads(plain)) is False
    repeated = b'{"data": {"k": "v", "k": "w"}}'
    assert v.may_repeat_keys(repeated, json.loads(repeated)) is True
    tricky = b'{"data": {"k": "a\\":b"}}'  # a value holding the characters ":
    assert v.may_repeat_keys(tricky, json.loads(tricky)) is True
