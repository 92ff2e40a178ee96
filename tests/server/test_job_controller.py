"""The Job controller (kube's pkg/controller/job/job_controller.go) and the TTL-after-finished
controller over HTTP: a Job's pods are created on the simulated node, run and exit as their
annotations say, and the Job's status, conditions and events follow as on a kind cluster."""

from __future__ import annotations

import itertools
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


def test_kubectl_wait_for_complete(server: Server) -> None:
    create_job(server, job_body("waited", {"completions": 2}))
    result = server.kubectl("wait", "--for=condition=complete", "job/waited", "--timeout=50s")
    assert result.stdout.strip() == "job.batch/waited condition met"
    assert true("Complete")(get_job(server, "waited"))
    header, row = server.kubectl("get", "job", "waited").stdout.splitlines()
    assert header.split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert row.split()[:3] == ["waited", "Complete", "2/2"]


@FAST
def test_failing_pods_hit_the_backoff_limit(server: Server) -> None:
    """backoffLimit 2: three pods fail one after the other (each replacement after the
    scaled back-off), then FailureTarget and Failed with kube's reason and message."""
    annotations = {f"{A}exit-code": "1"}
    job = create_job(server, job_body("failing", {"backoffLimit": 2}, annotations))
    failed = wait_job(server, "failing", true("Failed"))
    status = failed["status"]
    message = "Job has reached the specified backoff limit"
    assert shape(status["conditions"]) == [
        ("FailureTarget", "True", "BackoffLimitExceeded", message),
        ("Failed", "True", "BackoffLimitExceeded", message),
    ]
    assert status["failed"] == 3
    assert "succeeded" not in status
    assert "active" not in status
    assert "completionTime" not in status
    assert status["uncountedTerminatedPods"] == {}
    pods = pods_of(server, job)
    assert len(pods) == 3
    for pod in pods:
        assert pod["status"]["phase"] == "Failed"
        assert TRACKING not in (pod["metadata"].get("finalizers") or [])
    # one pod at a time: each was created after the one before it failed
    pods.sort(key=lambda p: p["metadata"]["creationTimestamp"])
    for before, after in itertools.pairwise(pods):
        (finished,) = before["status"]["containerStatuses"]
        assert finished["state"]["terminated"]["exitCode"] == 1
        assert (
            after["metadata"]["creationTimestamp"] >= finished["state"]["terminated"]["finishedAt"]
        )
    events = events_of(server, "failing")
    assert [r for _, r, _ in events].count("SuccessfulCreate") == 3
    assert ("Warning", "BackoffLimitExceeded", message) in events
    assert not any(r == "Completed" for _, r, _ in events)


def test_active_deadline(server: Server) -> None:
    """A pod that runs for an hour: past activeDeadlineSeconds it is deleted and the Job
    fails with DeadlineExceeded."""
    body = job_body("late", {"activeDeadlineSeconds": 2}, {f"{A}run-seconds": "3600"})
    job = create_job(server, body)
    running = wait_job(server, "late", lambda j: (j.get("status") or {}).get("active") == 1)
    assert condition(running, "FailureTarget") is None
    failed = wait_job(server, "late", true("Failed"))
    status = failed["status"]
    message = "Job was active longer than specified deadline"
    assert shape(status["conditions"]) == [
        ("FailureTarget", "True", "DeadlineExceeded", message),
        ("Failed", "True", "DeadlineExceeded", message),
    ]
    assert "active" not in status
    assert status["failed"] == 1
    assert status["terminating"] == 0
    events = events_of(server, "late")
    (pod_name,) = [m.removeprefix("Created pod: ") for _, r, m in events if r == "SuccessfulCreate"]
    assert ("Normal", "SuccessfulDelete", f"Deleted pod: {pod_name}") in events
    assert ("Warning", "DeadlineExceeded", message) in events
    deadline = time.monotonic() + 30
    while pods_of(server, job) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pods_of(server, job) == []  # stopped by the kubelet, its finalizer gone


