"""The scheduler (default-scheduler) over HTTP: pods bound to Nodes through pods/binding, the
filters choosing and excluding nodes, the FailedScheduling texts, retries on cluster events.

Each test has a server of its own (Nodes are cluster-scoped) and creates plain Nodes, not
simulated ones: nothing runs the pods, so what the tests see is the scheduler's alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from harness import Server

from kubelite.api.simulation.config import Simulation

Obj = dict[str, Any]
OWN = pytest.mark.fresh_server(simulation=Simulation(nodes=0))
PODS = "/api/v1/namespaces/{ns}/pods"
MERGE = "application/merge-patch+json"


def node(server: Server, name: str, *, labels: Obj | None = None, spec: Obj | None = None,
         cpu: str = "4", memory: str = "8Gi", pods: str = "110") -> None:  # fmt: skip
    """A Ready Node with that allocatable, its status written through nodes/status."""
    labels = {"kubernetes.io/hostname": name, **(labels or {})}
    body = {"metadata": {"name": name, "labels": labels}, "spec": spec or {}}
    code, created = server.request("POST", "/api/v1/nodes", body)
    assert code == 201, created
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    status = {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "kubelet is posting ready status"}],
    }  # fmt: skip
    # a merge patch: node IPAM writes the new Node's podCIDR meanwhile, so a PUT of the
    # created object could meet a 409
    code, answer = server.request(
        "PATCH", f"/api/v1/nodes/{name}/status", {"status": status},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert code == 200, answer


def pod(server: Server, name: str, spec: Obj | None = None, *, labels: Obj | None = None,
        cpu: str | None = None) -> None:  # fmt: skip
    container: Obj = {"name": "c", "image": "busybox"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    body = {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [container], **(spec or {})}}  # fmt: skip
    code, answer = server.request("POST", PODS, body)
    assert code == 201, answer


def get(server: Server, name: str) -> Obj:
    code, body = server.request("GET", f"{PODS}/{name}")
    assert code == 200, body
    return body


def wait(check: Callable[[], Any], seconds: float = 20.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def bound(server: Server, name: str) -> str:
    return str(wait(lambda: get(server, name)["spec"].get("nodeName")))


def condition(pod: Obj) -> Obj | None:
    for c in pod.get("status", {}).get("conditions") or []:
        if c["type"] == "PodScheduled":
            return dict(c)
    return None


def unschedulable(server: Server, name: str, message: str = "", *, prefix: bool = False) -> Obj:
    """The pod's PodScheduled=False Unschedulable condition once its message is ``message`` (or
    starts with it): a first try may have seen a Node before the scheduler's informer held all
    of it (the watches of Pods and Nodes are apart); the Node's event makes it try again."""
    seen: list[Obj] = []

    def found() -> Obj | None:
        c = condition(get(server, name))
        if not c or c.get("reason") != "Unschedulable":
            return None
        seen[:] = [c]
        text = c.get("message", "")
        return c if (text.startswith(message) if prefix else text == message) else None

    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline:
        if (c := found()) is not None:
            return dict(c)
        time.sleep(0.05)
    raise AssertionError(f"{name}: {seen[0] if seen else 'no condition'} != {message!r}")


def events(server: Server, name: str, reason: str) -> list[Obj]:
    _, listing = server.request(
        "GET", f"/api/v1/namespaces/{{ns}}/events?fieldSelector=involvedObject.name={name}"
    )
    return [e for e in listing["items"] if e["reason"] == reason]


@OWN
def test_a_pod_is_bound_with_the_scheduled_event(server: Server) -> None:
    node(server, "n1")
    pod(server, "p")
    assert bound(server, "p") == "n1"
    scheduled = condition(get(server, "p"))
    assert scheduled is not None
    assert list(scheduled) == ["type", "status", "lastProbeTime", "lastTransitionTime"]
    assert (scheduled["status"], scheduled["lastProbeTime"]) == ("True", None)
    [event] = wait(lambda: events(server, "p", "Scheduled"))
    assert event["type"] == "Normal"
    assert event["message"] == f"Successfully assigned {server.namespace}/p to n1"
    assert event["reportingComponent"] == "default-scheduler"
    assert event["action"] == "Binding"
    assert event["involvedObject"]["name"] == "p"


