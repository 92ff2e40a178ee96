"""Server-side apply and managedFields over raw HTTP (k8s.io/apimachinery
``pkg/util/managedfields``, sigs.k8s.io/structured-merge-diff ``merge/update.go``): worked
examples, the request surface, Update tracking and the status/spec split."""

from __future__ import annotations

import json
from typing import Any

from harness import Server

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
CM = "/api/v1/namespaces/{ns}/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/{ns}/deployments"


def cm(name: str, **body: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **body}


def apply(
    server: Server, path: str, body: dict[str, Any] | str, manager: str | None, **query: str
) -> tuple[int, dict[str, Any]]:
    params = {**({"fieldManager": manager} if manager is not None else {}), **query}
    suffix = "?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else ""
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return server.request("PATCH", path + suffix, raw=raw, content_type=APPLY)  # type: ignore[return-value]


def entries(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """managedFields by manager (and subresource, when there is one)."""
    out = {}
    for entry in obj["metadata"].get("managedFields", []):
        key = entry["manager"] + (f"/{entry['subresource']}" if entry.get("subresource") else "")
        out[key] = entry
    return out


def fields(obj: dict[str, Any], manager: str) -> dict[str, Any]:
    return entries(obj)[manager]["fieldsV1"]


def test_create_by_apply_records_an_apply_entry(server: Server) -> None:
    code, obj = apply(
        server,
        CM + "/cm",
        cm("cm", metadata={"name": "cm", "labels": {"app": "a"}}, data={"k1": "v1", "k2": "v2"}),
        "alice",
    )
    assert code == 201, obj
    (entry,) = obj["metadata"]["managedFields"]
    assert list(entry) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    assert entry["manager"] == "alice"
    assert entry["operation"] == "Apply"
    assert entry["apiVersion"] == "v1"
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"] == {
        "f:data": {"f:k1": {}, "f:k2": {}},
        "f:metadata": {"f:labels": {"f:app": {}}},
    }
    assert server.request("GET", CM + "/cm")[1]["metadata"]["managedFields"] == [entry]


def test_co_ownership_conflict_force_and_pruning(server: Server) -> None:
    apply(server, CM + "/cm", cm("cm", data={"k1": "v1", "k2": "v2"}), "alice")
    code, obj = apply(server, CM + "/cm", cm("cm", data={"k1": "v1", "k3": "v3"}), "bob")
    assert code == 200
    assert obj["data"] == {"k1": "v1", "k2": "v2", "k3": "v3"}
    assert fields(obj, "bob") == {"f:data": {"f:k1": {}, "f:k3": {}}}
    assert fields(obj, "alice") == {"f:data": {"f:k1": {}, "f:k2": {}}}

    code, status = apply(server, CM + "/cm", cm("cm", data={"k2": "x"}), "bob")
    assert code == 409
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.k2'
    assert status["details"] == {
        "causes": [
            {
                "reason": "FieldManagerConflict",
                "message": 'conflict with "alice"',
                "field": ".data.k2",
            }
        ]
    }
    assert server.request("GET", CM + "/cm")[1]["data"] == obj["data"]

    code, obj = apply(server, CM + "/cm", cm("cm", data={"k2": "x"}), "bob", force="true")
    assert code == 200
    assert obj["data"] == {"k1": "v1", "k2": "x"}  # k3 pruned, k1 kept: alice owns it
    assert fields(obj, "alice") == {"f:data": {"f:k1": {}}}
    assert fields(obj, "bob") == {"f:data": {"f:k2": {}}}


def test_update_takes_ownership_and_apply_then_conflicts_with_it(server: Server) -> None:
    apply(server, CM + "/cm", cm("cm", data={"k1": "v1", "k2": "v2"}), "alice")
    code, obj = server.request("PATCH", CM + "/cm", {"data": {"k1": "new"}}, MERGE)
    assert code == 200
    updater = entries(obj)["Python-urllib"]
    assert updater["operation"] == "Update"
    assert updater["apiVersion"] == "v1"
    assert updater["fieldsV1"] == {"f:data": {"f:k1": {}}}
    assert fields(obj, "alice") == {"f:data": {"f:k2": {}}}
    code, status = apply(server, CM + "/cm", cm("cm", data={"k1": "v1", "k2": "v2"}), "alice")
    assert code == 409
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "Python-urllib" using v1: .data.k1'
    )


