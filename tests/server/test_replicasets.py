"""The ReplicaSet and ReplicationController controllers (kube's pkg/controller/replicaset and
pkg/controller/replication) over HTTP: pods made from the template and owned, deleted in kube's
order, replaced, adopted and released; the status as the pods run on the simulated node; kubectl's
view of it."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, TypeVar

from harness import Server

Obj = dict[str, Any]
T = TypeVar("T")
RSS = "/apis/apps/v1/namespaces/{ns}/replicasets"
RCS = "/api/v1/namespaces/{ns}/replicationcontrollers"
PODS = "/api/v1/namespaces/{ns}/pods"
EVENTS = "/api/v1/namespaces/{ns}/events"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
#: generateName's suffix: five characters of apimachinery's alphabet
SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
CONTAINERS = [{"name": "c", "image": "nginx"}]


def wait_for(probe: Callable[[], T | None], seconds: float = 30.0) -> T:
    """``probe``'s first answer that is not None, polled every 50 ms until a deadline."""
    deadline = time.monotonic() + seconds
    while True:
        found = probe()
        if found is not None:
            return found
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def replica_set(
    name: str,
    replicas: int,
    labels: dict[str, str] | None = None,
    *,
    annotations: dict[str, str] | None = None,
    min_ready: int = 0,
) -> Obj:
    labels = labels or {"app": name}
    template: Obj = {"labels": labels}
    if annotations:
        template["annotations"] = annotations
    spec: Obj = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": labels["app"]}},
        "template": {"metadata": template, "spec": {"containers": CONTAINERS}},
    }
    if min_ready:
        spec["minReadySeconds"] = min_ready
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name}, "spec": spec}


def create(server: Server, path: str, body: Obj) -> Obj:
    code, made = server.request("POST", path, body)
    assert code == 201, made
    return made


def get(server: Server, path: str) -> Obj:
    code, found = server.request("GET", path)
    assert code == 200, found
    return found


def pods(server: Server, selector: str | None = None) -> list[Obj]:
    path = PODS + (f"?labelSelector={selector}" if selector else "")
    return list(get(server, path)["items"])


def owned_by(server: Server, owner: Obj) -> list[Obj]:
    uid = owner["metadata"]["uid"]
    return [
        p
        for p in pods(server)
        if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
    ]


def status_when(server: Server, path: str, check: Callable[[Obj], bool]) -> Obj:
    return wait_for(
        lambda: (lambda o: o if check(o.get("status") or {}) else None)(get(server, path))
    )


def settled(replicas: int, generation: int = 1) -> Callable[[Obj], bool]:
    """Every replica created, ready and available, the generation observed."""
    return lambda s: (
        s.get("replicas") == replicas
        and s.get("readyReplicas", 0) == replicas
        and s.get("availableReplicas", 0) == replicas
        and s.get("observedGeneration") == generation
    )


def events(server: Server, name: str, reason: str) -> list[Obj]:
    return [
        e
        for e in get(server, EVENTS)["items"]
        if e["involvedObject"]["name"] == name and e["reason"] == reason
    ]


def ready(pod: Obj) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def test_scale_up_creates_owned_pods_from_the_template(server: Server) -> None:
    body = replica_set(
        "web", 3, {"app": "web", "tier": "front"}, annotations={"example.com/note": "hi"}
    )
    rs = create(server, RSS, body)
    rs = status_when(server, f"{RSS}/web", settled(3))
    assert rs["status"] == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "terminatingReplicas": 0,
        "observedGeneration": 1,
    }
    owned = owned_by(server, rs)
    assert len(owned) == 3
    for pod in owned:
        meta = pod["metadata"]
        assert meta["generateName"] == "web-"
        assert re.fullmatch(f"web-{SUFFIX}", meta["name"]), meta["name"]
        assert meta["labels"] == {"app": "web", "tier": "front"}
        assert meta["annotations"]["example.com/note"] == "hi"
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": rs["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert {m["manager"] for m in meta["managedFields"]} >= {"kube-controller-manager"}
        assert pod["spec"]["containers"][0]["image"] == "nginx"
    created = events(server, "web", "SuccessfulCreate")
    assert sorted(e["message"] for e in created) == sorted(
        f"Created pod: {p['metadata']['name']}" for p in owned
    )
    assert {(e["type"], e["source"]["component"]) for e in created} == {
        ("Normal", "replicaset-controller")
    }
    assert events(server, "web", "SuccessfulDelete") == []
    status_managers = {
        m["manager"] for m in rs["metadata"]["managedFields"] if m.get("subresource") == "status"
    }
    assert status_managers == {"kube-controller-manager"}


def make_pod(
    server: Server, name: str, labels: dict[str, str], annotations: dict[str, str]
) -> None:
    body = {
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"containers": CONTAINERS},
    }
    create(server, PODS, body)