@OWN
def test_constraints_choose_the_node(server: Server) -> None:
    node(server, "plain")
    node(server, "ssd", labels={"disk": "ssd", "zone": "a"})
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    node(server, "tainted", labels={"disk": "ssd"}, spec={"taints": [taint]})
    node(server, "cordoned", labels={"disk": "ssd"}, spec={"unschedulable": True})
    pod(server, "selector", {"nodeSelector": {"disk": "ssd"}})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}}  # fmt: skip
    pod(server, "affinity", {"affinity": affinity})
    toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    no_zone = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "DoesNotExist"}]}]}}}  # fmt: skip
    pod(server, "tolerant", {"nodeSelector": {"disk": "ssd"}, "tolerations": [toleration],
                             "affinity": no_zone})  # fmt: skip
    everything = {"operator": "Exists"}
    pod(server, "cordon-tolerant", {"nodeSelector": {"disk": "ssd"}, "tolerations": [everything],
                                    "affinity": {"nodeAffinity": {
                                        "requiredDuringSchedulingIgnoredDuringExecution": {
                                            "nodeSelectorTerms": [{"matchFields": [
                                                {"key": "metadata.name", "operator": "In",
                                                 "values": ["cordoned"]}]}]}}}})  # fmt: skip
    assert bound(server, "selector") == "ssd"
    assert bound(server, "affinity") == "ssd"
    assert bound(server, "tolerant") == "tainted"
    assert bound(server, "cordon-tolerant") == "cordoned"


@OWN
def test_host_ports_and_anti_affinity_spread_pods(server: Server) -> None:
    node(server, "a")
    node(server, "b")
    port = {"containerPort": 80, "hostPort": 8080}
    ports = {"containers": [{"name": "c", "image": "i", "ports": [port]}]}
    pod(server, "web-1", ports)
    pod(server, "web-2", ports)
    assert {bound(server, "web-1"), bound(server, "web-2")} == {"a", "b"}
    pod(server, "web-3", ports)
    unschedulable(
        server,
        "web-3",
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption "
        "victims found for incoming pod.",
    )
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}},
         "topologyKey": "kubernetes.io/hostname"}]}}  # fmt: skip
    pod(server, "db-1", {"affinity": anti}, labels={"app": "db"})
    pod(server, "db-2", {"affinity": anti}, labels={"app": "db"})
    assert {bound(server, "db-1"), bound(server, "db-2")} == {"a", "b"}
    pod(server, "db-3", {"affinity": anti}, labels={"app": "db"})
    unschedulable(
        server, "db-3", "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.",
        prefix=True,
    )  # fmt: skip
    pod(server, "follower", labels={"app": "db"})  # the db pods' own anti-affinity repels it
    unschedulable(
        server, "follower",
        "0/2 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules.",
        prefix=True,
    )  # fmt: skip