def test_several_conflicts_are_grouped_by_manager(server: Server) -> None:
    apply(server, CM + "/cm", cm("cm", data={"k2": "a"}), "alice")
    path = CM + "/cm?fieldManager=python-requests"
    server.request("PATCH", path, {"data": {"k1": "p"}}, MERGE)
    code, status = apply(server, CM + "/cm", cm("cm", data={"k1": "c", "k2": "c"}), "carol")
    assert code == 409
    assert status["message"] == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n- .data.k2\n'
        'conflicts with "python-requests" using v1:\n- .data.k1'
    )
    assert sorted(c["field"] for c in status["details"]["causes"]) == [".data.k1", ".data.k2"]


def test_post_records_an_update_entry_with_dot_for_new_maps(server: Server) -> None:
    code, obj = server.request(
        "POST",
        CM + "?fieldManager=kubectl-create",
        {"metadata": {"name": "c2"}, "data": {"a": "1"}},
    )
    assert code == 201
    (entry,) = obj["metadata"]["managedFields"]
    assert entry["manager"] == "kubectl-create"
    assert entry["operation"] == "Update"
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}


def deployment(containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": containers}}, **spec},
    }


def test_deployment_list_map_items_are_owned_per_key(server: Server) -> None:
    ci = deployment(
        [{"name": "app", "image": "app:1"}],
        replicas=2,
        selector={"matchLabels": {"app": "w"}},
    )
    ci["spec"]["template"]["metadata"] = {"labels": {"app": "w"}}
    code, obj = apply(server, DEPLOY + "/web", ci, "ci")
    assert code == 201, obj
    assert fields(obj, "ci") == {
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}}
                },
            },
        }
    }
    code, obj = apply(
        server, DEPLOY + "/web", deployment([{"name": "proxy", "image": "envoy:1"}]), "mesh"
    )
    assert code == 200, obj
    names = [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]]
    assert names == ["app", "proxy"]
    assert fields(obj, "mesh") == {
        "f:spec": {
            "f:template": {
                "f:spec": {
                    "f:containers": {'k:{"name":"proxy"}': {".": {}, "f:image": {}, "f:name": {}}}
                }
            }
        }
    }
    code, status = apply(
        server, DEPLOY + "/web", deployment([{"name": "app", "image": "app:2"}]), "mesh"
    )
    assert code == 409
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "ci": '
        '.spec.template.spec.containers[name="app"].image'
    )
    bare = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    code, obj = apply(server, DEPLOY + "/web", bare, "mesh")
    assert code == 200, obj
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["app"]
    assert "mesh" not in entries(obj)


