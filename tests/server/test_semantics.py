"""kube-apiserver's per-verb semantics over HTTP: generateName, dryRun, finalizers, status
subresource, update policies, preconditions, watch event sequences."""

from __future__ import annotations

import json
import ssl
import time
import urllib.request

from harness import ROOT_CA, Server

CM = "/api/v1/namespaces/{ns}/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/{ns}/deployments"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"


def deployment(name: str, replicas: int = 1) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
        "status": {"replicas": 99},
    }


def test_generate_name_and_dry_run(server: Server) -> None:
    code, made = server.request("POST", CM, {"metadata": {"generateName": "job-"}})
    assert code == 201
    name = made["metadata"]["name"]  # type: ignore[index]
    assert name.startswith("job-")
    assert len(name) == len("job-") + 5
    code, dry = server.request("POST", CM + "?dryRun=All", {"metadata": {"name": "dry"}})
    assert code == 201
    assert dry["metadata"]["name"] == "dry"  # type: ignore[index]
    assert server.request("GET", CM + "/dry")[0] == 404


def test_finalizers_hold_deletion_until_cleared(server: Server) -> None:
    server.request("POST", CM, {"metadata": {"name": "f", "finalizers": ["example.com/x"]}})
    code, marked = server.request("DELETE", CM + "/f")
    assert code == 200
    assert marked["kind"] == "ConfigMap"
    assert marked["metadata"]["deletionTimestamp"]  # type: ignore[index]
    code, still = server.request("GET", CM + "/f")
    assert code == 200
    assert still["metadata"]["finalizers"] == ["example.com/x"]  # type: ignore[index]
    code, _ = server.request(
        "PATCH", CM + "/f", {"metadata": {"finalizers": None}}, "application/merge-patch+json"
    )
    assert code == 200
    assert server.request("GET", CM + "/f")[0] == 404


def test_status_subresource_splits_the_object(server: Server) -> None:
    code, created = server.request("POST", DEPLOY, deployment("web"))
    assert code == 201
    assert "status" not in created  # cleared on create
    assert created["metadata"]["generation"] == 1  # type: ignore[index]
    status_body = {**created, "status": {"replicas": 5}, "spec": {**created["spec"], "replicas": 7}}  # type: ignore[dict-item]
    code, after = server.request("PUT", DEPLOY + "/web/status", status_body)
    assert code == 200
    assert after["status"] == {"replicas": 5}
    assert after["spec"]["replicas"] == 1  # type: ignore[index]
    assert after["metadata"]["generation"] == 1  # type: ignore[index]
    main = {**after, "status": {"replicas": 0}, "spec": {**after["spec"], "replicas": 2}}  # type: ignore[dict-item]
    code, after = server.request("PUT", DEPLOY + "/web", main)
    assert code == 200
    assert after["status"] == {"replicas": 5}
    assert after["spec"]["replicas"] == 2  # type: ignore[index]
    assert after["metadata"]["generation"] == 2  # type: ignore[index]


def test_update_policies_per_kind(server: Server) -> None:
    server.request("POST", CM, {"metadata": {"name": "u"}, "data": {"a": "1"}})
    code, _ = server.request("PUT", CM + "/u", {"metadata": {"name": "u"}, "data": {"a": "2"}})
    assert code == 200  # ConfigMap allows an update without resourceVersion
    lease = {"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}
    code, created = server.request("PUT", LEASE + "/l", lease)
    assert code == 201  # Lease is created on update
    assert created["spec"] == {"holderIdentity": "a"}
    code, body = server.request("PUT", LEASE + "/l", lease)
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        'leases.coordination.k8s.io "l" is invalid: metadata.resourceVersion: Invalid value: 0: '
        "must be specified for an update"
    )
    wrong_uid = {"metadata": {"name": "u", "uid": "nope"}, "data": {}}
    code, body = server.request("PUT", CM + "/u", wrong_uid)
    assert code == 409
    assert "Precondition failed: UID in precondition: nope" in str(body["message"])


def test_delete_preconditions_use_the_kind(server: Server) -> None:
    server.request("POST", CM, {"metadata": {"name": "d"}})
    options = {"preconditions": {"resourceVersion": "1"}}
    code, body = server.request("DELETE", CM + "/d", options)
    assert code == 409
    assert str(body["message"]).startswith(
        'Operation cannot be fulfilled on ConfigMap "d": the ResourceVersion in the '
        "precondition (1) does not match the ResourceVersion in record"
    )
    assert body["details"] == {"name": "d", "kind": "ConfigMap"}


def test_watch_sends_added_modified_deleted(server: Server) -> None:
    server.request("POST", CM, {"metadata": {"name": "w0"}})
    reader, lines = server.watch_lines(f"{CM}?watch=true", 3)
    time.sleep(0.5)
    _, obj = server.request("POST", CM, {"metadata": {"name": "w1"}})
    server.request("PUT", CM + "/w1", {**obj, "data": {"x": "1"}})
    server.request("DELETE", CM + "/w1")
    reader.join(10)
    got = [(e["type"], e["object"]["metadata"]["name"]) for e in lines]  # type: ignore[index]
    assert got == [
        ("ADDED", ROOT_CA),  # the initial state: the namespace's root CA ConfigMap, and w0
        ("ADDED", "w0"),
        ("ADDED", "w1"),
        ("MODIFIED", "w1"),
        ("DELETED", "w1"),
    ]


def test_watch_answers_200_before_the_first_event(server: Server) -> None:
    """client-go's Watch() returns when the response head arrives, as kube-apiserver flushes it
    at once; an HTTP stack that holds the head until the first body chunk would leave clients
    waiting on a quiet resource. Here the head must arrive while nothing has been written."""
    _, listing = server.request("GET", CM)
    rv = listing["metadata"]["resourceVersion"]  # type: ignore[index]
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    req = urllib.request.Request(f"{server.url}{server.path(CM)}?watch=1&resourceVersion={rv}")
    req.add_header("Authorization", f"Bearer {server.token}")
    with urllib.request.urlopen(req, context=context, timeout=30) as resp:
        assert resp.status == 200  # urlopen returns once the head is in: no event exists yet
        assert resp.headers["Content-Type"] == "application/json"
        server.request("POST", CM, {"metadata": {"name": "after-head"}})
        event = json.loads(resp.readline())
    assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "after-head")
