"""CustomResourceDefinitions against a real server: the CRD's own validation and status, custom
objects with schema, CEL, pruning, defaulting, subresources and printer columns, several
versions, and deleting a CRD with its objects."""

from __future__ import annotations

import copy
import json
import ssl
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from harness import Server

DATA = Path(__file__).parent / "data"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/{ns}/widgets"

GIZMO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "x-kubernetes-validations": [
                {"rule": "self.size >= oldSelf.size", "message": "size may not shrink"}
            ],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 100},
                "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
                "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": 3,
                    "x-kubernetes-list-type": "set",
                },
                "note": {"type": "string", "nullable": True},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}


def gizmo_crd(scope: str = "Namespaced", schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.org"},
        "spec": {
            "group": "example.org",
            "scope": scope,
            "names": {"plural": "gizmos", "kind": "Gizmo"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": copy.deepcopy(schema or GIZMO_SCHEMA)},
                    "subresources": {"status": {}},
                }
            ],
        },
    }


GIZMOS = "/apis/example.org/v1/namespaces/{ns}/gizmos"


def ok(server: Server, method: str, path: str, body: Any = None, **kw: Any) -> dict[str, Any]:
    code, got = server.request(method, path, body, **kw)
    assert code in (200, 201), (code, got)
    assert isinstance(got, dict)
    return got


def fail(server: Server, method: str, path: str, body: Any, code: int) -> dict[str, Any]:
    got_code, got = server.request(method, path, body)
    assert got_code == code, got
    assert isinstance(got, dict)
    return got


@pytest.fixture
def gizmos(server: Server) -> Server:
    ok(server, "POST", CRDS, gizmo_crd())
    return server


# --- kubectl ---------------------------------------------------------------------------------


def test_kubectl_crd_walkthrough(server: Server) -> None:
    """apply, wait Established, create/get/patch/scale custom objects, printer columns,
    explain, delete the CRD."""
    crd_file = str(DATA / "widgets-crd.yaml")
    server.kubectl("apply", "-f", crd_file)
    server.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com")
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n"
    assert (
        "widget.example.com/w1 created" in server.kubectl("create", "-f", "-", input=widget).stdout
    )
    table = server.kubectl("get", "wd").stdout.split("\n")
    assert table[0].split() == ["NAME", "SIZE"]
    assert table[1].split() == ["w1", "3"]
    server.kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":5}}')
    server.kubectl("scale", "widget", "w1", "--replicas=4")
    got = json.loads(server.kubectl("get", "widgets.example.com", "w1", "-o", "json").stdout)
    assert got["spec"] == {"size": 5, "replicas": 4, "color": "red"}  # color: the default
    assert got["metadata"]["generation"] == 3
    explain = server.kubectl("explain", "widget.spec").stdout
    assert "size\t<integer> -required-" in explain
    assert "enum: red, blue" in explain
    bad = server.kubectl(
        "patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":11}}', check=False
    )
    assert bad.returncode == 1
    assert 'The Widget "w1" is invalid: spec: Invalid value: "object": size must be at most 10' in (
        bad.stderr
    )
    server.kubectl("delete", "crd", "widgets.example.com")
    gone = server.kubectl("get", "widgets", check=False)
    assert gone.returncode != 0
    code, _ = server.request("GET", WIDGETS)
    assert code == 404


def test_discovery_and_openapi_follow_the_crd(gizmos: Server) -> None:
    listing = ok(gizmos, "GET", "/apis/example.org/v1")
    resources = {r["name"]: r for r in listing["resources"]}
    assert resources["gizmos"]["kind"] == "Gizmo"
    assert resources["gizmos"]["namespaced"] is True
    assert "gizmos/status" in resources
    groups = [g["name"] for g in ok(gizmos, "GET", "/apis")["groups"]]
    assert "example.org" in groups
    document = ok(gizmos, "GET", "/openapi/v3/apis/example.org/v1")
    schema = document["components"]["schemas"]["org.example.v1.Gizmo"]
    assert schema["properties"]["spec"]["properties"]["size"]["type"] == "integer"
    ok(gizmos, "DELETE", CRDS + "/gizmos.example.org")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and gizmos.request("GET", "/apis/example.org/v1")[0] != 404:
        time.sleep(0.05)
    assert gizmos.request("GET", "/apis/example.org/v1")[0] == 404
    assert "example.org" not in [g["name"] for g in ok(gizmos, "GET", "/apis")["groups"]]


