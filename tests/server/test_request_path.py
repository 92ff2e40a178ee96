"""The request path over HTTP: what each kind's strategy and storage decide (generation rules,
propagation policies, finalizer rules, dry-run through every write path, verbs served), checked
against a real ``kubelite serve``."""

from __future__ import annotations

import time
from typing import Any

import pytest
from harness import ROOT_CA, Server

NS = "/api/v1/namespaces"
CM = "/api/v1/namespaces/{ns}/configmaps"
APPS = "/apis/apps/v1/namespaces/{ns}"
JOBS = "/apis/batch/v1/namespaces/{ns}/jobs"
RC = "/api/v1/namespaces/{ns}/replicationcontrollers"
MERGE = "application/merge-patch+json"

Obj = dict[str, Any]


def workload(kind: str, name: str) -> Obj:
    """A minimal valid object of an apps/v1 or batch/v1 workload kind."""
    template: Obj = {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    spec: Obj = {"selector": {"matchLabels": {"app": name}}, "template": template}
    if kind == "statefulsets":
        spec["serviceName"] = name
    if kind == "jobs":  # a Job's pods may not restart Always (kube's validation)
        template["spec"]["restartPolicy"] = "Never"
        spec = {"template": template}
    return {"metadata": {"name": name}, "spec": spec}


# -- fix 1: dry-run on every write path -----------------------------------------------------------


def test_kubectl_scale_dry_run_server_writes_nothing(server: Server) -> None:
    server.request("POST", APPS + "/deployments", workload("deployments", "web"))
    _, before = server.request("GET", APPS + "/deployments/web")
    out = server.kubectl("scale", "deployment/web", "--replicas=5", "--dry-run=server")
    assert "scaled (server dry run)" in out.stdout
    _, after = server.request("GET", APPS + "/deployments/web")
    assert after == before
    code, scale = server.request(
        "PATCH", APPS + "/deployments/web/scale?dryRun=All", {"spec": {"replicas": 4}}, MERGE
    )
    assert (code, scale["spec"]["replicas"]) == (200, 4)
    assert server.request("GET", APPS + "/deployments/web")[1] == before
    server.kubectl("scale", "deployment/web", "--replicas=3")
    _, scaled = server.request("GET", APPS + "/deployments/web")
    assert scaled["spec"]["replicas"] == 3
    assert scaled["metadata"]["generation"] == 2  # a scale is a spec change


@pytest.mark.fresh_server  # it makes a namespace keep
def test_namespace_delete_honours_dry_run_in_the_delete_options_body(server: Server) -> None:
    server.request("POST", NS, {"metadata": {"name": "keep"}})
    code, answer = server.request("DELETE", NS + "/keep", {"dryRun": ["All"]})
    assert code == 200
    assert answer["status"]["phase"] == "Terminating"
    _, stored = server.request("GET", NS + "/keep")
    assert "deletionTimestamp" not in stored["metadata"]
    assert stored["status"]["phase"] == "Active"
    code, _ = server.request("PUT", NS + "/keep/finalize?dryRun=All", {**stored, "spec": {}})
    assert code == 200
    assert server.request("GET", NS + "/keep")[1]["spec"] == {"finalizers": ["kubernetes"]}


# -- fix 2: generation per kind ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        (APPS + "/replicasets", "replicasets"),
        (APPS + "/statefulsets", "statefulsets"),
        (APPS + "/daemonsets", "daemonsets"),
        (JOBS, "jobs"),
    ],
)
def test_generation_moves_on_spec_changes_only(server: Server, path: str, kind: str) -> None:
    code, made = server.request("POST", path, workload(kind, "g"))
    assert code == 201, made
    assert made["metadata"]["generation"] == 1
    annotated = {"metadata": {"annotations": {"note": "x"}, "labels": {"l": "y"}}}
    _, after = server.request("PATCH", path + "/g", annotated, MERGE)
    assert after["metadata"]["annotations"] == {"note": "x"}
    assert after["metadata"]["generation"] == 1
    spec_change = {"spec": {"template": {"metadata": {"labels": {"app": "g", "v": "2"}}}}}
    if kind != "jobs":  # a Job's template is immutable on a cluster; its spec.suspend is not
        _, after = server.request("PATCH", path + "/g", spec_change, MERGE)
    else:
        _, after = server.request("PATCH", path + "/g", {"spec": {"suspend": True}}, MERGE)
    assert after["metadata"]["generation"] == 2


