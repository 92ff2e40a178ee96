"""The Job controller (kube's pkg/controller/job/job_controller.go) and the TTL-after-finished
controller over HTTP: a Job's pods are created on the simulated node, run and exit as their
annotations say, and the Job's status, conditions and events follow as on a kind cluster."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from harness import Server

from kubelite.api.simulation.config import Simulation

Obj = dict[str, Any]
JOBS = "/apis/batch/v1/namespaces/{ns}/jobs"
PODS = "/api/v1/namespaces/{ns}/pods"
EVENTS = "/api/v1/namespaces/{ns}/events"
A = "kubelite.dev/simulate-"
TRACKING = "batch.kubernetes.io/job-tracking"
#: a server of the test's own whose back-offs are a hundredth of kube's
FAST = pytest.mark.fresh_server(simulation=Simulation(backoff_scale=0.01))


def job_body(name: str, spec: Obj | None = None, annotations: Obj | None = None) -> Obj:
    template: Obj = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "work", "image": "busybox:1.36"}],
        }
    }
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": template, **(spec or {})},
    }


def create_job(server: Server, body: Obj) -> Obj:
    code, job = server.request("POST", JOBS, body)
    assert code == 201, job
    return dict(job)


def get_job(server: Server, name: str) -> Obj:
    code, job = server.request("GET", f"{JOBS}/{name}")
    assert code == 200, job
    return dict(job)


def wait_job(server: Server, name: str, test: Callable[[Obj], bool], seconds: float = 30) -> Obj:
    deadline = time.monotonic() + seconds
    job = get_job(server, name)
    while time.monotonic() < deadline:
        job = get_job(server, name)
        if test(job):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {name} never got there: {job.get('status')}")


def condition(job: Obj, type_: str) -> Obj | None:
    conditions = (job.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == type_), None)


def true(type_: str) -> Callable[[Obj], bool]:
    return lambda job: (condition(job, type_) or {}).get("status") == "True"


def pods_of(server: Server, job: Obj) -> list[Obj]:
    uid = job["metadata"]["uid"]
    code, listed = server.request(
        "GET", f"{PODS}?labelSelector=batch.kubernetes.io/controller-uid={uid}"
    )
    assert code == 200, listed
    return list(listed["items"])


def events_of(server: Server, name: str) -> list[tuple[str, str, str]]:
    code, listed = server.request(
        "GET", f"{EVENTS}?fieldSelector=involvedObject.kind=Job,involvedObject.name={name}"
    )
    assert code == 200, listed
    items = sorted(
        listed["items"], key=lambda e: (e.get("firstTimestamp") or "", e["metadata"]["name"])
    )
    return [(e["type"], e["reason"], e["message"]) for e in items]


def shape(conditions: list[Obj]) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c.get("reason", ""), c.get("message", "")) for c in conditions]


def test_completions_and_parallelism(server: Server) -> None:
    job = create_job(server, job_body("work", {"completions": 3, "parallelism": 2}))
    done = wait_job(server, "work", true("Complete"))
    status = done["status"]
    assert shape(status["conditions"]) == [
        ("SuccessCriteriaMet", "True", "CompletionsReached",
         "Reached expected number of succeeded pods"),
        ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
    ]  # fmt: skip
    assert {k: v for k, v in status.items() if k not in ("conditions",)} == {
        "startTime": status["startTime"],
        "completionTime": status["conditions"][1]["lastTransitionTime"],
        "succeeded": 3,
        "terminating": 0,
        "uncountedTerminatedPods": {},
        "ready": 0,
    }
    for c in status["conditions"]:
        assert c["lastProbeTime"]
        assert c["lastTransitionTime"]
    pods = pods_of(server, job)
    assert len(pods) == 3
    uid = job["metadata"]["uid"]
    for pod in pods:
        meta = pod["metadata"]
        assert meta["name"].startswith("work-")
        assert len(meta["name"]) == len("work-") + 5
        assert meta["generateName"] == "work-"
        assert meta["ownerReferences"] == [{
            "apiVersion": "batch/v1", "kind": "Job", "name": "work", "uid": uid,
            "controller": True, "blockOwnerDeletion": True,
        }]  # fmt: skip
        assert meta["labels"] == {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": "work",
            "controller-uid": uid,
            "job-name": "work",
        }
        assert TRACKING not in (meta.get("finalizers") or [])  # removed once counted
        assert pod["status"]["phase"] == "Succeeded"
    names = sorted(p["metadata"]["name"] for p in pods)
    created = sorted(m for t, r, m in events_of(server, "work") if r == "SuccessfulCreate")
    assert created == [f"Created pod: {n}" for n in names]
    assert ("Normal", "Completed", "Job completed") in events_of(server, "work")