# --- the CRD object --------------------------------------------------------------------------


def test_a_crd_gets_its_status_and_cleanup_finalizer(gizmos: Server) -> None:
    crd = ok(gizmos, "GET", CRDS + "/gizmos.example.org")
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd["status"]["acceptedNames"]["kind"] == "Gizmo"
    assert crd["status"]["acceptedNames"]["listKind"] == "GizmoList"
    assert crd["status"]["storedVersions"] == ["v1"]
    assert crd["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]


def test_invalid_crds_get_kube_apiservers_422(server: Server) -> None:
    crd = gizmo_crd()
    crd["metadata"]["name"] = "wrong.example.org"
    body = fail(server, "POST", CRDS, crd, 422)
    assert body["message"] == (
        'CustomResourceDefinition.apiextensions.k8s.io "wrong.example.org" is invalid: '
        'metadata.name: Invalid value: "wrong.example.org": must be '
        'spec.names.plural+"."+spec.group'
    )
    crd = gizmo_crd()
    crd["spec"]["versions"][0]["storage"] = False
    body = fail(server, "POST", CRDS, crd, 422)
    assert body["details"]["causes"][0]["field"] == "spec.versions"
    assert body["message"].endswith("must have exactly one version marked as storage version")
    crd = gizmo_crd(scope="Galaxy")
    body = fail(server, "POST", CRDS, crd, 422)
    assert (
        'spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced"'
        in (body["message"])
    )
    crd = gizmo_crd(schema={"type": "object", "properties": {"spec": {"properties": {}}}})
    body = fail(server, "POST", CRDS, crd, 422)
    assert body["details"]["causes"][0]["field"] == (
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type"
    )
    crd = gizmo_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] = [
        {"rule": "self.spec.size >"}
    ]
    body = fail(server, "POST", CRDS, crd, 422)
    assert "compilation failed" in body["message"]
    code, listing = server.request("GET", CRDS)
    assert (code, listing["items"]) == (200, [])  # type: ignore[index]


