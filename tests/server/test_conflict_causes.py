"""A 409 that says what changed: kube's Conflict Status, message and reason unchanged, plus a
``details.causes`` entry per field that changed since the version the client sent, naming the
manager and the resourceVersion of the write that changed it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from harness import Server
from test_compaction import kubelite_compact

CM = "/api/v1/namespaces/{ns}/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/{ns}/deployments"
MERGE = "application/merge-patch+json"


def rv_of(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["resourceVersion"])


def deployment(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": name, "tier": "web"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
            },
        },
    }


def write(server: Server, method: str, path: str, body: object, manager: str) -> dict[str, Any]:
    content = MERGE if method == "PATCH" else "application/json"
    code, answer = server.request(method, f"{path}?fieldManager={manager}", body, content)
    assert code == 200, answer
    return answer


def test_stale_update_names_each_changed_field_its_manager_and_version(server: Server) -> None:
    code, read = server.request("POST", DEPLOY, deployment("web"))
    assert code == 201
    scaled = copy.deepcopy(read)
    scaled["spec"]["replicas"] = 4
    scaled = write(server, "PUT", DEPLOY + "/web", scaled, "hpa-controller")
    relabelled = write(
        server,
        "PATCH",
        DEPLOY + "/web",
        {"metadata": {"labels": {"team": "blue", "tier": None}}},
        "labeler",
    )

    stale = copy.deepcopy(read)
    stale["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    code, status = server.request("PUT", DEPLOY + "/web?fieldManager=editor", stale)

    assert code == 409
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on deployments.apps "web": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    details = status["details"]
    assert details["name"] == "web"  # type: ignore[index]
    assert details["group"] == "apps"  # type: ignore[index]
    assert details["kind"] == "deployments"  # type: ignore[index]
    assert details["causes"] == [  # type: ignore[index]
        {
            "reason": "FieldValueChanged",
            "field": ".spec.replicas",
            "message": f'changed by "hpa-controller" at resourceVersion {rv_of(scaled)}',
        },
        {
            "reason": "FieldValueChanged",
            "field": ".metadata.labels.team",
            "message": f'added by "labeler" at resourceVersion {rv_of(relabelled)}',
        },
        {
            "reason": "FieldValueChanged",
            "field": ".metadata.labels.tier",
            "message": f'removed by "labeler" at resourceVersion {rv_of(relabelled)}',
        },
    ]
    # the refused write changed nothing
    _, now = server.request("GET", DEPLOY + "/web")
    assert rv_of(now) == rv_of(relabelled)
    assert now["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"  # type: ignore[index]


def test_a_field_changed_twice_is_placed_at_its_last_write(server: Server) -> None:
    code, read = server.request("POST", CM, {"metadata": {"name": "c"}, "data": {"k": "0"}})
    assert code == 201
    write(server, "PATCH", CM + "/c", {"data": {"k": "1"}}, "first")
    bystander = write(server, "PATCH", CM + "/c", {"data": {"other": "x"}}, "bystander")
    last = write(server, "PATCH", CM + "/c", {"data": {"k": "2"}}, "second")

    stale = {**read, "data": {"k": "mine"}}
    code, status = server.request("PUT", CM + "/c", stale)
    assert code == 409
    causes = status["details"]["causes"]  # type: ignore[index]
    assert causes == [
        {
            "reason": "FieldValueChanged",
            "field": ".data.k",
            "message": f'changed by "second" at resourceVersion {rv_of(last)}',
        },
        {
            "reason": "FieldValueChanged",
            "field": ".data.other",
            "message": f'added by "bystander" at resourceVersion {rv_of(bystander)}',
        },
    ]


def test_a_patch_and_a_status_write_with_a_stale_version_are_explained(server: Server) -> None:
    code, read = server.request("POST", DEPLOY, deployment("api"))
    assert code == 201
    status_write = copy.deepcopy(read)
    status_write["status"] = {"observedGeneration": 1, "replicas": 1}
    done = write(server, "PUT", DEPLOY + "/api/status", status_write, "deploy-controller")

    patch = {"metadata": {"resourceVersion": rv_of(read)}, "spec": {"replicas": 3}}
    code, status = server.request("PATCH", DEPLOY + "/api?fieldManager=scaler", patch, MERGE)
    assert code == 409
    fields = {c["field"]: c["message"] for c in status["details"]["causes"]}  # type: ignore[index]
    # a subtree that appears is one cause, at its top
    assert fields == {".status": f'added by "deploy-controller" at resourceVersion {rv_of(done)}'}

    stale_status = copy.deepcopy(read)
    stale_status["status"] = {"replicas": 7}
    code, status = server.request("PUT", DEPLOY + "/api/status", stale_status)
    assert code == 409
    assert [c["field"] for c in status["details"]["causes"]] == [".status"]  # type: ignore[index]


@pytest.mark.fresh_server  # it compacts the store
def test_no_causes_when_the_sent_version_is_gone_or_of_another_object(server: Server) -> None:
    code, old = server.request("POST", CM, {"metadata": {"name": "gone"}, "data": {"k": "0"}})
    assert code == 201
    assert server.request("DELETE", CM + "/gone")[0] == 200
    code, _ = server.request("POST", CM, {"metadata": {"name": "gone"}, "data": {"k": "1"}})
    assert code == 201
    # a version of the name's earlier incarnation: kube's bare 409
    code, status = server.request("PUT", CM + "/gone", {**old, "data": {"k": "x"}})
    assert code == 409
    assert "causes" not in status["details"]  # type: ignore[operator]

    code, read = server.request("POST", CM, {"metadata": {"name": "old"}, "data": {"k": "0"}})
    assert code == 201
    changed = write(server, "PATCH", CM + "/old", {"data": {"k": "1"}}, "someone")
    code, status = server.request("PUT", CM + "/old", {**read, "data": {"k": "x"}})
    assert code == 409
    assert len(status["details"]["causes"]) == 1  # type: ignore[index]
    # once the history holding the sent version is compacted, a new 409 is not explained (the
    # one just given is remembered: the same stale write would get it again)
    done = kubelite_compact(server, int(rv_of(changed)))
    assert done.returncode == 0, done.stderr
    code, again = server.request("PUT", CM + "/old", {**read, "data": {"k": "x"}})
    assert again["details"] == status["details"]  # type: ignore[index]
    write(server, "PATCH", CM + "/old", {"data": {"k": "2"}}, "someone")
    code, status = server.request("PUT", CM + "/old", {**read, "data": {"k": "x"}})
    assert code == 409
    assert status["message"].endswith(
        "please apply your changes to the latest version and try again"
    )  # type: ignore[union-attr]
    assert "causes" not in status["details"]  # type: ignore[operator]


def test_many_changed_fields_are_summarised_after_twenty(server: Server) -> None:
    code, read = server.request("POST", CM, {"metadata": {"name": "wide"}, "data": {"a": "1"}})
    assert code == 201
    write(server, "PATCH", CM + "/wide", {"data": {f"k{i:02}": "v" for i in range(25)}}, "bulk")
    code, status = server.request("PUT", CM + "/wide", {**read, "data": {"mine": "1"}})
    assert code == 409
    causes = status["details"]["causes"]  # type: ignore[index]
    assert len(causes) == 21
    assert [c["field"] for c in causes[:20]] == [f".data.k{i:02}" for i in range(20)]
    assert causes[0]["message"].startswith('added by "bulk" at resourceVersion ')
    assert causes[20] == {"reason": "FieldValueChanged", "message": "and 5 more fields changed"}


def test_changes_older_than_the_versions_read_back_are_dated_from_the_sent_version(
    server: Server,
) -> None:
    code, read = server.request("POST", CM, {"metadata": {"name": "busy"}, "data": {"k": "0"}})
    assert code == 201
    write(server, "PATCH", CM + "/busy", {"data": {"early": "x"}}, "early-bird")
    for i in range(40):  # more writes than the explanation reads back one by one
        last = write(server, "PATCH", CM + "/busy", {"data": {"k": str(i + 1)}}, "ticker")
    code, status = server.request("PUT", CM + "/busy", {**read, "data": {"k": "mine"}})
    assert code == 409
    assert status["details"]["causes"] == [  # type: ignore[index]
        {
            "reason": "FieldValueChanged",
            "field": ".data.k",
            "message": f'changed by "ticker" at resourceVersion {rv_of(last)}',
        },
        {
            "reason": "FieldValueChanged",
            "field": ".data.early",
            "message": f"added since resourceVersion {rv_of(read)}",
        },
    ]