def test_indexed_job(server: Server) -> None:
    body = job_body("indexed", {"completions": 3, "parallelism": 3, "completionMode": "Indexed"})
    job = create_job(server, body)
    done = wait_job(server, "indexed", true("Complete"))
    assert done["status"]["completedIndexes"] == "0-2"
    assert done["status"]["succeeded"] == 3
    pods = sorted(pods_of(server, job), key=lambda p: p["metadata"]["name"])
    assert len(pods) == 3
    key = "batch.kubernetes.io/job-completion-index"
    for index, pod in enumerate(pods):
        meta = pod["metadata"]
        assert meta["generateName"] == f"indexed-{index}-"
        assert meta["annotations"][key] == str(index)
        assert meta["labels"][key] == str(index)
        assert pod["spec"]["hostname"] == f"indexed-{index}"
        (container,) = pod["spec"]["containers"]
        assert container["env"] == [{
            "name": "JOB_COMPLETION_INDEX",
            "valueFrom": {"fieldRef": {
                "apiVersion": "v1", "fieldPath": f"metadata.annotations['{key}']",
            }},
        }]  # fmt: skip


def test_suspend_and_resume(server: Server) -> None:
    """Created suspended: no pods, no startTime; resumed: it runs to completion."""
    create_job(server, job_body("paused", {"suspend": True, "completions": 2}))
    suspended = wait_job(server, "paused", true("Suspended"))
    assert shape(suspended["status"]["conditions"]) == [
        ("Suspended", "True", "JobSuspended", "Job suspended"),
    ]
    assert "startTime" not in suspended["status"]
    assert pods_of(server, suspended) == []
    assert ("Normal", "Suspended", "Job suspended") in events_of(server, "paused")
    row = server.kubectl("get", "job", "paused", "--no-headers").stdout.split()
    assert row[:3] == ["paused", "Suspended", "0/2"]  # and no DURATION: it never started
    assert len(row) == 4
    code, patched = server.request(
        "PATCH", f"{JOBS}/paused", {"spec": {"suspend": False}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert code == 200, patched
    done = wait_job(server, "paused", true("Complete"))
    assert shape(done["status"]["conditions"])[0] == (
        "Suspended", "False", "JobResumed", "Job resumed"
    )  # fmt: skip
    assert done["status"]["startTime"]
    assert done["status"]["succeeded"] == 2
    assert ("Normal", "Resumed", "Job resumed") in events_of(server, "paused")


def test_suspending_a_running_job_deletes_its_pods(server: Server) -> None:
    body = job_body("busy", {"parallelism": 2, "completions": 4}, {f"{A}run-seconds": "3600"})
    job = create_job(server, body)
    wait_job(server, "busy", lambda j: (j.get("status") or {}).get("active") == 2)
    code, patched = server.request(
        "PATCH", f"{JOBS}/busy", {"spec": {"suspend": True}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert code == 200, patched
    suspended = wait_job(
        server, "busy", lambda j: true("Suspended")(j) and "active" not in j["status"]
    )
    assert "failed" not in suspended["status"]  # pods of a suspended Job are not failures
    events = events_of(server, "busy")
    assert [r for _, r, _ in events].count("SuccessfulDelete") == 2
    deadline = time.monotonic() + 30
    while pods_of(server, job) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pods_of(server, job) == []


def test_ttl_after_finished_deletes_the_job_and_its_pods(server: Server) -> None:
    job = create_job(server, job_body("brief", {"ttlSecondsAfterFinished": 1}))
    deadline = time.monotonic() + 40
    seen_complete = False
    while time.monotonic() < deadline:
        code, found = server.request("GET", f"{JOBS}/brief")
        if code == 404:
            break
        seen_complete = seen_complete or true("Complete")(found)
        time.sleep(0.05)
    assert code == 404, found
    assert seen_complete
    deadline = time.monotonic() + 30
    while pods_of(server, job) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pods_of(server, job) == []


@FAST
def test_pod_failure_policy_fail_job_and_ignore(server: Server) -> None:
    """Exit code 42 matches a FailJob rule: the Job fails at the first failure, whatever its
    backoffLimit. Exit code 3 matches an Ignore rule: with backoffLimit 0 the failures do not
    count, and the Job keeps replacing its pod."""
    policy = {
        "rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
        ]
    }
    spec = {"backoffLimit": 6, "podFailurePolicy": policy}
    job = create_job(server, job_body("fatal", spec, {f"{A}exit-code": "42"}))
    failed = wait_job(server, "fatal", true("Failed"))
    (pod,) = pods_of(server, job)
    message = (
        f"Container work for pod {server.namespace}/{pod['metadata']['name']} failed with exit "
        "code 42 matching FailJob rule at index 0"
    )
    assert shape(failed["status"]["conditions"]) == [
        ("FailureTarget", "True", "PodFailurePolicy", message),
        ("Failed", "True", "PodFailurePolicy", message),
    ]
    assert failed["status"]["failed"] == 1
    assert ("Warning", "PodFailurePolicy", message) in events_of(server, "fatal")

    spec = {"backoffLimit": 0, "podFailurePolicy": policy}
    job = create_job(server, job_body("ignored", spec, {f"{A}exit-code": "3"}))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done = [p for p in pods_of(server, job) if p["status"].get("phase") == "Failed"]
        if len(done) >= 3:
            break
        time.sleep(0.1)
    assert len(done) >= 3
    ignored = get_job(server, "ignored")
    assert condition(ignored, "Failed") is None
    assert condition(ignored, "FailureTarget") is None
    assert "failed" not in ignored["status"]


def test_success_policy_of_an_indexed_job(server: Server) -> None:
    """One pod at a time, and a rule that one succeeded index is enough: the Job completes
    after index 0 with reason SuccessPolicy, its other indexes never run."""
    spec = {
        "completions": 3,
        "parallelism": 1,
        "completionMode": "Indexed",
        "successPolicy": {"rules": [{"succeededCount": 1}]},
    }
    job = create_job(server, job_body("enough", spec))
    done = wait_job(server, "enough", true("Complete"))
    status = done["status"]
    assert shape(status["conditions"]) == [
        ("SuccessCriteriaMet", "True", "SuccessPolicy", "Matched rules at index 0"),
        ("Complete", "True", "SuccessPolicy", "Matched rules at index 0"),
    ]
    assert status["completedIndexes"] == "0"
    assert status["succeeded"] == 1
    (pod,) = pods_of(server, job)
    assert pod["metadata"]["generateName"] == "enough-0-"


def test_a_deleted_jobs_orphaned_pods_lose_the_tracking_finalizer(server: Server) -> None:
    """A batch/v1 Job deleted without a policy orphans its pods: the garbage collector drops
    their owner reference, the Job controller their tracking finalizer; they keep running."""
    job = create_job(server, job_body("left", {}, {f"{A}run-seconds": "3600"}))
    wait_job(server, "left", lambda j: (j.get("status") or {}).get("active") == 1)
    (pod,) = pods_of(server, job)
    assert TRACKING in pod["metadata"]["finalizers"]
    code, answer = server.request("DELETE", f"{JOBS}/left")
    assert code == 200, answer
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        (pod,) = pods_of(server, job)
        meta = pod["metadata"]
        if not meta.get("ownerReferences") and TRACKING not in (meta.get("finalizers") or []):
            break
        time.sleep(0.1)
    assert "ownerReferences" not in pod["metadata"]
    assert TRACKING not in (pod["metadata"].get("finalizers") or [])
    assert pod["status"]["phase"] == "Running"
    assert "deletionTimestamp" not in pod["metadata"]