def test_ports_without_protocol_are_keyed_with_the_default(server: Server) -> None:
    body = deployment(
        [{"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]}],
        selector={"matchLabels": {"app": "w"}},
    )
    body["spec"]["template"]["metadata"] = {"labels": {"app": "w"}}
    code, obj = apply(server, DEPLOY + "/web", body, "ci")
    assert code == 201, obj
    container = fields(obj, "ci")["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert container['k:{"name":"app"}']["f:ports"] == {
        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
    }


def test_shared_label_is_removed_only_when_its_last_owner_lets_go(server: Server) -> None:
    apply(
        server,
        CM + "/cm",
        cm("cm", metadata={"name": "cm", "labels": {"x": "1", "shared": "s"}}),
        "a",
    )
    apply(
        server,
        CM + "/cm",
        cm("cm", metadata={"name": "cm", "labels": {"shared": "s", "y": "2"}}),
        "b",
    )
    _, obj = apply(server, CM + "/cm", cm("cm", metadata={"name": "cm", "labels": {"x": "1"}}), "a")
    assert obj["metadata"]["labels"] == {"x": "1", "shared": "s", "y": "2"}
    _, obj = apply(server, CM + "/cm", cm("cm", metadata={"name": "cm", "labels": {"y": "2"}}), "b")
    assert obj["metadata"]["labels"] == {"x": "1", "y": "2"}


def test_object_without_managed_fields_gets_before_first_apply(server: Server) -> None:
    server.request("POST", CM, {"metadata": {"name": "cm"}, "data": {"k1": "v1", "k2": "v2"}})
    code, obj = server.request(
        "PUT",
        CM + "/cm",
        {"metadata": {"name": "cm", "managedFields": []}, "data": {"k1": "v1", "k2": "v2"}},
    )
    assert code == 200
    assert "managedFields" not in obj["metadata"]
    code, obj = server.request("PATCH", CM + "/cm", {"data": {"k2": "v3"}}, MERGE)
    assert "managedFields" not in obj["metadata"]  # not tracked until the first apply
    code, status = apply(server, CM + "/cm", cm("cm", data={"k1": "z"}), "alice")
    assert code == 409
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.k1'
    )
    code, obj = apply(server, CM + "/cm", cm("cm", data={"k1": "z"}), "alice", force="true")
    assert code == 200
    assert fields(obj, "alice") == {"f:data": {"f:k1": {}}}
    # the whole object was recorded as added by before-first-apply: data itself too
    assert fields(obj, "before-first-apply") == {"f:data": {".": {}, "f:k2": {}}}


def test_update_entries_are_capped_at_ten(server: Server) -> None:
    server.request("POST", CM, {"metadata": {"name": "cm"}, "data": {"k0": "0"}})
    for i in range(1, 12):
        server.request(
            "PATCH", CM + f"/cm?fieldManager=m{i:02d}", {"data": {f"k{i}": str(i)}}, MERGE
        )
    _, obj = server.request("GET", CM + "/cm")
    managers = [e["manager"] for e in obj["metadata"]["managedFields"]]
    # the three oldest (the creator, m01, m02) merged into one bucket, with the newest time
    assert sorted(managers) == ["ancient-changes", *(f"m{i:02d}" for i in range(3, 12))]
    bucket = entries(obj)["ancient-changes"]
    assert (bucket["operation"], bucket["apiVersion"]) == ("Update", "v1")
    assert bucket["fieldsV1"] == {"f:data": {".": {}, "f:k0": {}, "f:k1": {}, "f:k2": {}}}
    assert bucket["time"] <= entries(obj)["m03"]["time"]


def test_request_surface_errors(server: Server) -> None:
    body = cm("cm", data={"a": "1"})
    code, status = apply(server, CM + "/cm", body, None)
    assert (code, status["message"]) == (
        422,
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for '
        "apply patch",
    )
    code, status = apply(server, CM + "/cm", body, "x" * 129)
    assert code == 422
    assert status["message"].endswith("fieldManager: Too long: may not be more than 128 bytes")
    code, status = server.request("PATCH", CM + "/cm?force=false", {"data": {}}, MERGE)
    assert (code, status["message"]) == (
        422,
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for '
        "non-apply patch",
    )
    code, status = apply(server, CM + "/cm", {**body, "apiVersion": "v2"}, "a")
    assert (code, status["message"]) == (400, "invalid object type: /v2, Kind=ConfigMap")
    with_fields = cm("cm", metadata={"name": "cm", "managedFields": []})
    code, status = apply(server, CM + "/cm", with_fields, "a")
    assert (code, status["message"]) == (400, "metadata.managedFields must be nil")
    code, status = apply(server, CM + "/other", body, "a")
    assert (code, status["message"]) == (
        400,
        "the name of the object (cm) does not match the name on the URL (other)",
    )
    code, status = apply(server, CM + "/cm", cm("cm", spec={"x": 1}), "a")
    assert (code, status["reason"]) == (400, "BadRequest")  # kube: 500 (kubernetes#122480)
    assert status["message"] == (
        f"failed to create typed patch object ({server.namespace}/cm; /v1, Kind=ConfigMap): "
        ".spec: field not declared in schema"
    )
    assert server.request("GET", CM + "/cm")[0] == 404


def test_yaml_body_and_strict_duplicate_keys(server: Server) -> None:
    yaml_body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: '1'\n"
    code, obj = apply(server, CM + "/y", yaml_body, "a")
    assert code == 201, obj
    assert obj["data"] == {"a": "1"}
    duplicated = yaml_body + "  a: '2'\n"
    code, status = apply(server, CM + "/y", duplicated, "a", fieldValidation="Strict")
    assert code == 400
    assert status["message"].startswith("error strict decoding patch: ")
    code, status = apply(server, CM + "/y", "a: [", "a")
    assert code == 400
    assert status["message"].startswith("error decoding patch: ")


def test_resource_version_and_uid_in_apply_body(server: Server) -> None:
    _, obj = apply(server, CM + "/cm", cm("cm", data={"a": "1"}), "a")
    stale = cm("cm", metadata={"name": "cm", "resourceVersion": "1"}, data={"a": "2"})
    code, status = apply(server, CM + "/cm", stale, "a")
    assert code == 409
    assert status["message"] == (
        'Operation cannot be fulfilled on configmaps "cm": the object has been modified; please '
        "apply your changes to the latest version and try again"
    )
    current = cm(
        "cm",
        metadata={"name": "cm", "resourceVersion": obj["metadata"]["resourceVersion"]},
        data={"a": "2"},
    )
    assert apply(server, CM + "/cm", current, "a")[0] == 200
    code, status = apply(server, CM + "/cm", cm("cm", metadata={"name": "cm", "uid": "nope"}), "a")
    assert code == 422
    assert status["message"].endswith('metadata.uid: Invalid value: "nope": field is immutable')
    code, status = apply(server, CM + "/new", cm("new", metadata={"name": "new", "uid": "u1"}), "a")
    assert (code, status["message"]) == (
        409,
        'Operation cannot be fulfilled on configmaps "new": uid mismatch: the provided object '
        "specified uid u1, and no existing object was found",
    )


def test_dry_run_apply_answers_without_storing(server: Server) -> None:
    code, obj = apply(server, CM + "/cm", cm("cm", data={"a": "1"}), "a", dryRun="All")
    assert code == 201
    assert fields(obj, "a") == {"f:data": {"f:a": {}}}
    assert server.request("GET", CM + "/cm")[0] == 404


def test_non_apply_writes_keep_or_reset_managed_fields(server: Server) -> None:
    _, obj = apply(server, CM + "/cm", cm("cm", data={"a": "1"}), "a")
    kept = obj["metadata"]["managedFields"]
    # a PUT that leaves managedFields out keeps them
    code, obj = server.request("PUT", CM + "/cm", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    assert code == 200
    assert obj["metadata"]["managedFields"] == kept
    code, obj = server.request("PATCH", CM + "/cm", {"metadata": {"managedFields": [{}]}}, MERGE)
    assert code == 200
    assert "managedFields" not in obj["metadata"]


def test_status_apply_owns_status_only(server: Server) -> None:
    body = deployment([{"name": "app", "image": "app:1"}], selector={"matchLabels": {"app": "w"}})
    body["spec"]["template"]["metadata"] = {"labels": {"app": "w"}}
    apply(server, DEPLOY + "/web", body, "ci")
    status_body = {**body, "spec": {"replicas": 9}, "status": {"replicas": 3}}
    code, obj = apply(server, DEPLOY + "/web/status", status_body, "ctrl")
    assert code == 200, obj
    assert obj["status"]["replicas"] == 3
    assert obj["spec"].get("replicas") != 9
    ctrl = entries(obj)["ctrl/status"]
    assert ctrl["subresource"] == "status"
    assert ctrl["fieldsV1"] == {"f:status": {"f:replicas": {}}}
    code, status = apply(
        server, DEPLOY + "/web/status", {**body, "status": {"replicas": 4}}, "other"
    )
    assert code == 409
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "ctrl" with subresource "status": '
        ".status.replicas"
    )
    # the main resource's appliers never own status
    code, obj = apply(server, DEPLOY + "/web", {**body, "status": {"replicas": 7}}, "ci")
    assert code == 200
    assert obj["status"]["replicas"] == 3
    assert "f:status" not in fields(obj, "ci")


def test_scale_writes_own_the_replica_count(server: Server) -> None:
    body = deployment([{"name": "app", "image": "app:1"}], selector={"matchLabels": {"app": "w"}})
    body["spec"]["template"]["metadata"] = {"labels": {"app": "w"}}
    body["spec"]["replicas"] = 2
    apply(server, DEPLOY + "/web", body, "ci")
    code, scale = server.request(
        "PATCH", DEPLOY + "/web/scale?fieldManager=scaler", {"spec": {"replicas": 5}}, MERGE
    )
    assert code == 200, scale
    assert "managedFields" not in scale["metadata"]  # a Scale shows none, as in kube
    _, obj = server.request("GET", DEPLOY + "/web")
    scaler = entries(obj)["scaler/scale"]
    assert scaler["operation"] == "Update"
    assert scaler["apiVersion"] == "apps/v1"
    assert scaler["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in fields(obj, "ci")["f:spec"]
    # an apply to the Scale conflicts with the Scale's owner of spec.replicas, then forces
    scale_config = {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web"},
        "spec": {"replicas": 7},
    }
    code, status = apply(server, DEPLOY + "/web/scale", scale_config, "hpa")
    assert code == 409, status
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "scaler" with subresource "scale" using '
        "autoscaling/v1: .spec.replicas"
    )
    code, scale = apply(server, DEPLOY + "/web/scale", scale_config, "hpa", force="true")
    assert code == 200, scale
    assert scale["spec"]["replicas"] == 7
    _, obj = server.request("GET", DEPLOY + "/web")
    assert obj["spec"]["replicas"] == 7
    hpa = entries(obj)["hpa/scale"]
    assert (hpa["operation"], hpa["apiVersion"]) == ("Apply", "apps/v1")
    assert hpa["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "scaler/scale" not in entries(obj)


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/{ns}/widgets"
WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer"},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def widgets(server: Server) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": WIDGET_SCHEMA},
                    "subresources": {"status": {}},
                }
            ],
        },
    }
    assert server.request("POST", CRDS, crd)[0] == 201