def test_deployment_generation_moves_on_annotation_changes_too(server: Server) -> None:
    server.request("POST", APPS + "/deployments", workload("deployments", "d"))
    _, after = server.request(
        "PATCH", APPS + "/deployments/d", {"metadata": {"labels": {"x": "1"}}}, MERGE
    )
    assert after["metadata"]["generation"] == 1  # labels never count
    _, after = server.request(
        "PATCH", APPS + "/deployments/d", {"metadata": {"annotations": {"x": "1"}}}, MERGE
    )
    assert after["metadata"]["generation"] == 2


def test_status_writes_keep_the_spec_and_never_move_generation(server: Server) -> None:
    server.request("POST", APPS + "/deployments", workload("deployments", "s"))
    body = {"metadata": {"labels": {"set": "by-status"}}, "spec": {"replicas": 9}}
    _, after = server.request(
        "PATCH", APPS + "/deployments/s/status", {**body, "status": {"replicas": 1}}, MERGE
    )
    assert after["status"] == {"replicas": 1}
    assert "replicas" not in after["spec"] or after["spec"]["replicas"] != 9
    assert "labels" not in after["metadata"]  # a Deployment's /status keeps its labels
    assert after["metadata"]["generation"] == 1
    server.request("POST", APPS + "/replicasets", workload("replicasets", "r"))
    _, after = server.request(
        "PATCH", APPS + "/replicasets/r/status", {**body, "status": {"replicas": 1}}, MERGE
    )
    assert after["metadata"]["labels"] == {"set": "by-status"}  # a ReplicaSet's lets them in


# -- fix 3: propagation policies and each kind's default ---------------------------------------


HOLD = "example.com/hold"  # keeps an object after the garbage collector released it


def finalizers_become(server: Server, path: str, expected: list[str]) -> Obj:
    """The object once the garbage collector has brought its finalizers to ``expected``."""
    deadline = time.monotonic() + 30  # a hang guard, not a timing assertion
    while True:
        code, stored = server.request("GET", path)
        assert code == 200, stored
        if stored["metadata"].get("finalizers") == expected:
            return stored
        assert time.monotonic() < deadline, stored
        time.sleep(0.05)


def test_orphan_and_foreground_add_their_finalizers(server: Server) -> None:
    for name, policy, finalizer in (("o", "Orphan", "orphan"), ("f", "Foreground", None)):
        server.request("POST", CM, {"metadata": {"name": name, "finalizers": [HOLD]}})
        code, answer = server.request("DELETE", f"{CM}/{name}", {"propagationPolicy": policy})
        assert code == 200
        assert answer["kind"] == "ConfigMap"  # kept by the finalizer: the object, not a Status
        assert answer["metadata"]["deletionTimestamp"]
        assert answer["metadata"]["finalizers"] == [HOLD, finalizer or "foregroundDeletion"]
        # with no dependents, the garbage collector lets the finalizer go at once
        finalizers_become(server, f"{CM}/{name}", [HOLD])
    # a further DELETE runs the policy again: its finalizer is added (and released again)
    code, again = server.request("DELETE", CM + "/o", {"propagationPolicy": "Foreground"})
    assert again["metadata"]["finalizers"] == [HOLD, "foregroundDeletion"]
    finalizers_become(server, CM + "/o", [HOLD])
    code, kept = server.request("DELETE", CM + "/o", {"propagationPolicy": "Background"})
    assert (code, kept["metadata"]["finalizers"]) == (200, [HOLD])
    server.request("PATCH", CM + "/o", {"metadata": {"finalizers": None}}, MERGE)
    assert server.request("GET", CM + "/o")[0] == 404  # the last finalizer gone: so is it
    server.request("POST", CM, {"metadata": {"name": "b"}})
    code, gone = server.request("DELETE", CM + "/b?propagationPolicy=Background")
    assert (code, gone["kind"], gone["status"]) == (200, "Status", "Success")