def test_scale_down_deletes_not_ready_then_cheaper_pods_first(server: Server) -> None:
    """Four orphans, adopted: one never ready, three ready with deletion costs 0, 5 and 10. From
    four to two replicas, the not ready one and the cheapest ready one go."""
    cost = "controller.kubernetes.io/pod-deletion-cost"
    make_pod(server, "unready", {"app": "down"}, {"kubelite.dev/simulate-never-ready": "true"})
    make_pod(server, "cost0", {"app": "down"}, {cost: "0"})
    make_pod(server, "cost5", {"app": "down"}, {cost: "5"})
    make_pod(server, "cost10", {"app": "down"}, {cost: "10"})
    create(server, RSS, replica_set("down", 4))
    rs = status_when(server, f"{RSS}/down", lambda s: s.get("readyReplicas") == 3)
    assert rs["status"]["replicas"] == 4
    assert events(server, "down", "SuccessfulCreate") == []  # all four adopted, none made
    code, scaled = server.request(
        "PATCH",
        f"{RSS}/down/scale",
        {"spec": {"replicas": 2}},
        content_type="application/merge-patch+json",
    )
    assert code == 200, scaled
    status_when(server, f"{RSS}/down", settled(2, generation=2))
    deleted = sorted(e["message"] for e in events(server, "down", "SuccessfulDelete"))
    assert deleted == ["Deleted pod: cost0", "Deleted pod: unready"]
    remaining = {
        p["metadata"]["name"]
        for p in pods(server, "app=down")
        if not p["metadata"].get("deletionTimestamp")
    }
    assert remaining == {"cost5", "cost10"}


def test_a_deleted_pod_is_replaced_while_it_terminates(server: Server) -> None:
    """The pods take 20 s to stop: the replacement is there while the old one terminates."""
    body = replica_set("keep", 2, annotations={"kubelite.dev/simulate-stop-seconds": "20"})
    rs = create(server, RSS, body)
    status_when(server, f"{RSS}/keep", settled(2))
    first, second = sorted(p["metadata"]["name"] for p in owned_by(server, rs))
    assert server.request("DELETE", f"{PODS}/{first}")[0] == 200
    rs = status_when(
        server,
        f"{RSS}/keep",
        lambda s: s.get("terminatingReplicas") == 1 and s.get("readyReplicas") == 2,
    )
    assert rs["status"]["replicas"] == 2
    current = {p["metadata"]["name"]: p for p in owned_by(server, rs)}
    assert current[first]["metadata"].get("deletionTimestamp")  # still terminating
    (replacement,) = set(current) - {first, second}
    assert ready(current[replacement])
    assert len(events(server, "keep", "SuccessfulCreate")) == 3