def widget(**body: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, **body}


def test_custom_resource_status_apply_and_create_by_post(server: Server) -> None:
    widgets(server)
    code, obj = server.request(
        "POST",
        WIDGETS + "?fieldManager=kubectl-create",
        widget(spec={"replicas": 1, "tags": ["a"]}),
    )
    assert code == 201, obj
    # an Update on an unstructured zero object: spec and the set are new, so owned themselves
    created = {"f:spec": {".": {}, "f:replicas": {}, "f:tags": {".": {}, 'v:"a"': {}}}}
    assert fields(obj, "kubectl-create") == created
    body = widget(spec={"replicas": 9}, status={"ready": True})
    code, obj = apply(server, WIDGETS + "/w1/status", body, "ctrl")
    assert code == 200, obj
    assert obj["status"] == {"ready": True}
    assert obj["spec"]["replicas"] == 1  # /status resets spec
    assert entries(obj)["ctrl/status"] == {
        "manager": "ctrl",
        "operation": "Apply",
        "apiVersion": "example.com/v1",
        "time": entries(obj)["ctrl/status"]["time"],
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:ready": {}}},
        "subresource": "status",
    }
    code, status = apply(server, WIDGETS + "/w1/status", widget(status={"ready": False}), "other")
    assert code == 409
    assert status["message"] == (
        'Apply failed with 1 conflict: conflict with "ctrl" with subresource "status": '
        ".status.ready"
    )
    code, obj = apply(server, WIDGETS + "/w1", widget(spec={"tags": ["a", "b"]}), "tagger")
    assert code == 200, obj
    assert obj["spec"]["tags"] == ["a", "b"]
    assert fields(obj, "tagger") == {"f:spec": {"f:tags": {'v:"a"': {}, 'v:"b"': {}}}}
    # a set is merged by value: "a" is now owned by both, "b" by the applier alone
    assert fields(obj, "kubectl-create") == created