def test_a_crd_clashing_with_another_kinds_names_is_not_accepted(gizmos: Server) -> None:
    crd = gizmo_crd()
    crd["metadata"]["name"] = "doohickeys.example.org"
    crd["spec"]["names"] = {"plural": "doohickeys", "kind": "Gizmo"}
    created = ok(gizmos, "POST", CRDS, crd)
    conditions = {c["type"]: c for c in created["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "False"
    assert conditions["NamesAccepted"]["reason"] == "KindConflict"
    assert conditions["Established"]["status"] == "False"
    assert gizmos.request("GET", "/apis/example.org/v1/namespaces/{ns}/doohickeys")[0] == 404


# --- custom objects --------------------------------------------------------------------------


def test_custom_objects_follow_cr_semantics(gizmos: Server) -> None:
    created = ok(gizmos, "POST", GIZMOS, {"metadata": {"name": "g"}, "spec": {"size": 1}})
    assert created["apiVersion"] == "example.org/v1"
    assert created["kind"] == "Gizmo"
    assert created["metadata"]["generation"] == 1
    assert created["spec"] == {"size": 1, "mode": "slow"}
    # PUT without a resourceVersion: 422, as for every CR
    body = copy.deepcopy(created)
    del body["metadata"]["resourceVersion"]
    got = fail(gizmos, "PUT", GIZMOS + "/g", body, 422)
    assert got["message"] == (
        'gizmos.example.org "g" is invalid: metadata.resourceVersion: Invalid value: 0: must be '
        "specified for an update"
    )
    # strategic merge patch: 415 with the media types a CR accepts
    code, got = gizmos.request(
        "PATCH", GIZMOS + "/g", {"spec": {"size": 2}}, "application/strategic-merge-patch+json"
    )
    assert code == 415
    assert got["message"] == (  # type: ignore[index]
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )
    # generation: any change outside metadata bumps it; a label does not
    merge = "application/merge-patch+json"
    patched = ok(gizmos, "PATCH", GIZMOS + "/g", {"spec": {"size": 2}}, content_type=merge)
    assert patched["metadata"]["generation"] == 2
    patched = ok(
        gizmos,
        "PATCH",
        GIZMOS + "/g",
        {"metadata": {"labels": {"a": "b"}}},
        content_type=merge,
    )
    assert patched["metadata"]["generation"] == 2
    patch = [{"op": "replace", "path": "/spec/size", "value": 3}]
    patched = ok(gizmos, "PATCH", GIZMOS + "/g", patch, content_type="application/json-patch+json")
    assert patched["spec"]["size"] == 3


def test_status_subresource_splits_the_object(gizmos: Server) -> None:
    created = ok(
        gizmos,
        "POST",
        GIZMOS,
        {"metadata": {"name": "s"}, "spec": {"size": 1}, "status": {"phase": "ignored"}},
    )
    assert "status" not in created
    with_status = {**created, "status": {"phase": "Ready"}, "spec": {"size": 50}}
    after = ok(gizmos, "PUT", GIZMOS + "/s/status", with_status)
    assert after["status"] == {"phase": "Ready"}
    assert after["spec"]["size"] == 1  # /status ignores everything else
    assert after["metadata"]["generation"] == 1
    main = {**after, "status": {"phase": "Lost"}, "spec": {"size": 2}}
    after = ok(gizmos, "PUT", GIZMOS + "/s", main)
    assert after["status"] == {"phase": "Ready"}  # main writes ignore .status
    assert after["spec"]["size"] == 2
    assert after["metadata"]["generation"] == 2


def test_schema_violations_are_422_with_a_cause_per_field_and_nothing_stored(
    gizmos: Server,
) -> None:
    bad = {
        "metadata": {"name": "bad"},
        "spec": {
            "size": "big",
            "name": "Has Caps",
            "mode": "warp",
            "tags": ["a", "a"],
            "port": 1.5,
        },
    }
    body = fail(gizmos, "POST", GIZMOS, bad, 422)
    causes = {c["field"]: c for c in body["details"]["causes"]}
    assert causes["spec.size"]["message"] == (
        'Invalid value: "string": spec.size in body must be of type integer: "string"'
    )
    assert causes["spec.name"]["message"] == (
        "Invalid value: \"Has Caps\": spec.name in body should match '^[a-z]+$'"
    )
    assert causes["spec.mode"]["message"] == (
        'Unsupported value: "warp": supported values: "fast", "slow"'
    )
    assert causes["spec.mode"]["reason"] == "FieldValueNotSupported"
    assert causes["spec.tags[1]"]["message"] == 'Duplicate value: "a"'
    assert causes["spec.port"]["message"].endswith(
        'spec.port in body must be of type integer-or-string: "number"'
    )
    assert body["message"].startswith('Gizmo.example.org "bad" is invalid: [')
    body = fail(gizmos, "POST", GIZMOS, {"metadata": {"name": "bad"}, "spec": {}}, 422)
    assert body["message"] == 'Gizmo.example.org "bad" is invalid: spec.size: Required value'
    body = fail(gizmos, "POST", GIZMOS, {"metadata": {"name": "bad"}, "spec": {"size": 0}}, 422)
    assert body["details"]["causes"][0]["message"] == (
        "Invalid value: 0: spec.size in body should be greater than or equal to 1"
    )
    tags = ["a", "b", "c", "d"]
    body = fail(
        gizmos,
        "POST",
        GIZMOS,
        {"metadata": {"name": "bad"}, "spec": {"size": 1, "tags": tags}},
        422,
    )
    assert body["details"]["causes"][0]["message"] == "Too many: 4: must have at most 3 items"
    long_name = {"metadata": {"name": "bad"}, "spec": {"size": 1, "name": "abcdefghij"}}
    body = fail(gizmos, "POST", GIZMOS, long_name, 422)
    assert body["details"]["causes"][0]["message"] == "Too long: may not be more than 8 bytes"
    code, listing = gizmos.request("GET", GIZMOS)
    assert (code, listing["items"]) == (200, [])  # type: ignore[index]


def test_unknown_fields_are_pruned_or_refused_and_nulls_defaulted(gizmos: Server) -> None:
    body = {
        "metadata": {"name": "p"},
        "spec": {"size": 1, "junk": True, "mode": None, "note": None, "extra": {"any": [1]}},
        "top": 1,
    }
    code, got = gizmos.request("POST", GIZMOS + "?fieldValidation=Strict", body)
    assert code == 400
    assert got["message"] == (  # type: ignore[index]
        'Gizmo in version "v1" cannot be handled as a Gizmo: strict decoding error: '
        'unknown field "spec.junk", unknown field "top"'
    )
    created = ok(gizmos, "POST", GIZMOS, body)  # default Warn: pruned, with warnings
    assert "top" not in created
    assert created["spec"] == {
        "size": 1,
        "mode": "slow",  # null where not nullable: dropped, then defaulted
        "note": None,  # nullable: kept
        "extra": {"any": [1]},  # preserve-unknown-fields
    }


def test_cel_rules_including_transition_rules(gizmos: Server) -> None:
    created = ok(gizmos, "POST", GIZMOS, {"metadata": {"name": "c"}, "spec": {"size": 5}})
    shrink = {**created, "spec": {"size": 4}}
    body = fail(gizmos, "PUT", GIZMOS + "/c", shrink, 422)
    assert body["message"] == (
        'Gizmo.example.org "c" is invalid: spec: Invalid value: "object": size may not shrink'
    )
    grow = {**created, "spec": {"size": 6}}
    assert ok(gizmos, "PUT", GIZMOS + "/c", grow)["spec"]["size"] == 6
    assert ok(gizmos, "GET", GIZMOS + "/c")["spec"]["size"] == 6


def test_cluster_scoped_custom_resources(server: Server) -> None:
    ok(server, "POST", CRDS, gizmo_crd(scope="Cluster"))
    created = ok(
        server,
        "POST",
        "/apis/example.org/v1/gizmos",
        {"metadata": {"name": "x"}, "spec": {"size": 1}},
    )
    assert "namespace" not in created["metadata"]
    assert server.request("GET", GIZMOS)[0] == 404


def test_several_versions_share_one_storage(server: Server) -> None:
    crd = gizmo_crd()
    v1 = crd["spec"]["versions"][0]
    v2 = {**copy.deepcopy(v1), "name": "v2", "storage": False}
    crd["spec"]["versions"] = [v1, v2]
    ok(server, "POST", CRDS, crd)
    created = ok(
        server,
        "POST",
        "/apis/example.org/v2/namespaces/{ns}/gizmos",
        {"metadata": {"name": "m"}, "spec": {"size": 1}},
    )
    assert created["apiVersion"] == "example.org/v2"
    at_v1 = ok(server, "GET", GIZMOS + "/m")
    assert at_v1["apiVersion"] == "example.org/v1"
    assert at_v1["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    listed = ok(server, "GET", "/apis/example.org/v2/namespaces/{ns}/gizmos")
    assert [i["apiVersion"] for i in listed["items"]] == ["example.org/v2"]
    # the storage version is persisted: a server restart-free peek at the CRD says so
    crd_now = ok(server, "GET", CRDS + "/gizmos.example.org")
    assert crd_now["status"]["storedVersions"] == ["v1"]


def _watch_lines(
    server: Server, path: str, lines: list[dict[str, Any]], done: threading.Event
) -> None:
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    req = urllib.request.Request(f"{server.url}{server.path(path)}")
    req.add_header("Authorization", f"Bearer {server.token}")
    with urllib.request.urlopen(req, context=context, timeout=30) as resp:
        for line in resp:
            lines.append(json.loads(line))
    done.set()


def test_deleting_a_crd_deletes_its_objects_ends_watches_and_allows_recreation(
    gizmos: Server,
) -> None:
    for name in ("a", "b"):
        ok(gizmos, "POST", GIZMOS, {"metadata": {"name": name}, "spec": {"size": 1}})
    held = {"metadata": {"name": "held", "finalizers": ["example.org/hold"]}, "spec": {"size": 1}}
    ok(gizmos, "POST", GIZMOS, held)
    rv = ok(gizmos, "GET", GIZMOS)["metadata"]["resourceVersion"]
    lines: list[dict[str, Any]] = []
    ended = threading.Event()
    reader = threading.Thread(
        target=_watch_lines,
        args=(gizmos, f"{GIZMOS}?watch=1&resourceVersion={rv}", lines, ended),
        daemon=True,
    )
    reader.start()
    time.sleep(0.3)
    ok(gizmos, "DELETE", CRDS + "/gizmos.example.org")
    # the finalizer of "held" keeps the CRD (and the kind) alive; creates are refused meanwhile
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        listing = ok(gizmos, "GET", GIZMOS)
        if [i["metadata"]["name"] for i in listing["items"]] == ["held"]:
            break
        time.sleep(0.05)
    code, body = gizmos.request("POST", GIZMOS, {"metadata": {"name": "new"}, "spec": {"size": 1}})
    assert code == 405
    assert body["message"] == (  # type: ignore[index]
        "create not allowed while custom resource definition is terminating"
    )
    assert ok(gizmos, "GET", CRDS + "/gizmos.example.org")["metadata"]["deletionTimestamp"]
    ok(
        gizmos,
        "PATCH",
        GIZMOS + "/held",
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    assert ended.wait(15), "the watch did not end when the CRD went away"
    deleted = sorted(e["object"]["metadata"]["name"] for e in lines if e["type"] == "DELETED")
    assert deleted == ["a", "b", "held"]
    assert gizmos.request("GET", CRDS + "/gizmos.example.org")[0] == 404
    # re-created with a different schema
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"colour": {"type": "string"}}}},
    }
    ok(gizmos, "POST", CRDS, gizmo_crd(schema=schema))
    created = ok(
        gizmos, "POST", GIZMOS, {"metadata": {"name": "a"}, "spec": {"colour": "red", "size": 1}}
    )
    assert created["spec"] == {"colour": "red"}


