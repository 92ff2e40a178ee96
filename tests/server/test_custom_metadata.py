# ruff: noqa: E501  (kube's expected texts are kept whole, one per line)
"""A custom resource's metadata of the wrong JSON types over HTTP: apiextensions-apiserver reads
it into a metav1.ObjectMeta on its own (objectmeta.GetObjectMetaWithOptions, malformed fields
not dropped for a request), so create and update are 400 with Go's text naming
``ObjectMeta.<field>``, a patch 422; never a 500, nothing stored."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from harness import Server

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GIZMOS = "/apis/example.org/v1/namespaces/{ns}/gizmos"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.example.org"},
    "spec": {
        "group": "example.org",
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "kind": "Gizmo"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                        },
                    }
                },
            }
        ],
    },
}
CANNOT = 'Gizmo in version "v1" cannot be handled as a Gizmo: '
OWNER = {"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u"}

BAD_METADATA = [
    ({"name": "a", "labels": ["x"]}, "json: cannot unmarshal array into Go struct field ObjectMeta.labels of type map[string]string"),
    ({"name": "a", "labels": {"x": 1}}, "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string"),
    ({"name": "a", "annotations": "s"}, "json: cannot unmarshal string into Go struct field ObjectMeta.annotations of type map[string]string"),
    ({"name": 5}, "json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"),
    ("meta", "json: cannot unmarshal string into Go value of type v1.ObjectMeta"),
    ([1], "json: cannot unmarshal array into Go value of type v1.ObjectMeta"),
    ({"name": "a", "finalizers": "x"}, "json: cannot unmarshal string into Go struct field ObjectMeta.finalizers of type []string"),
    ({"name": "a", "ownerReferences": {}}, "json: cannot unmarshal object into Go struct field ObjectMeta.ownerReferences of type []v1.OwnerReference"),
    ({"name": "a", "ownerReferences": [{**OWNER, "uid": 5}]}, "json: cannot unmarshal number into Go struct field OwnerReference.ownerReferences.uid of type types.UID"),
    ({"name": "a", "ownerReferences": [{**OWNER, "controller": "yes"}]}, "json: cannot unmarshal string into Go struct field OwnerReference.ownerReferences.controller of type bool"),
    ({"name": "a", "generation": "1"}, "json: cannot unmarshal string into Go struct field ObjectMeta.generation of type int64"),
    ({"name": "a", "creationTimestamp": "yesterday"}, 'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'),
]  # fmt: skip


@pytest.fixture
def gizmos(server: Server) -> Server:
    code, made = server.request("POST", CRDS, CRD)
    assert code == 201, made
    return server


def gizmo(metadata: Any) -> dict[str, Any]:
    return {"apiVersion": "example.org/v1", "kind": "Gizmo", "metadata": metadata, "spec": {}}


@pytest.mark.parametrize(("metadata", "reason"), BAD_METADATA)
def test_create_with_metadata_of_a_wrong_type_is_400(
    gizmos: Server, metadata: Any, reason: str
) -> None:
    code, status = gizmos.request("POST", GIZMOS, gizmo(metadata))
    assert (code, status["reason"], status["message"]) == (400, "BadRequest", CANNOT + reason)
    code, listed = gizmos.request("GET", GIZMOS)
    assert (code, listed["items"]) == (200, [])


def test_update_and_patch_with_metadata_of_a_wrong_type(gizmos: Server) -> None:
    code, made = gizmos.request("POST", GIZMOS, gizmo({"name": "p", "labels": {"a": "b"}}))
    assert code == 201, made
    changed = copy.deepcopy(made)
    changed["metadata"]["labels"] = ["x"]
    code, status = gizmos.request("PUT", f"{GIZMOS}/p", changed)
    assert (code, status["reason"], status["message"]) == (
        400,
        "BadRequest",
        CANNOT + "json: cannot unmarshal array into Go struct field ObjectMeta.labels of type "
        "map[string]string",
    )
    code, status = gizmos.request(
        "PATCH",
        f"{GIZMOS}/p",
        {"metadata": {"annotations": {"a": 1}}},
        content_type="application/merge-patch+json",
    )
    assert (code, status["reason"]) == (422, "Invalid")
    message = str(status["message"])
    assert message.startswith(' "" is invalid: patch: Invalid value: "{\\"apiVersion\\"')
    assert message.endswith(
        ": json: cannot unmarshal number into Go struct field ObjectMeta.annotations of type string"
    )
    code, got = gizmos.request("GET", f"{GIZMOS}/p")
    assert (code, got["metadata"]["labels"], "annotations" in got["metadata"]) == (
        200,
        {"a": "b"},
        False,
    )