def test_writes_that_change_nothing_are_not_stored(server: Server) -> None:
    _, first = apply(server, CM + "/cm", cm("cm", data={"a": "1"}), "a")
    version = first["metadata"]["resourceVersion"]
    _, again = apply(server, CM + "/cm", cm("cm", data={"a": "1"}), "a")
    assert again["metadata"]["resourceVersion"] == version
    assert again["metadata"]["managedFields"] == first["metadata"]["managedFields"]
    code, put = server.request("PUT", CM + "/cm", {**again, "data": {"a": "1"}})
    assert code == 200
    assert put["metadata"]["resourceVersion"] == version


def test_watch_events_carry_managed_fields(server: Server) -> None:
    reader, events = server.watch_lines(CM + "?watch=true", 2)
    apply(server, CM + "/cm", cm("cm", data={"a": "1"}), "alice")
    reader.join()
    (event,) = [e for e in events if e["object"]["metadata"]["name"] == "cm"]
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["managedFields"][0]["manager"] == "alice"


def test_a_boolean_replacing_a_number_is_a_change(server: Server) -> None:
    widgets(server)
    code, obj = server.request("POST", WIDGETS, widget(spec={"free": {"a": 1}}))
    assert code == 201, obj
    code, obj = server.request("PATCH", WIDGETS + "/w1", {"spec": {"free": {"a": True}}}, MERGE)
    assert code == 200, obj
    assert obj["spec"]["free"] == {"a": True}
    assert server.request("GET", WIDGETS + "/w1")[1]["spec"]["free"] == {"a": True}


