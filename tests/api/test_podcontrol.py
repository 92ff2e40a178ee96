"""What the workload controllers share (kubelite.api.controllers.podcontrol, after kube's
pkg/controller/controller_utils.go): the order pods are deleted in, slow-start batches, and
expectations."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from kubelite.api.controllers.podcontrol import (
    Expectations,
    is_pod_available,
    pod_from_template,
    pods_to_delete,
    slow_start_batch,
)

Obj = dict[str, Any]
NOW = time.time()


def stamp(seconds_ago: float) -> str:
    return datetime.fromtimestamp(NOW - seconds_ago, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready_for: float | None = 100.0,
    cost: int | None = None,
    restarts: int = 0,
    age: float = 1000.0,
) -> Obj:
    annotations = {} if cost is None else {"controller.kubernetes.io/pod-deletion-cost": str(cost)}
    conditions = []
    if ready_for is not None:
        conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": stamp(ready_for)}]
    return {
        "metadata": {
            "name": name, "uid": f"uid-{name}", "annotations": annotations,
            "creationTimestamp": stamp(age),
        },
        "spec": {"nodeName": node},
        "status": {
            "phase": phase, "conditions": conditions,
            "containerStatuses": [{"name": "c", "restartCount": restarts}],
        },
    }  # fmt: skip


def names(pods: list[Obj]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_deletion_order_follows_active_pods_with_ranks() -> None:
    pods = [
        pod("old-ready", ready_for=10_000, age=20_000),
        pod("new-ready", ready_for=10, age=20),
        pod("restarted", ready_for=10_000, age=20_000, restarts=3),
        pod("expensive", cost=100, ready_for=10, age=20),
        pod("cheap", cost=-5, ready_for=10_000, age=20_000),
        pod("unready", ready_for=None),
        pod("pending", phase="Pending", ready_for=None),
        pod("unscheduled", node="", phase="Pending", ready_for=None),
    ]
    ordered = names(pods_to_delete(pods, pods, len(pods) - 1))
    assert ordered == [
        "unscheduled",  # 1. not on a node
        "pending",  # 2. Pending before Running
        "unready",  # 3. not ready before ready
        "cheap",  # 4. lower deletion cost (the default cost 0 after -5)
        "new-ready",  # 6. ready for less time (another log2 bucket)
        "restarted",  # 7. more restarts
        "old-ready",
    ]


def test_pods_doubled_up_on_a_node_go_first() -> None:
    a, b, c = pod("a", node="n1"), pod("b", node="n2"), pod("c", node="n2")
    assert names(pods_to_delete([a, b, c], [a, b, c], 1)) in (["b"], ["c"])


def test_all_pods_are_deleted_unsorted_when_all_go() -> None:
    pods = [pod("a"), pod("b", ready_for=None)]
    assert names(pods_to_delete(pods, pods, 2)) == ["a", "b"]


def test_slow_start_batches_double_and_stop_at_the_first_failure() -> None:
    calls: list[int] = []

    async def run(fail_from: int | None) -> tuple[int, Exception | None]:
        calls.clear()

        async def call() -> None:
            calls.append(len(calls))
            if fail_from is not None and len(calls) > fail_from:
                raise RuntimeError("refused")

        return await slow_start_batch(20, 1, call)

    assert asyncio.run(run(None)) == (20, None)
    assert len(calls) == 20
    successes, error = asyncio.run(run(4))  # batches 1, 2, 4: the third fails from its 2nd call
    assert (successes, str(error), len(calls)) == (4, "refused", 7)


def test_expectations_hold_a_sync_until_seen() -> None:
    expectations = Expectations()
    assert expectations.satisfied("ns/rs")
    expectations.expect_creations("ns/rs", 2)
    assert not expectations.satisfied("ns/rs")
    expectations.creation_observed("ns/rs")
    assert not expectations.satisfied("ns/rs")
    expectations.creation_observed("ns/rs")
    assert expectations.satisfied("ns/rs")
    expectations.expect_deletions("ns/rs", ["ns/a", "ns/b"])
    expectations.deletion_observed("ns/rs", "ns/other")
    expectations.deletion_observed("ns/rs", "ns/a")
    assert not expectations.satisfied("ns/rs")
    expectations.deletion_observed("ns/rs", "ns/b")
    assert expectations.satisfied("ns/rs")
    expired = Expectations(timeout=0.0)
    expired.expect_creations("ns/rs", 1)
    time.sleep(0.01)
    assert expired.satisfied("ns/rs")


def test_available_after_min_ready_seconds() -> None:
    ready = pod("a", ready_for=30)
    assert is_pod_available(ready, 0, NOW)
    assert is_pod_available(ready, 20, NOW)
    assert not is_pod_available(ready, 60, NOW)
    assert not is_pod_available(pod("b", ready_for=None), 0, NOW)


def test_a_pod_from_the_template() -> None:
    template = {
        "metadata": {"labels": {"app": "x"}, "annotations": {"a": "b"}, "finalizers": ["f/g"]},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": "u"}
    made = pod_from_template(template, {"metadata": {"name": "x"}}, ref)
    assert made == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "labels": {"app": "x"}, "annotations": {"a": "b"}, "generateName": "x-",
            "finalizers": ["f/g"], "ownerReferences": [ref],
        },
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }  # fmt: skip
    made["spec"]["containers"][0]["image"] = "changed"
    assert template["spec"]["containers"][0]["image"] == "i"