@OWN
def test_the_failure_message_and_the_retry_when_a_node_fits(server: Server) -> None:
    node(server, "tainted", spec={"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]})
    node(server, "small-1", cpu="1")
    node(server, "small-2", cpu="1")
    pod(server, "big", cpu="2")
    text = (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not "
        "helpful for scheduling, 2 No preemption victims found for incoming pod."
    )
    scheduled = unschedulable(server, "big", text)
    assert scheduled == {
        "type": "PodScheduled",
        "observedGeneration": 1,
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": scheduled["lastTransitionTime"],
        "reason": "Unschedulable",
        "message": text,
    }
    [event] = [e for e in events(server, "big", "FailedScheduling") if e["message"] == text]
    assert (event["type"], event["action"]) == ("Warning", "Scheduling")
    assert event["reportingComponent"] == "default-scheduler"
    node(server, "large", cpu="4")
    assert bound(server, "big") == "large"


@OWN
def test_a_label_change_makes_a_pod_schedulable(server: Server) -> None:
    node(server, "n1")
    pod(server, "p", {"nodeSelector": {"role": "db"}})
    first = unschedulable(
        server,
        "p",
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/1 nodes are available: 1 Preemption is not "
        "helpful for scheduling.",
    )
    taint = {"key": "k", "effect": "NoExecute"}
    node(server, "n2", labels={"role": "db"}, spec={"taints": [taint]})
    again = unschedulable(
        server,
        "p",
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/2 nodes "
        "are available: 2 Preemption is not helpful for scheduling.",
    )  # tried again at least a second later (its back-off): still False, so no transition
    assert again["lastTransitionTime"] == first["lastTransitionTime"]
    patch = {"metadata": {"labels": {"role": "db"}}}
    assert server.request("PATCH", "/api/v1/nodes/n1", patch, MERGE)[0] == 200
    assert bound(server, "p") == "n1"


@OWN
def test_no_nodes_and_preemption_policy_never(server: Server) -> None:
    pod(server, "p")
    unschedulable(server, "p", "no nodes available to schedule pods")
    [event] = wait(lambda: events(server, "p", "FailedScheduling"))
    assert event["message"] == "no nodes available to schedule pods"
    node(server, "n1", cpu="1")
    never = {"metadata": {"name": "no-preempting"}, "value": 10, "preemptionPolicy": "Never"}
    code, answer = server.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", never)
    assert code == 201, answer
    pod(server, "never", {"priorityClassName": "no-preempting"}, cpu="2")
    unschedulable(
        server,
        "never",
        "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: "
        "not eligible due to preemptionPolicy=Never.",
    )
    assert bound(server, "p") == "n1"


@OWN
def test_scheduling_gates_hold_a_pod(server: Server) -> None:
    node(server, "n1")
    pod(server, "gated", {"schedulingGates": [{"name": "example.com/wait"}]})
    time.sleep(0.5)
    held = get(server, "gated")
    assert "nodeName" not in held["spec"]
    gated = condition(held)
    assert gated is not None
    assert gated["lastProbeTime"] is None
    assert (gated["status"], gated["reason"], gated["message"]) == (
        "False", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates"
    )  # fmt: skip
    patch = {"spec": {"schedulingGates": None}}
    assert server.request("PATCH", f"{PODS}/gated", patch, MERGE)[0] == 200
    assert bound(server, "gated") == "n1"


@OWN
def test_a_burst_of_pods_never_overcommits_a_node(server: Server) -> None:
    node(server, "few", pods="3")
    node(server, "cpu", cpu="2", pods="110", labels={"kind": "cpu"})
    for i in range(5):
        pod(server, f"p{i}", {"nodeSelector": {"kubernetes.io/hostname": "few"}})
    for i in range(5):
        pod(server, f"c{i}", {"nodeSelector": {"kind": "cpu"}}, cpu="500m")
    names = [f"{kind}{i}" for kind in "pc" for i in range(5)]

    def placed() -> dict[str, list[str]] | None:
        nodes = {n: get(server, n)["spec"].get("nodeName") for n in names}
        found = {k: [n for n in names if n[0] == k and nodes[n]] for k in "pc"}
        assert len(found["p"]) <= 3  # never more than the node's pods
        assert len(found["c"]) <= 4  # nor than its cpu
        return found if (len(found["p"]), len(found["c"])) == (3, 4) else None

    done = wait(placed)
    waiting_p = [n for n in names if n[0] == "p" and n not in done["p"]]
    [waiting_c] = [n for n in names if n[0] == "c" and n not in done["c"]]
    for name in waiting_p:
        unschedulable(
            server, name,
            "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't match Pod's node "
            "affinity/selector.", prefix=True,
        )  # fmt: skip
    unschedulable(
        server, waiting_c,
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node "
        "affinity/selector.", prefix=True,
    )  # fmt: skip
    time.sleep(0.5)  # more tries (on the events of the others' bindings) bind nothing more
    assert placed() is not None
    code, _ = server.request("DELETE", f"{PODS}/{done['c'][0]}?gracePeriodSeconds=0")
    assert code == 200
    assert bound(server, waiting_c) == "cpu"


@OWN
def test_topology_spread_constraints(server: Server) -> None:
    node(server, "a1", labels={"zone": "a"})
    node(server, "b1", labels={"zone": "b"})
    node(server, "unzoned")
    spread = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "s"}},
                "nodeAffinityPolicy": "Ignore",  # zone b counts though the selector excludes it
            }
        ],
        "nodeSelector": {"kubernetes.io/hostname": "a1"},
    }
    pod(server, "s1", spread, labels={"app": "s"})
    assert bound(server, "s1") == "a1"
    pod(server, "s2", spread, labels={"app": "s"})  # zone a would hold 2, zone b none
    unschedulable(
        server,
        "s2",
        "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, "
        "2 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling.",
    )
    free = {**spread, "nodeSelector": {}}
    pod(server, "s3", free, labels={"app": "s"})
    assert bound(server, "s3") == "b1"  # the unzoned node lacks the key, a1 would skew