def test_a_write_changing_only_entry_times_is_not_stored(server: Server) -> None:
    _, obj = apply(server, CM + "/cm", cm("cm", data={"a": "1"}), "a")
    version = obj["metadata"]["resourceVersion"]
    obj["metadata"]["managedFields"][0]["time"] = "2001-01-01T00:00:00Z"
    code, put = server.request("PUT", CM + "/cm", obj)
    assert code == 200
    assert put["metadata"]["resourceVersion"] == version
    assert put["metadata"]["managedFields"][0]["time"] != "2001-01-01T00:00:00Z"


def test_managed_fields_a_client_sends_are_stored_canonical_or_not_at_all(server: Server) -> None:
    _, obj = apply(server, CM + "/cm", cm("cm", data={"a": "1", "b": "2"}), "a")
    stored = obj["metadata"]["managedFields"]
    sent = [
        {"manager": "zed", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:b": None}}},
        {"manager": "amy", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:data": {"f:a": {}}}},
    ]  # fmt: skip
    code, put = server.request(
        "PUT", CM + "/cm", {**obj, "metadata": {**obj["metadata"], "managedFields": sent}}
    )
    assert code == 200, put
    # decoded and written back: Apply first, null read as {}
    assert [(e["manager"], e["fieldsV1"]) for e in put["metadata"]["managedFields"]] == [
        ("amy", {"f:data": {"f:a": {}}}),
        ("zed", {"f:data": {"f:b": {}}}),
    ]
    # an entry that does not decode (an operation kube does not know): the stored entries stand
    bad = [{**sent[1], "operation": "Bogus"}]
    meta = {**put["metadata"], "managedFields": bad}
    code, again = server.request(
        "PUT", CM + "/cm", {**put, "metadata": meta, "data": {"a": "3", "b": "2"}}
    )
    assert code == 200, again
    # amy's only field went to this writer; zed's entry (no time) sorts first
    managers = [e["manager"] for e in again["metadata"]["managedFields"]]
    assert managers == ["zed", "Python-urllib"]
    assert server.request("PATCH", CM + "/cm", {"data": {"b": "4"}}, MERGE)[0] == 200
    assert stored != again["metadata"]["managedFields"]


def test_yaml_apply_bodies_read_as_kube_reads_them(server: Server) -> None:
    body = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n"
        "  annotations:\n    when: 2024-01-01T10:00:00Z\ndata:\n  1: a\n  yes: b\n"
    )
    code, obj = apply(server, CM + "/y", body, "a")
    assert code == 201, obj
    assert obj["data"] == {"1": "a", "true": "b"}
    assert obj["metadata"]["annotations"] == {"when": "2024-01-01T10:00:00Z"}
    code, status = apply(server, CM + "/y", body.replace("  1: a", "  n: .nan"), "a")
    assert code == 400
    assert status["message"] == "error decoding patch: json: unsupported value: NaN"
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
    for level in "bcdefgh":
        ten = ",".join([f"*{chr(ord(level) - 1)}"] * 10)
        bomb += f"{level}: &{level} [{ten}]\n"
    code, status = apply(server, CM + "/y", bomb, "a")
    assert code == 400
    assert status["message"] == "error decoding patch: yaml: document contains excessive aliasing"


def test_apply_namespace_must_match_the_request(server: Server) -> None:
    body = cm("cm", metadata={"name": "cm", "namespace": "other"}, data={"a": "1"})
    code, status = apply(server, CM + "/cm", body, "a")
    assert (code, status["message"]) == (
        400,
        "the namespace of the object (other) does not match the namespace on the request "
        f"({server.namespace})",
    )
    apply(server, CM + "/cm", cm("cm", data={"a": "1"}), "a")
    code, status = apply(server, CM + "/cm", body, "a")
    assert code == 400


def test_conflicts_come_before_strict_decoding_and_options_fail_together(server: Server) -> None:
    apply(server, CM + "/cm", cm("cm", data={"a": "1"}), "alice")
    duplicated = (
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"a":"2","a":"3"}}'
    )
    code, status = apply(server, CM + "/cm", duplicated, "bob", fieldValidation="Strict")
    assert code == 409, status
    code, status = apply(server, CM + "/cm", duplicated, "alice", fieldValidation="Strict")
    assert code == 400
    assert status["message"].startswith("error strict decoding patch: ")
    code, status = server.request("PATCH", CM + "/cm?force=true&fieldManager=a%01", {}, MERGE)
    assert code == 422
    assert status["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: [force: Forbidden: may not be specified for '
        'non-apply patch, fieldManager: Invalid value: "a\\x01": invalid character U+0001 (at '
        "position 1)]"
    )