def test_an_orphan_is_adopted_and_a_relabelled_pod_released(server: Server) -> None:
    make_pod(server, "orphan", {"app": "adopt"}, {})
    rs = create(server, RSS, replica_set("adopt", 2))
    status_when(server, f"{RSS}/adopt", settled(2))
    orphan = get(server, f"{PODS}/orphan")
    assert orphan["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "adopt",
            "uid": rs["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert len(events(server, "adopt", "SuccessfulCreate")) == 1  # one made, one adopted
    code, relabelled = server.request(
        "PATCH", f"{PODS}/orphan", {"metadata": {"labels": {"app": "elsewhere"}}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert code == 200, relabelled
    released = wait_for(
        lambda: (lambda p: p if not p["metadata"].get("ownerReferences") else None)(
            get(server, f"{PODS}/orphan")
        )
    )
    assert released["metadata"]["labels"] == {"app": "elsewhere"}
    rs = status_when(server, f"{RSS}/adopt", settled(2))
    owned = owned_by(server, rs)
    assert len(owned) == 2
    assert "orphan" not in {p["metadata"]["name"] for p in owned}
    assert len(events(server, "adopt", "SuccessfulCreate")) == 2  # the released one replaced


def test_available_waits_for_min_ready_seconds(server: Server) -> None:
    """An hour of minReadySeconds: ready, not available; without it, available."""
    create(server, RSS, replica_set("slow", 2, min_ready=3600))
    rs = status_when(server, f"{RSS}/slow", lambda s: s.get("readyReplicas") == 2)
    assert rs["status"].get("availableReplicas", 0) == 0
    assert rs["status"]["fullyLabeledReplicas"] == 2
    code, patched = server.request(
        "PATCH", f"{RSS}/slow", {"spec": {"minReadySeconds": 0}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert code == 200, patched
    status_when(server, f"{RSS}/slow", settled(2, generation=2))


def test_available_follows_min_ready_seconds_without_other_changes(server: Server) -> None:
    """The pods turn ready a second after they start; two seconds later they count as
    available, though nothing changes then (the controller looks again after minReadySeconds)."""
    body = replica_set(
        "soon", 2, annotations={"kubelite.dev/simulate-ready-seconds": "1"}, min_ready=2
    )
    create(server, RSS, body)
    rs = status_when(server, f"{RSS}/soon", settled(2))
    for pod in owned_by(server, rs):
        (condition,) = [c for c in pod["status"]["conditions"] if c["type"] == "Ready"]
        assert condition["status"] == "True"


def test_kubectl_scale_and_get(server: Server) -> None:
    create(server, RSS, replica_set("kube", 1))
    status_when(server, f"{RSS}/kube", settled(1))
    out = server.kubectl("scale", "rs/kube", "--replicas=3").stdout
    assert out.strip() == "replicaset.apps/kube scaled"
    status_when(server, f"{RSS}/kube", settled(3, generation=2))
    lines = server.kubectl("get", "rs", "kube").stdout.splitlines()
    assert lines[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert lines[1].split()[:4] == ["kube", "3", "3", "3"]


def replication_controller(name: str, replicas: int) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": labels,
            "template": {"metadata": {"labels": labels}, "spec": {"containers": CONTAINERS}},
        },
    }


def test_a_replication_controller_runs_its_pods(server: Server) -> None:
    rc = create(server, RCS, replication_controller("legacy", 2))
    rc = status_when(server, f"{RCS}/legacy", settled(2))
    assert rc["status"] == {
        "replicas": 2,
        "fullyLabeledReplicas": 2,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "observedGeneration": 1,
    }
    owned = owned_by(server, rc)
    assert len(owned) == 2
    for pod in owned:
        assert pod["metadata"]["generateName"] == "legacy-"
        (ref,) = pod["metadata"]["ownerReferences"]
        assert ref == {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "name": "legacy",
            "uid": rc["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    created = events(server, "legacy", "SuccessfulCreate")
    assert {e["source"]["component"] for e in created} == {"replication-controller"}
    assert len(created) == 2
    out = server.kubectl("scale", "rc/legacy", "--replicas=1").stdout
    assert out.strip() == "replicationcontroller/legacy scaled"
    status_when(server, f"{RCS}/legacy", settled(1, generation=2))
    (deleted,) = events(server, "legacy", "SuccessfulDelete")
    assert deleted["message"].startswith("Deleted pod: legacy-")
    lines = server.kubectl("get", "rc", "legacy").stdout.splitlines()
    assert lines[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert lines[1].split()[:4] == ["legacy", "1", "1", "1"]


def test_a_refused_create_is_a_replica_failure(server: Server) -> None:
    """A ValidatingAdmissionPolicy bound to this namespace refuses the pods: FailedCreate events
    and the ReplicaFailure condition; once the binding goes, the pod is made and the condition
    removed."""
    namespace = server.namespace
    policy = f"no-pods.{namespace}.example.com"
    create(server, f"{ADMISSION}/validatingadmissionpolicies", {
        "metadata": {"name": policy},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["pods"],
            }]},
            "validations": [{"expression": "false", "message": "no pods here"}],
        },
    })  # fmt: skip
    binding = f"no-pods-{namespace}"
    create(server, f"{ADMISSION}/validatingadmissionpolicybindings", {
        "metadata": {"name": binding},
        "spec": {
            "policyName": policy, "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": namespace},
            }},
        },
    })  # fmt: skip
    try:
        # the policy is in force once a plain create (a dry run) is refused
        probe = {"metadata": {"generateName": "probe-"}, "spec": {"containers": CONTAINERS}}
        wait_for(lambda: server.request("POST", f"{PODS}?dryRun=All", probe)[0] == 422 or None)
        create(server, RSS, replica_set("refused", 1))
        rs = status_when(server, f"{RSS}/refused", lambda s: bool(s.get("conditions")))
        (condition,) = rs["status"]["conditions"]
        assert {k: condition[k] for k in ("type", "status", "reason")} == {
            "type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
        }  # fmt: skip
        assert condition["lastTransitionTime"]
        denial = re.escape(
            f"is forbidden: ValidatingAdmissionPolicy '{policy}' with binding '{binding}' "
            "denied request: no pods here"
        )
        assert re.fullmatch(f'pods "refused-{SUFFIX}" {denial}', condition["message"])
        failed = events(server, "refused", "FailedCreate")
        assert {e["type"] for e in failed} == {"Warning"}
        for event in failed:
            assert re.fullmatch(
                f'Error creating: pods "refused-{SUFFIX}" {denial}', event["message"]
            )
        assert rs["status"]["replicas"] == 0
    finally:
        server.request("DELETE", f"{ADMISSION}/validatingadmissionpolicybindings/{binding}")
        server.request("DELETE", f"{ADMISSION}/validatingadmissionpolicies/{policy}")
    rs = status_when(server, f"{RSS}/refused", lambda s: s.get("readyReplicas") == 1)
    assert "conditions" not in rs["status"]
    assert len(events(server, "refused", "SuccessfulCreate")) == 1