@OWN
def test_a_higher_priority_pod_preempts(server: Server) -> None:
    for name, value in (("low", 1), ("high", 1000)):
        body = {"metadata": {"name": name}, "value": value}
        code, answer = server.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", body)
        assert code == 201, answer
    node(server, "n1", cpu="1")
    quick = {"terminationGracePeriodSeconds": 0}
    pod(server, "small", {**quick, "priorityClassName": "low"}, cpu="200m")
    pod(server, "victim", {**quick, "priorityClassName": "low"}, cpu="600m")
    assert bound(server, "small") == "n1"
    assert bound(server, "victim") == "n1"
    pod(server, "urgent", {"priorityClassName": "high"}, cpu="500m")
    [preempted] = wait(lambda: events(server, "victim", "Preempted"))
    uid = get(server, "urgent")["metadata"]["uid"]
    assert preempted["message"] == f"Preempted by pod {uid} on node n1"
    assert preempted["action"] == "Preempting"
    text = "0/1 nodes are available: 1 Insufficient cpu."  # preemption helps: no PostFilter text
    wait(lambda: [e for e in events(server, "urgent", "FailedScheduling") if e["message"] == text])
    assert bound(server, "urgent") == "n1"
    assert server.request("GET", f"{PODS}/victim")[0] == 404
    assert get(server, "small")["spec"]["nodeName"] == "n1"  # given back: the pod fits with it


@OWN
def test_a_refused_binding_is_a_scheduler_error_and_retried(server: Server) -> None:
    admission = "/apis/admissionregistration.k8s.io/v1"
    rule = {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["pods/binding"]}  # fmt: skip
    policy = {
        "metadata": {"name": "no-binding"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [rule]},
            "validations": [{"expression": "false", "message": "bindings are refused"}],
        },
    }
    binding = {"metadata": {"name": "no-binding"},
               "spec": {"policyName": "no-binding", "validationActions": ["Deny"]}}  # fmt: skip
    for path, body in (("validatingadmissionpolicies", policy),
                       ("validatingadmissionpolicybindings", binding)):  # fmt: skip
        code, answer = server.request("POST", f"{admission}/{path}", body)
        assert code == 201, answer
    node(server, "n1")
    pod(server, "p")

    def refused() -> Obj | None:
        c = condition(get(server, "p"))
        return c if c and c.get("reason") == "SchedulerError" else None

    failed = wait(refused)
    assert failed["status"] == "False"
    assert failed["message"].endswith("denied request: bindings are refused")
    assert wait(lambda: events(server, "p", "FailedScheduling"))[0]["message"] == failed["message"]
    path = f"{admission}/validatingadmissionpolicybindings/no-binding"
    assert server.request("DELETE", path)[0] == 200
    assert bound(server, "p") == "n1"