def test_an_apply_is_decoded_as_any_write(server: Server) -> None:
    body = deployment([{"name": "app", "image": "app:1", "command": [7]}])
    code, status = apply(server, DEPLOY + "/web", body, "ci")
    assert code == 422, status
    assert status["message"].endswith(
        "json: cannot unmarshal number into Go struct field "
        "Container.spec.template.spec.containers.command of type string"
    )
    assert server.request("GET", DEPLOY + "/web")[0] == 404


def test_scale_bodies_are_decoded_as_scales(server: Server) -> None:
    body = deployment([{"name": "app", "image": "app:1"}], selector={"matchLabels": {"app": "w"}})
    body["spec"]["template"]["metadata"] = {"labels": {"app": "w"}}
    apply(server, DEPLOY + "/web", body, "ci")
    code, status = server.request("PATCH", DEPLOY + "/web/scale", {"spec": 7}, MERGE)
    assert code == 422, status
    assert status["message"].endswith(
        "json: cannot unmarshal number into Go struct field Scale.spec of type v1.ScaleSpec"
    )
    code, status = server.request(
        "PATCH", DEPLOY + "/web/scale", {"spec": {"replicas": 2**40}}, MERGE
    )
    assert code == 422, status
    assert "of type int32" in status["message"]
    assert server.request("GET", DEPLOY + "/web")[1]["spec"]["replicas"] == 1
