"""Pod priority as kube's Priority admission plugin resolves it, and the system classes every
cluster has."""

from __future__ import annotations

from typing import Any

import pytest
from harness import Server

PODS = "/api/v1/namespaces/{ns}/pods"
CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        # a scheduler no pod waits for: tests PUT what they read, which a scheduler's status
        # write in between would make stale
        "spec": {
            "containers": [{"name": "c", "image": "nginx"}],
            "schedulerName": "kubelite.test/no-scheduler",
            **spec,
        },
    }


def priority_class(name: str, value: int, **more: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        **more,
    }


def test_system_classes_exist_and_resolve(server: Server) -> None:
    status, listed = server.request("GET", CLASSES)
    assert status == 200
    values = {pc["metadata"]["name"]: pc["value"] for pc in listed["items"]}
    assert values == {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
    status, made = server.request(
        "POST", PODS, pod("critical", priorityClassName="system-node-critical")
    )
    assert status == 201, made
    assert made["spec"]["priority"] == 2000001000
    assert made["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


@pytest.mark.fresh_server  # a global default class applies to every pod
def test_a_users_class_and_the_global_default(server: Server) -> None:
    status, _ = server.request(
        "POST", CLASSES, priority_class("high", 1000, preemptionPolicy="Never")
    )
    assert status == 201
    status, made = server.request("POST", PODS, pod("a", priorityClassName="high"))
    assert status == 201, made
    assert (made["spec"]["priority"], made["spec"]["preemptionPolicy"]) == (1000, "Never")
    # no class and no default: priority 0
    status, made = server.request("POST", PODS, pod("b"))
    assert status == 201
    assert made["spec"]["priority"] == 0
    assert "priorityClassName" not in made["spec"]
    # a global default names itself on pods without a class
    status, _ = server.request("POST", CLASSES, priority_class("base", 10, globalDefault=True))
    assert status == 201
    status, made = server.request("POST", PODS, pod("c"))
    assert status == 201
    assert (made["spec"]["priorityClassName"], made["spec"]["priority"]) == ("base", 10)
    assert made["spec"]["preemptionPolicy"] == "PreemptLowerPriority"  # the class's default
    # only one default
    status, refused = server.request(
        "POST", CLASSES, priority_class("other", 5, globalDefault=True)
    )
    assert status == 403
    assert refused["message"] == (
        'priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass base is already '
        "marked as default. Only one default can exist"
    )


def test_unknown_class_and_a_conflicting_priority_are_forbidden(server: Server) -> None:
    status, refused = server.request("POST", PODS, pod("x", priorityClassName="nope"))
    assert status == 403
    assert refused["reason"] == "Forbidden"
    assert refused["message"] == (
        'pods "x" is forbidden: no PriorityClass with name nope was found'
    )
    status, refused = server.request("POST", PODS, pod("y", priority=7))
    assert status == 403
    assert refused["message"] == (
        'pods "y" is forbidden: the integer value of priority (7) must not be provided in pod '
        "spec; priority admission controller computed 0 from the given PriorityClass name"
    )
    status, refused = server.request("POST", PODS, pod("z", preemptionPolicy="Never"))
    assert status == 403
    assert refused["message"] == (
        'pods "z" is forbidden: the string value of PreemptionPolicy (Never) must not be '
        "provided in pod spec; priority admission controller computed PreemptLowerPriority from "
        "the given PriorityClass name"
    )
    status, _ = server.request("GET", f"{PODS}/x")
    assert status == 404


def test_an_update_keeps_the_stored_priority(server: Server) -> None:
    status, made = server.request(
        "POST", PODS, pod("p", priorityClassName="system-cluster-critical")
    )
    assert status == 201
    made["spec"].pop("priority")
    made["spec"].pop("preemptionPolicy")
    made["metadata"]["labels"] = {"x": "y"}
    status, updated = server.request("PUT", f"{PODS}/p", made)
    assert status == 200, updated
    assert updated["spec"]["priority"] == 2000000000
    assert updated["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


def test_a_generated_names_refusal_names_the_prefix(server: Server) -> None:
    """kube runs mutating admission before it generates the name: its 403 names the prefix."""
    body = pod("", priorityClassName="nope")
    body["metadata"] = {"generateName": "foo-"}
    status, refused = server.request("POST", PODS, body)
    assert status == 403
    assert refused["message"] == (
        'pods "foo-" is forbidden: no PriorityClass with name nope was found'
    )
    assert refused["details"]["name"] == "foo-"
