"""The garbage collector over HTTP (kubernetes ``pkg/controller/garbagecollector``): each
propagation policy, chains of owners, owners of another kind (a custom resource owning ConfigMaps),
dangling and invalid owners, blockOwnerDeletion, a CRD removed while its objects own others, and
``kubectl delete --cascade``. Every wait is a hang guard, never a timing assertion."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from harness import Server

Obj = dict[str, Any]

NS = "/api/v1/namespaces"
CM = "/api/v1/namespaces/{ns}/configmaps"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/gc.example.org/v1/namespaces/{ns}/widgets"
MERGE = "application/merge-patch+json"
HOLD = "example.com/hold"


def until(condition: Callable[[], Any], what: str, seconds: float = 30) -> Any:
    deadline = time.monotonic() + seconds  # a hang guard
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def ok(server: Server, method: str, path: str, body: Any = None, **kw: Any) -> Obj:
    code, got = server.request(method, path, body, **kw)
    assert code in (200, 201), (code, got)
    return got


def ref(owner: Obj, **extra: Any) -> Obj:
    meta = owner["metadata"]
    kind = owner.get("kind") or "ConfigMap"
    api_version = owner.get("apiVersion") or "v1"
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta["name"],
        "uid": meta["uid"],
    } | extra


def configmap(server: Server, name: str, *owners: Obj, finalizers: list[str] | None = None) -> Obj:
    meta: Obj = {"name": name}
    if owners:
        meta["ownerReferences"] = list(owners)
    if finalizers:
        meta["finalizers"] = finalizers
    return ok(server, "POST", CM, {"metadata": meta})


def gone(server: Server, path: str) -> bool:
    return server.request("GET", path)[0] == 404


def get(server: Server, path: str) -> Obj:
    return ok(server, "GET", path)


def test_background_deletes_the_dependents_after_the_owner(server: Server) -> None:
    owner = configmap(server, "owner")
    for i in range(3):
        configmap(server, f"dep{i}", ref(owner))
    code, answer = server.request("DELETE", CM + "/owner", {"propagationPolicy": "Background"})
    assert (code, answer["kind"]) == (200, "Status")  # the owner goes at once
    for i in range(3):
        until(lambda i=i: gone(server, f"{CM}/dep{i}"), f"dep{i} collected")


def test_foreground_waits_for_blocking_dependents(server: Server) -> None:
    owner = configmap(server, "owner")
    # a blocking dependent held by its own finalizer keeps the owner; a non-blocking one is
    # deleted but does not hold the owner back
    configmap(server, "blocker", ref(owner, blockOwnerDeletion=True), finalizers=[HOLD])
    configmap(server, "free", ref(owner), finalizers=[HOLD])
    code, answer = server.request("DELETE", CM + "/owner", {"propagationPolicy": "Foreground"})
    assert code == 200
    assert answer["metadata"]["finalizers"] == ["foregroundDeletion"]
    until(lambda: get(server, CM + "/blocker")["metadata"].get("deletionTimestamp"), "blocker")
    until(lambda: get(server, CM + "/free")["metadata"].get("deletionTimestamp"), "free deleting")
    # the blocker is still there: the owner waits, marked
    waiting = get(server, CM + "/owner")
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert waiting["metadata"]["deletionTimestamp"]
    server.request("PATCH", CM + "/blocker", {"metadata": {"finalizers": None}}, MERGE)
    until(lambda: gone(server, CM + "/owner"), "the owner goes once its blocker is gone")
    assert get(server, CM + "/free")["metadata"]["finalizers"] == [HOLD]  # never blocked it
    server.request("PATCH", CM + "/free", {"metadata": {"finalizers": None}}, MERGE)


def test_orphan_keeps_the_dependents_without_the_reference(server: Server) -> None:
    owner = configmap(server, "owner")
    other = configmap(server, "other")
    configmap(server, "dep", ref(owner), ref(other))
    configmap(server, "only", ref(owner, controller=True))
    _, answer = server.request("DELETE", CM + "/owner", {"propagationPolicy": "Orphan"})
    assert answer["metadata"]["finalizers"] == ["orphan"]
    until(lambda: gone(server, CM + "/owner"), "the owner goes once its dependents are orphaned")
    assert get(server, CM + "/dep")["metadata"]["ownerReferences"] == [ref(other)]
    assert "ownerReferences" not in get(server, CM + "/only")["metadata"]


def test_a_chain_goes_in_the_foreground_last_owner_first_waiting(server: Server) -> None:
    a = configmap(server, "a")
    b = configmap(server, "b", ref(a, blockOwnerDeletion=True))
    configmap(server, "c", ref(b, blockOwnerDeletion=True), finalizers=[HOLD])
    server.request("DELETE", CM + "/a", {"propagationPolicy": "Foreground"})
    # b has a dependent, so it is deleted in the foreground too, and waits for c
    until(
        lambda: get(server, CM + "/b")["metadata"].get("finalizers") == ["foregroundDeletion"],
        "b deleting in the foreground",
    )
    until(lambda: get(server, CM + "/c")["metadata"].get("deletionTimestamp"), "c deleting")
    assert not gone(server, CM + "/a")
    assert not gone(server, CM + "/b")
    server.request("PATCH", CM + "/c", {"metadata": {"finalizers": None}}, MERGE)
    until(lambda: gone(server, CM + "/a"), "a goes after b and c")
    assert gone(server, CM + "/b")
    assert gone(server, CM + "/c")


def test_a_background_chain_is_collected_link_by_link(server: Server) -> None:
    a = configmap(server, "a")
    b = configmap(server, "b", ref(a))
    configmap(server, "c", ref(b))
    server.request("DELETE", CM + "/a")
    until(lambda: gone(server, CM + "/c"), "c collected after b")
    assert gone(server, CM + "/b")


def test_dangling_owners(server: Server) -> None:
    missing = {"apiVersion": "v1", "kind": "ConfigMap", "name": "nobody", "uid": "no-such-uid"}
    configmap(server, "orphaned", missing)
    until(lambda: gone(server, CM + "/orphaned"), "a dependent of a missing owner is collected")
    live = configmap(server, "live")
    configmap(server, "mixed", missing, ref(live))
    until(
        lambda: get(server, CM + "/mixed")["metadata"]["ownerReferences"] == [ref(live)],
        "only the dangling reference goes when another owner lives",
    )
    # an owner of that name but another uid is not the owner
    impostor = {**ref(live), "uid": "another-uid"}
    configmap(server, "fooled", impostor)
    until(lambda: gone(server, CM + "/fooled"), "a reference to a replaced owner dangles")


@pytest.mark.fresh_server  # it makes a namespace "elsewhere"
def test_a_namespaced_owner_in_another_namespace_is_absent_and_reported(server: Server) -> None:
    ok(server, "POST", NS, {"metadata": {"name": "elsewhere"}})
    owner = ok(server, "POST", NS + "/elsewhere/configmaps", {"metadata": {"name": "owner"}})
    dep = configmap(server, "dep", ref(owner))
    until(lambda: gone(server, CM + "/dep"), "an owner in another namespace counts as absent")
    assert not gone(server, NS + "/elsewhere/configmaps/owner")
    # the collector saw the owner in its own namespace: the reference is reported on the
    # dependent (a Warning event, as kube's graph builder records it)

    def reported() -> list[Obj]:
        events = get(server, "/api/v1/namespaces/{ns}/events")["items"]
        return [e for e in events if e["reason"] == "OwnerRefInvalidNamespace"]

    [event] = until(reported, "an OwnerRefInvalidNamespace event")
    assert event["type"] == "Warning"
    assert event["involvedObject"] == {
        "kind": "ConfigMap",
        "namespace": "default",
        "name": "dep",
        "uid": dep["metadata"]["uid"],
        "apiVersion": "v1",
    }
    assert event["message"] == (
        f"ownerRef [v1/ConfigMap, namespace: default, name: owner, uid: "
        f'{owner["metadata"]["uid"]}] does not exist in namespace "default"'
    )
    assert event["source"] == {"component": "garbage-collector-controller"}


@pytest.mark.fresh_server  # it makes (and collects) namespaces
def test_a_cluster_scoped_dependent_of_a_namespaced_owner_is_never_collected(
    server: Server,
) -> None:
    namespaced = {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "no-uid"}
    ok(server, "POST", NS, {"metadata": {"name": "held", "ownerReferences": [namespaced]}})
    owner = ok(server, "POST", NS, {"metadata": {"name": "owner"}})
    owned = {"name": "owned", "ownerReferences": [ref(owner, apiVersion="v1", kind="Namespace")]}
    ok(server, "POST", NS, {"metadata": owned})
    server.request("DELETE", NS + "/owner")

    def collected() -> bool:  # gone, or deleting (a namespace waits to be emptied)
        code, got = server.request("GET", NS + "/owned")
        return code == 404 or bool(got["metadata"].get("deletionTimestamp"))

    until(collected, "a cluster-scoped dependent of a cluster-scoped owner is collected")
    held = get(server, NS + "/held")  # its reference cannot resolve: kept
    assert "deletionTimestamp" not in held["metadata"]


def crd(scope: str = "Namespaced") -> Obj:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.gc.example.org"},
        "spec": {
            "group": "gc.example.org",
            "scope": scope,
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def widget(server: Server, name: str) -> Obj:
    body = {"apiVersion": "gc.example.org/v1", "kind": "Widget", "metadata": {"name": name}}

    def created() -> Obj | None:
        code, got = server.request("POST", WIDGETS, body)
        return got if code == 201 else None

    return until(created, "the CRD serves widgets")  # type: ignore[no-any-return]


def test_a_custom_resource_owns_configmaps(server: Server) -> None:
    ok(server, "POST", CRDS, crd())
    owner = widget(server, "w")
    configmap(server, "dep", ref(owner))
    configmap(server, "blocker", ref(owner, blockOwnerDeletion=True), finalizers=[HOLD])
    server.request("DELETE", WIDGETS + "/w", {"propagationPolicy": "Foreground"})
    until(lambda: gone(server, CM + "/dep"), "the widget's ConfigMap collected")
    assert get(server, WIDGETS + "/w")["metadata"]["finalizers"] == ["foregroundDeletion"]
    server.request("PATCH", CM + "/blocker", {"metadata": {"finalizers": None}}, MERGE)
    until(lambda: gone(server, WIDGETS + "/w"), "the widget goes after its blocker")


def test_a_crd_removed_while_its_objects_own_others(server: Server) -> None:
    ok(server, "POST", CRDS, crd())
    owners = [widget(server, f"w{i}") for i in range(3)]
    for i, owner in enumerate(owners):
        configmap(server, f"dep{i}", ref(owner))
    # the CRD's cleanup deletes the widgets, then the kind goes; their ConfigMaps follow
    server.request("DELETE", CRDS + "/widgets.gc.example.org")
    until(lambda: gone(server, CRDS + "/widgets.gc.example.org"), "the CRD removed")
    for i in range(3):
        until(lambda i=i: gone(server, f"{CM}/dep{i}"), f"dep{i} collected")


def test_kubectl_delete_cascade(server: Server) -> None:
    for policy in ("background", "foreground", "orphan"):
        owner = configmap(server, f"owner-{policy}")
        configmap(server, f"dep-{policy}", ref(owner, blockOwnerDeletion=True))
        server.kubectl("delete", f"configmap/owner-{policy}", f"--cascade={policy}")
        # kubectl waits until the owner is gone (its --wait default)
        assert gone(server, f"{CM}/owner-{policy}")
        if policy == "foreground":  # the owner went only after its dependent
            assert gone(server, f"{CM}/dep-{policy}")
        elif policy == "orphan":
            assert "ownerReferences" not in get(server, f"{CM}/dep-{policy}")["metadata"]
        else:
            until(lambda: gone(server, f"{CM}/dep-background"), "background dependent")


def test_a_job_deleted_without_a_policy_orphans_its_dependents(server: Server) -> None:
    pod_spec = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
    job = {"metadata": {"name": "j"}, "spec": {"template": {"spec": pod_spec}}}
    job = ok(server, "POST", "/apis/batch/v1/namespaces/{ns}/jobs", job)
    configmap(server, "dep", ref(job, controller=True))
    server.request("DELETE", "/apis/batch/v1/namespaces/{ns}/jobs/j")  # batch/v1: Orphan
    until(lambda: gone(server, "/apis/batch/v1/namespaces/{ns}/jobs/j"), "the job goes")
    assert "ownerReferences" not in get(server, CM + "/dep")["metadata"]