def test_printer_columns_default_to_age_and_python_clients_see_new_kinds(gizmos: Server) -> None:
    from kubernetes import client, config

    ok(gizmos, "POST", GIZMOS, {"metadata": {"name": "t"}, "spec": {"size": 2}})
    header = gizmos.kubectl("get", "gizmos").stdout.split("\n")[0].split()
    assert header == ["NAME", "AGE"]
    api = client.CustomObjectsApi(config.new_client_from_config(config_file=str(gizmos.kubeconfig)))
    body = {"apiVersion": "example.org/v1", "kind": "Gizmo", "metadata": {"name": "py"}}
    created = api.create_namespaced_custom_object(
        "example.org", "v1", gizmos.namespace, "gizmos", {**body, "spec": {"size": 4}}
    )
    assert created["spec"] == {"size": 4, "mode": "slow"}
    listed = api.list_namespaced_custom_object("example.org", "v1", gizmos.namespace, "gizmos")
    assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["py", "t"]
    patched = api.patch_namespaced_custom_object(
        "example.org", "v1", gizmos.namespace, "gizmos", "py", {"spec": {"size": 9}}
    )
    assert patched["spec"]["size"] == 9


def test_objects_stored_before_the_storage_version_moved_read_at_any_version(
    server: Server,
) -> None:
    crd = gizmo_crd()
    v1 = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [v1, {**copy.deepcopy(v1), "name": "v2", "storage": False}]
    ok(server, "POST", CRDS, crd)
    ok(server, "POST", GIZMOS, {"metadata": {"name": "old"}, "spec": {"size": 1}})  # stored as v1
    crd = ok(server, "GET", CRDS + "/gizmos.example.org")
    crd["spec"]["versions"][0]["storage"] = False
    crd["spec"]["versions"][1]["storage"] = True
    moved = ok(server, "PUT", CRDS + "/gizmos.example.org", crd)
    assert moved["status"]["storedVersions"] == ["v1", "v2"]
    v2 = "/apis/example.org/v2/namespaces/{ns}/gizmos"
    assert ok(server, "GET", v2 + "/old")["apiVersion"] == "example.org/v2"
    assert [i["apiVersion"] for i in ok(server, "GET", v2)["items"]] == ["example.org/v2"]
    assert ok(server, "GET", GIZMOS + "/old")["apiVersion"] == "example.org/v1"
