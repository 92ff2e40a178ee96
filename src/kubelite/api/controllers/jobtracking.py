"""What the Job controller reads of Jobs and their pods, as pure functions
(pkg/controller/job/job_controller.go, backoff_utils.go, pkg/controller/job/util and
pkg/controller/controller_utils.go): conditions, which pods are active, terminating, failed or
finished and when, the pod-failure back-off, the order pods are removed in, and the pod a Job's
template makes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubelite.api.encoding.stored import clone, now
from kubelite.api.kinds.policy.disruption import is_pod_ready

Obj = dict[str, Any]
TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
#: ``spec.managedBy`` of Jobs this controller syncs (or none)
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"
COMPLETE, FAILED = "Complete", "Failed"
SUCCESS_CRITERIA_MET, FAILURE_TARGET, SUSPENDED = "SuccessCriteriaMet", "FailureTarget", "Suspended"
#: DefaultJobPodFailureBackOff, MaxJobPodFailureBackOff (seconds)
POD_FAILURE_BACKOFF_SECONDS = 10.0
MAX_POD_FAILURE_BACKOFF_SECONDS = 600.0
TERMINAL = ("Succeeded", "Failed")


def parse_time(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


# -- conditions ----------------------------------------------------------------------------------


def new_condition(type_: str, status: str, reason: str, message: str) -> Obj:
    """``newCondition``: probe and transition time now (JobCondition's field order)."""
    stamp = now()
    condition: Obj = {
        "type": type_,
        "status": status,
        "lastProbeTime": stamp,
        "lastTransitionTime": stamp,
    }
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def find_condition(job: Obj, type_: str) -> Obj | None:
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") == type_:
            return dict(condition)
    return None


def condition_true(job: Obj, type_: str) -> bool:
    found = find_condition(job, type_)
    return found is not None and found.get("status") == "True"


def ensure_condition(conditions: list[Obj], type_: str, status: str, reason: str, msg: str) -> bool:
    """``ensureJobConditionStatus``: replace the condition of that type when its status,
    reason or message differ, or append it (not when it would be a new False one); whether the
    list changed."""
    for i, condition in enumerate(conditions):
        if condition.get("type") == type_:
            if (
                condition.get("status") != status
                or condition.get("reason", "") != reason
                or condition.get("message", "") != msg
            ):
                conditions[i] = new_condition(type_, status, reason, msg)
                return True
            return False
    if status != "False":
        conditions.append(new_condition(type_, status, reason, msg))
        return True
    return False


def is_finished(job: Obj) -> bool:
    """``IsJobFinished``: a Complete or Failed condition that is True."""
    return condition_true(job, COMPLETE) or condition_true(job, FAILED)


def managed_elsewhere(job: Obj) -> bool:
    managed_by = (job.get("spec") or {}).get("managedBy")
    return isinstance(managed_by, str) and managed_by != JOB_CONTROLLER_NAME


def only_replace_failed(job: Obj) -> bool:
    """``onlyReplaceFailedPods``: podReplacementPolicy Failed, or a pod failure policy."""
    spec = job.get("spec") or {}
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


# -- pods ----------------------------------------------------------------------------------------


def phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def deleting(pod: Obj) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def is_active(pod: Obj) -> bool:
    """``FilterActivePods``: not terminal, not being deleted."""
    return phase(pod) not in TERMINAL and not deleting(pod)


def is_terminating(pod: Obj) -> bool:
    """``CountTerminatingPods``: being deleted, not yet terminal."""
    return deleting(pod) and phase(pod) not in TERMINAL


def has_tracking_finalizer(pod: Obj) -> bool:
    return TRACKING_FINALIZER in (pod["metadata"].get("finalizers") or [])


def is_failed(pod: Obj, job: Obj) -> bool:
    """``isPodFailed``: phase Failed; or, unless only failed pods are replaced, being deleted
    and not Succeeded (an orphan that never reaches a phase counts as a failure)."""
    if phase(pod) == "Failed":
        return True
    if only_replace_failed(job):
        return False
    return deleting(pod) and phase(pod) != "Succeeded"


def controller_of(obj: Obj) -> Obj | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller") is True:
            return dict(ref)
    return None


def finished_time(pod: Obj) -> float:
    """``getFinishedTime``: the last container's finish, else Ready=False's transition, else
    the deletion time less the grace period, else the creation time."""
    status = pod.get("status") or {}
    latest: float | None = None
    statuses = status.get("containerStatuses") or []
    for container in statuses:
        finished = parse_time(((container.get("state") or {}).get("terminated") or {}).get(
            "finishedAt"
        ))  # fmt: skip
        if finished is None:
            latest = None
            break
        latest = finished if latest is None else max(latest, finished)
    if latest is not None:
        return latest
    for condition in status.get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "False":
            when = parse_time(condition.get("lastTransitionTime"))
            if when is not None:
                return when
    meta = pod["metadata"]
    deleted = parse_time(meta.get("deletionTimestamp"))
    if deleted is not None:
        return deleted - float(meta.get("deletionGracePeriodSeconds") or 0)
    return parse_time(meta.get("creationTimestamp")) or 0.0


def restarts_while_running(pods: list[Obj]) -> int:
    """The restarts of the containers of running or pending pods
    (``pastBackoffLimitOnFailure``)."""
    total = 0
    for pod in pods:
        if phase(pod) not in ("Running", "Pending"):
            continue
        status = pod.get("status") or {}
        for field in ("initContainerStatuses", "containerStatuses"):
            total += sum(int(c.get("restartCount") or 0) for c in status.get(field) or [])
    return total


def removal_order(pod: Obj) -> tuple[Any, ...]:
    """``controller.ActivePods``: the pods to remove first sort first: unscheduled, then
    Pending before Unknown before Running, not ready before ready, ready for less time, more
    restarts, newer."""
    status = pod.get("status") or {}
    ranks = {"Pending": 0, "Unknown": 1, "Running": 2}
    ready = is_pod_ready(pod)
    ready_since = 0.0
    if ready:
        for condition in status.get("conditions") or []:
            if condition.get("type") == "Ready":
                ready_since = parse_time(condition.get("lastTransitionTime")) or 0.0
    restarts = sum(int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or [])
    created = parse_time(pod["metadata"].get("creationTimestamp")) or 0.0
    return (
        bool((pod.get("spec") or {}).get("nodeName")),
        ranks.get(phase(pod), 3),
        ready,
        -ready_since,
        -restarts,
        -created,
    )


def pod_from_template(job: Obj, template: Obj, generate_name: str) -> Obj:
    """``GetPodFromTemplate``: the template's labels, annotations and finalizers (plus the
    tracking finalizer), ``generateName`` and the Job as controller."""
    meta = template.get("metadata") or {}
    finalizers = list(meta.get("finalizers") or [])
    if TRACKING_FINALIZER not in finalizers:
        finalizers.append(TRACKING_FINALIZER)
    pod_meta: Obj = {"generateName": generate_name}
    for field in ("labels", "annotations"):
        if meta.get(field):
            pod_meta[field] = clone(meta[field])
    pod_meta["finalizers"] = finalizers
    pod_meta["ownerReferences"] = [controller_ref(job)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": clone(template.get("spec") or {}),
    }


def controller_ref(job: Obj) -> Obj:
    """``NewControllerRef``."""
    meta = job["metadata"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


# -- the pod failure back-off --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BackoffRecord:
    """``backoffRecord``: failures since the last success, and the last one's time."""

    failures: int = 0
    last_failure: float | None = None

    def advanced(self, succeeded: list[Obj], failed: list[Obj]) -> BackoffRecord:
        """``newBackoffRecord``: this record after the newly finished pods."""
        failed_times = sorted(finished_time(p) for p in failed)
        if not succeeded:
            if not failed_times:
                return self
            return BackoffRecord(self.failures + len(failed_times), failed_times[-1])
        last_success = max(finished_time(p) for p in succeeded)
        after = [t for t in failed_times if t > last_success]
        return BackoffRecord(len(after), after[-1] if after else None)

    def remaining(self, current: float, scale: float = 1.0) -> float:
        """``getRemainingTime``: 10 s doubling per failure up to 10 min, less the time since
        the last failure (``scale`` shortens the waits, for tests)."""
        if self.failures == 0 or self.last_failure is None:
            return 0.0
        delay = POD_FAILURE_BACKOFF_SECONDS
        for _ in range(1, self.failures):
            delay *= 2
            if delay >= MAX_POD_FAILURE_BACKOFF_SECONDS:
                delay = MAX_POD_FAILURE_BACKOFF_SECONDS
                break
        delay *= scale
        elapsed = current - self.last_failure
        return max(delay - elapsed, 0.0)