def test_a_kinds_default_policy_applies_when_none_is_sent(server: Server) -> None:
    server.request("POST", JOBS, workload("jobs", "j"))
    code, answer = server.request("DELETE", JOBS + "/j")
    assert code == 200
    assert answer["metadata"]["finalizers"] == ["orphan"]  # batch/v1 Jobs orphan their pods
    rc = {"metadata": {"name": "rc"}, "spec": workload("replicasets", "rc")["spec"]}
    rc["spec"]["selector"] = {"app": "rc"}
    server.request("POST", RC, rc)
    _, answer = server.request("DELETE", RC + "/rc")
    assert answer["metadata"]["finalizers"] == ["orphan"]
    server.request("POST", APPS + "/deployments", workload("deployments", "bg"))
    code, answer = server.request("DELETE", APPS + "/deployments/bg")
    assert (code, answer["kind"]) == (200, "Status")  # Background: gone at once
    server.request("POST", JOBS, workload("jobs", "j2"))
    code, answer = server.request("DELETE", JOBS + "/j2", {"propagationPolicy": "Background"})
    assert (code, answer["kind"]) == (200, "Status")


def test_kubectl_delete_cascade_orphan_marks_the_object_for_the_collector(server: Server) -> None:
    rs = workload("replicasets", "rs")
    rs["metadata"]["finalizers"] = [HOLD]
    server.request("POST", APPS + "/replicasets", rs)
    server.kubectl("delete", "replicaset/rs", "--cascade=orphan", "--wait=false")
    stored = finalizers_become(server, APPS + "/replicasets/rs", [HOLD])  # orphan: released
    assert stored["metadata"]["deletionTimestamp"]
    assert stored["metadata"]["generation"] == 2  # the first mark moves a tracked generation


# -- fix 4: finalizers of an object being deleted ----------------------------------------------


def test_no_new_finalizers_on_an_object_being_deleted(server: Server) -> None:
    server.request("POST", CM, {"metadata": {"name": "h", "finalizers": ["example.com/a"]}})
    server.request("DELETE", CM + "/h")
    patch = {"metadata": {"finalizers": ["example.com/a", "example.com/z", "example.com/b"]}}
    code, body = server.request("PATCH", CM + "/h", patch, MERGE)
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        'ConfigMap "h" is invalid: metadata.finalizers: Forbidden: no new finalizers can be '
        'added if the object is being deleted, found new finalizers []string{"example.com/b", '
        '"example.com/z"}'
    )
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: no new finalizers can be added if the object is being "
            'deleted, found new finalizers []string{"example.com/b", "example.com/z"}',
            "field": "metadata.finalizers",
        }
    ]
    _, stored = server.request("GET", CM + "/h")
    assert stored["metadata"]["finalizers"] == ["example.com/a"]


def test_clearing_the_last_finalizer_shows_watchers_only_deleted(server: Server) -> None:
    server.request("POST", CM, {"metadata": {"name": "last", "finalizers": ["example.com/a"]}})
    _, marked = server.request("DELETE", CM + "/last")
    rv = marked["metadata"]["resourceVersion"]
    reader, events = server.watch_lines(f"{CM}?watch=1&resourceVersion={rv}", 3)
    time.sleep(0.5)
    code, answer = server.request("PATCH", CM + "/last", {"metadata": {"finalizers": None}}, MERGE)
    assert code == 200
    assert answer["kind"] == "ConfigMap"
    assert "finalizers" not in answer["metadata"]  # the object as the request left it
    assert answer["metadata"]["resourceVersion"] == rv
    reader.join(30)
    assert [e["type"] for e in events] == ["DELETED"]
    deleted = events[0]["object"]
    assert deleted["metadata"]["finalizers"] == ["example.com/a"]  # the last stored state
    assert int(deleted["metadata"]["resourceVersion"]) > int(rv)
    assert server.request("GET", CM + "/last")[0] == 404


# -- fix 5 (GET): a resourceVersion the store has not reached --------------------------------------


