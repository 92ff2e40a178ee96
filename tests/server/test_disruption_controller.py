"""The disruption controller (kube's pkg/controller/disruption/disruption.go) over HTTP: a
PodDisruptionBudget's status follows its pods becoming ready, unready and going away. The pods run
on the simulated node, whose kubelet reports them and finishes their graceful deletion; where a
test needs a ready pod to turn unready, it plays the kubelet of a plain Node of its own server
(the pod's status written through ``pods/status``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import kubeletplay
import pytest
from harness import Server
from test_eviction import PDBS, PODS, make_pod, pdb_body, wait_for, wait_gone

EVENTS = "/api/v1/namespaces/{ns}/events"


def status_of(server: Server, name: str) -> Any:
    code, pdb = server.request("GET", f"{PDBS}/{name}")
    assert code == 200, pdb
    return pdb


def settled(server: Server, name: str, check: Callable[[Any], bool]) -> Any:
    return wait_for(lambda: (lambda p: p if check(p) else None)(status_of(server, name)))


def write_status(server: Server, path: str, change: Callable[[Any], None]) -> Any:
    """``change`` made to the object at ``path`` and PUT to its status, read again on a 409 (a
    controller or the kubelet wrote in between)."""

    def attempt() -> Any:
        code, found = server.request("GET", path)
        assert code == 200, found
        change(found)
        code, written = server.request("PUT", f"{path}/status", found)
        assert code in (200, 409), written
        return written if code == 200 else None

    return wait_for(attempt)


def counts(pdb: Any) -> dict[str, Any]:
    status = pdb.get("status") or {}
    return {k: status.get(k) for k in
            ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")}  # fmt: skip


def condition(pdb: Any) -> Any:
    (found,) = [
        c for c in pdb["status"].get("conditions") or [] if c["type"] == "DisruptionAllowed"
    ]
    return found


#: a Node no kubelet runs (not simulated): the test writes its pods' status
PLAYED = "played"


@pytest.mark.fresh_server  # it adds a Node (the scheduler would place other tests' pods there)
def test_status_follows_pods_ready_unready_and_gone(server: Server) -> None:
    """a runs on the simulated node; b on a plain Node, where the test plays its kubelet."""
    kubeletplay.make_node(server, PLAYED)
    code, pdb = server.request("POST", PDBS, pdb_body("budget", {"minAvailable": 1}))
    assert code == 201, pdb
    zeros = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    assert pdb["status"] == zeros  # the empty status, until the controller observes it
    pdb = settled(server, "budget", lambda p: p["status"].get("observedGeneration") == 1)
    assert pdb["status"] == {
        "observedGeneration": 1,
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 1,
        "expectedPods": 0,
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "False",
                "observedGeneration": 1,
                "lastTransitionTime": pdb["status"]["conditions"][0]["lastTransitionTime"],
                "reason": "InsufficientPods",
                "message": "",
            }
        ],
    }
    assert list(pdb["status"]) == [  # policy/v1's field order
        "observedGeneration", "disruptionsAllowed", "currentHealthy", "desiredHealthy",
        "expectedPods", "conditions",
    ]  # fmt: skip
    make_pod(server, "a", {"app": "web"})
    kubeletplay.make_pod(server, "b", {"app": "web"}, node=PLAYED)
    kubeletplay.set_status(server, "b", "10.0.0.2")
    pdb = settled(server, "budget", lambda p: p["status"]["currentHealthy"] == 2)
    assert counts(pdb) == {
        "disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2,
    }  # fmt: skip
    assert (condition(pdb)["status"], condition(pdb)["reason"]) == ("True", "SufficientPods")
    kubeletplay.set_status(server, "b", "10.0.0.2", ready=False)
    pdb = settled(server, "budget", lambda p: p["status"]["currentHealthy"] == 1)
    assert counts(pdb) == {
        "disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 2,
    }  # fmt: skip
    assert (condition(pdb)["status"], condition(pdb)["reason"]) == ("False", "InsufficientPods")
    assert server.request("DELETE", f"{PODS}/a")[0] == 200  # graceful: its kubelet stops it
    wait_gone(server, "a")
    pdb = settled(server, "budget", lambda p: p["status"]["expectedPods"] == 1)
    assert counts(pdb) == {
        "disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 1, "expectedPods": 1,
    }  # fmt: skip
    managers = {m["manager"] for m in pdb["metadata"]["managedFields"] if m.get("subresource")}
    assert managers == {"kube-controller-manager"}


def test_no_pods_event(server: Server) -> None:
    server.request("POST", PDBS, pdb_body("lonely", {"minAvailable": 1}))

    def event() -> Any:
        _, listed = server.request("GET", EVENTS)
        found = [e for e in listed["items"] if e["reason"] == "NoPods"]
        return found[0] if found else None

    found = wait_for(event)
    assert found["type"] == "Normal"
    assert found["message"] == "No matching pods found"
    assert found["source"] == {"component": "controllermanager"}
    assert found["involvedObject"]["kind"] == "PodDisruptionBudget"
    assert found["involvedObject"]["name"] == "lonely"


#: the pods a ReplicaSet's controller makes from such a template run but are never ready
NEVER_READY = {"kubelite.dev/simulate-never-ready": "true"}


def replica_set(server: Server, name: str, replicas: int, *, never_ready: bool = False) -> Any:
    template: dict[str, Any] = {"labels": {"app": name}}
    if never_ready:
        template["annotations"] = NEVER_READY
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": template,
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    code, rs = server.request(
        "POST", f"/apis/apps/v1/namespaces/{server.namespace}/replicasets", body
    )
    assert code == 201, rs
    return rs


def owned_pod(server: Server, name: str, owner: Any, kind: str = "ReplicaSet") -> None:
    ref = {
        "apiVersion": owner.get("apiVersion") or "apps/v1", "kind": kind,
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"], "controller": True,
    }  # fmt: skip
    labels = owner["spec"]["template"]["metadata"]["labels"]
    make_pod(server, name, labels, owner=ref)


def rs_status(server: Server, name: str, check: Callable[[Any], bool]) -> Any:
    path = f"/apis/apps/v1/namespaces/{server.namespace}/replicasets/{name}"
    return wait_for(lambda: (lambda r: r if check(r.get("status") or {}) else None)(
        server.request("GET", path)[1]))  # fmt: skip


def test_percentages_count_the_controllers_scale(server: Server) -> None:
    """Three ready pods adopted by a ReplicaSet of four, whose fourth pod is never ready."""
    for i in range(3):
        make_pod(server, f"rs-{i}", {"app": "rs"})
    replica_set(server, "rs", 4, never_ready=True)
    rs_status(server, "rs", lambda s: s.get("replicas") == 4 and s.get("readyReplicas") == 3)
    server.request("POST", PDBS, pdb_body("pct", {"minAvailable": "50%"}, app="rs"))
    pdb = settled(server, "pct", lambda p: p["status"].get("currentHealthy") == 3)
    assert counts(pdb) == {
        "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 4,
    }  # fmt: skip
    server.request("POST", PDBS, pdb_body("maxu", {"maxUnavailable": "30%"}, app="rs"))
    pdb = settled(server, "maxu", lambda p: p["status"].get("currentHealthy") == 3)
    # 30% of 4 rounds up to 2: desired 4 - 2
    assert counts(pdb) == {
        "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 4,
    }  # fmt: skip


def test_a_pod_without_a_known_controller_fails_safe(server: Server) -> None:
    job = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"metadata": {"labels": {"app": "j"}}, "spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    }  # fmt: skip
    code, created = server.request(
        "POST", f"/apis/batch/v1/namespaces/{server.namespace}/jobs", job
    )
    assert code == 201, created
    owned_pod(server, "j-1", created, kind="Job")
    server.request("POST", PDBS, pdb_body("jobs", {"maxUnavailable": 1}, app="j"))
    pdb = settled(
        server,
        "jobs",
        lambda p: any(c.get("reason") == "SyncFailed" for c in p["status"].get("conditions") or []),
    )
    found = condition(pdb)
    assert found["status"] == "False"
    assert found["message"] == "jobs.batch does not implement the scale subresource"
    assert pdb["status"]["disruptionsAllowed"] == 0

    def event() -> Any:
        _, listed = server.request("GET", EVENTS)
        hits = [e for e in listed["items"] if e["reason"] == "CalculateExpectedPodCountFailed"]
        return hits[0] if hits else None

    assert wait_for(event)["message"] == (
        "Failed to calculate the number of expected pods: jobs.batch does not implement the "
        "scale subresource"
    )


def test_a_stale_disruption_target_is_turned_false(server: Server) -> None:
    """A pod left with DisruptionTarget True for 2 minutes without being deleted (an eviction
    whose delete failed) gets it set to False; the kubelet's TerminationByKubelet stays."""
    old = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 180))
    for name, reason in (("evicted", "EvictionByEvictionAPI"), ("kubelet", "TerminationByKubelet")):
        make_pod(server, name, {"app": "x"})
        stale = {"type": "DisruptionTarget", "status": "True", "lastTransitionTime": old,
                 "reason": reason, "message": "m"}  # fmt: skip
        write_status(
            server, f"{PODS}/{name}", lambda p, c=stale: p["status"]["conditions"].append(c)
        )

    def target(name: str) -> Any:
        _, pod = server.request("GET", f"{PODS}/{name}")
        (found,) = [c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget"]
        return found

    found = wait_for(lambda: (lambda c: c if c["status"] == "False" else None)(target("evicted")))
    assert found == {
        "type": "DisruptionTarget",
        "observedGeneration": 1,
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": found["lastTransitionTime"],
    }
    assert found["lastTransitionTime"] > old
    assert target("kubelet")["status"] == "True"


def test_a_deployments_replicas_count_for_its_replica_sets_pods(server: Server) -> None:
    """kube's finders: a ReplicaSet a Deployment controls counts the Deployment's replicas; a
    StatefulSet its own. The ReplicaSet adopts two ready pods and makes five never ready."""
    template = {
        "metadata": {"labels": {"app": "web"}, "annotations": NEVER_READY},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    make_pod(server, "d-1-a", {"app": "web"})
    make_pod(server, "d-1-b", {"app": "web"})
    apps = f"/apis/apps/v1/namespaces/{server.namespace}"
    selector = {"matchLabels": {"app": "web"}}
    code, deploy = server.request(
        "POST", f"{apps}/deployments",
        {"metadata": {"name": "d"},
         "spec": {"replicas": 3, "selector": selector, "template": template}},
    )  # fmt: skip
    assert code == 201, deploy
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d",
             "uid": deploy["metadata"]["uid"], "controller": True}  # fmt: skip
    code, rs = server.request(
        "POST", f"{apps}/replicasets",
        {"metadata": {"name": "d-1", "ownerReferences": [owner]},
         "spec": {"replicas": 7, "selector": selector, "template": template}},
    )  # fmt: skip
    assert code == 201, rs
    code, sts = server.request(
        "POST", f"{apps}/statefulsets",
        {"metadata": {"name": "s"},
         "spec": {"replicas": 2, "serviceName": "s", "selector": selector,
                  "template": template}},
    )  # fmt: skip
    assert code == 201, sts
    rs_status(server, "d-1", lambda s: s.get("replicas") == 7 and s.get("readyReplicas") == 2)
    owned_pod(server, "s-0", {**sts, "apiVersion": "apps/v1"}, kind="StatefulSet")
    server.request("POST", PDBS, pdb_body("pdb", {"maxUnavailable": "50%"}))
    pdb = settled(server, "pdb", lambda p: p["status"].get("currentHealthy") == 3)
    # expected 3 (the Deployment, not its ReplicaSet's 7) + 2; 50% of 5 rounds up to 3
    assert counts(pdb) == {
        "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 5,
    }  # fmt: skip


def test_unmanaged_pods_under_a_percentage_or_max_unavailable(server: Server) -> None:
    make_pod(server, "bare", {"app": "web"})
    server.request("POST", PDBS, pdb_body("pdb", {"maxUnavailable": 1}))
    pdb = settled(server, "pdb", lambda p: p["status"].get("currentHealthy") == 1)
    # no controller: nothing expected, so nothing may be disrupted
    assert counts(pdb) == {
        "disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 0,
    }  # fmt: skip

    def event() -> Any:
        _, listed = server.request("GET", EVENTS)
        hits = [e for e in listed["items"] if e["reason"] == "UnmanagedPods"]
        return hits[0] if hits else None

    found = wait_for(event)
    assert found["type"] == "Warning"
    assert found["message"] == (
        "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:"
        "map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}) were "
        "found to be unmanaged. As a result, the status of the PDB cannot be calculated "
        "correctly, which may result in undefined behavior. To account for these pods please "
        'set ".spec.minAvailable" field of the PDB to an integer value.'
    )


def test_disrupted_pods_expire_after_two_minutes(server: Server) -> None:
    """An eviction's entry keeps a pod out of currentHealthy until the pod goes, or for 2
    minutes; an expired one is dropped with the Warning NotDeleted on the pod."""
    for name in ("a", "b", "c"):
        make_pod(server, name, {"app": "web"})
    server.request("POST", PDBS, pdb_body("pdb", {"minAvailable": 1}))
    pdb = settled(server, "pdb", lambda p: p["status"].get("currentHealthy") == 3)
    old = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 121))
    recent = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_status(
        server, f"{PDBS}/pdb", lambda p: p["status"].update(disruptedPods={"a": old, "b": recent})
    )
    pdb = settled(server, "pdb", lambda p: p["status"].get("currentHealthy") == 2)
    assert pdb["status"]["disruptedPods"] == {"b": recent}
    assert counts(pdb) == {
        "disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 3,
    }  # fmt: skip

    def event() -> Any:
        _, listed = server.request("GET", EVENTS)
        hits = [e for e in listed["items"] if e["reason"] == "NotDeleted"]
        return hits[0] if hits else None

    found = wait_for(event)
    assert found["involvedObject"]["name"] == "a"
    namespace = server.namespace
    assert found["message"] == (
        f"Pod was expected by PDB {namespace}/{namespace} to be deleted but it wasn't"
    )