def test_get_with_a_future_resource_version_waits_then_answers_504(server: Server) -> None:
    _, made = server.request("POST", CM, {"metadata": {"name": "rv"}})
    rv = int(made["metadata"]["resourceVersion"])
    code, same = server.request("GET", f"{CM}/rv?resourceVersion={rv}")
    assert (code, same["metadata"]["name"]) == (200, "rv")
    code, body = server.request("GET", f"{CM}/rv?resourceVersion={rv + 1000}")
    assert code == 504
    assert body["message"].startswith(f"Timeout: Too large resource version: {rv + 1000}, current:")
    assert body["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    assert body["details"]["retryAfterSeconds"] == 1


# -- the verbs a resource serves follow from its storage ----------------------------------------


def test_discovery_lists_the_verbs_each_storage_serves(server: Server) -> None:
    _, core = server.request("GET", "/api/v1")
    verbs = {r["name"]: r["verbs"] for r in core["resources"]}
    assert verbs["namespaces"] == ["create", "delete", "get", "list", "patch", "update", "watch"]
    assert verbs["namespaces/finalize"] == ["update"]
    assert verbs["namespaces/status"] == ["get", "patch", "update"]
    assert verbs["componentstatuses"] == ["get", "list", "watch"]
    assert verbs["bindings"] == ["create"]
    assert verbs["pods/binding"] == ["create"]
    assert verbs["serviceaccounts/token"] == ["create"]
    assert "deletecollection" in verbs["configmaps"]
    code, _ = server.request("POST", "/api/v1/componentstatuses", {"metadata": {"name": "x"}})
    assert code == 405
    code, _ = server.request("DELETE", NS)
    assert code == 405  # namespaces serve no deletecollection
    code, _ = server.request("POST", CM + "/named", {"metadata": {"name": "named"}})
    assert code == 405  # a create names no object


def test_a_binding_assigns_a_pod_to_a_node(server: Server) -> None:
    # a scheduler no pod waits for: this test binds the pod itself
    spec = {"containers": [{"name": "c", "image": "i"}], "schedulerName": "kubelite.test/none"}
    pod = {"metadata": {"name": "p"}, "spec": spec}
    pods = "/api/v1/namespaces/{ns}/pods"
    server.request("POST", pods, pod)
    binding = {
        "metadata": {"name": "p", "annotations": {"bound": "yes"}},
        "target": {"kind": "Node", "name": "node-1"},
    }
    code, answer = server.request("POST", pods + "/p/binding", binding)
    assert (code, answer["status"]) == (201, "Success")
    _, bound = server.request("GET", pods + "/p")
    assert bound["spec"]["nodeName"] == "node-1"
    assert bound["metadata"]["annotations"] == {"bound": "yes"}
    [scheduled] = [c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled == {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": scheduled["lastTransitionTime"],
    }
    assert bound["metadata"]["generation"] == 1  # a binding bypasses the pod strategy
    stale = {**binding, "metadata": {**binding["metadata"], "resourceVersion": "1"}}
    code, body = server.request("POST", "/api/v1/namespaces/{ns}/bindings", stale)
    assert code == 409
    assert body["message"].startswith(
        'Operation cannot be fulfilled on pods "p": Precondition failed: ResourceVersion in '
        "precondition: 1, ResourceVersion in object meta: "
    )
    code, body = server.request("POST", "/api/v1/namespaces/{ns}/bindings", binding)
    assert code == 409
    assert body["message"] == (
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node '
        '"node-1"'
    )
    assert server.request("GET", "/api/v1/namespaces/{ns}/bindings/p")[0] == 405


def test_delete_answers_with_the_object_for_kinds_that_return_it(server: Server) -> None:
    server.request("POST", "/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "a"}})
    code, answer = server.request("DELETE", "/api/v1/namespaces/{ns}/serviceaccounts/a")
    assert (code, answer["kind"]) == (200, "ServiceAccount")
    server.request("POST", CM, {"metadata": {"name": "s"}})
    code, answer = server.request("DELETE", CM + "/s")
    assert (code, answer["kind"]) == (200, "Status")


@pytest.mark.fresh_server  # every namespace's ConfigMaps listed
def test_collection_paths_serve_only_collection_verbs(server: Server) -> None:
    """PUT and PATCH name an object; across all namespaces a namespaced resource serves only
    list and watch. Nothing is stored by a refused request."""
    svc = {"metadata": {"generateName": "s-"}, "spec": {"ports": [{"port": 80}]}}
    assert server.request("PUT", "/api/v1/namespaces/{ns}/services", svc)[0] == 405
    assert server.request("PATCH", CM, {"data": {"a": "b"}}, MERGE)[0] == 405
    assert server.request("POST", "/api/v1/configmaps", {"metadata": {"name": "x"}})[0] == 405
    assert server.request("DELETE", "/api/v1/configmaps")[0] == 405
    code, everything = server.request("GET", "/api/v1/configmaps")
    assert code == 200
    # only the root CA ConfigMap of each namespace, as on any cluster
    assert [i["metadata"]["name"] for i in everything["items"]] == [ROOT_CA] * 4
    _, services = server.request("GET", "/api/v1/namespaces/{ns}/services")
    # only the Service every cluster has (default/kubernetes)
    assert [s["metadata"]["name"] for s in services["items"]] == ["kubernetes"]
