"""One sync of one Job (pkg/controller/job/job_controller.go's ``syncJob`` and its
``syncJobCtx``): count, decide, create or delete pods, and write the status with the tracking
finalizers removed in kube's order.

Counting with finalizers (``trackJobStatusAndRemoveFinalizers``): a pod that finished and still
has ``batch.kubernetes.io/job-tracking`` is first written to ``status.uncountedTerminatedPods``
(its uid under ``succeeded`` or ``failed``; an Indexed Job's succeeded index goes straight to
``completedIndexes``), then its finalizer is removed, then the uid leaves the list and the
counter goes up, in one status write more. So a pod is counted once whatever fails in between.

The pods are created and deleted by :class:`~kubelite.api.controllers.jobmanage.JobPods`.

Finishing (1.31+): success (``succeeded >= completions``, or for a Job without completions one
success and no active pod) first adds ``SuccessCriteriaMet`` (``CompletionsReached``; an
Indexed Job's ``successPolicy`` met: ``SuccessPolicy``, and its other pods are deleted); failure
first adds ``FailureTarget`` (``BackoffLimitExceeded``, ``DeadlineExceeded``, or
``PodFailurePolicy`` when a failed pod matches a ``FailJob`` rule: :mod:`.jobfailurepolicy`, whose
``Ignore`` rules also keep failures out of the count) and deletes the active pods. Once no pod is
uncounted or terminating, ``Complete`` (with ``completionTime``) or ``Failed`` follows with the
same reason and message, and the event: Normal ``Completed`` "Job completed", or a Warning of the
failure's reason and message.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kubelite.api.controllers import jobfailurepolicy as failure_policy
from kubelite.api.controllers import jobindexes as ix
from kubelite.api.controllers.events import NORMAL, WARNING
from kubelite.api.controllers.jobmanage import JobPods
from kubelite.api.controllers.jobpods import MANAGER
from kubelite.api.controllers.jobtracking import (
    COMPLETE,
    FAILED,
    FAILURE_TARGET,
    SUCCESS_CRITERIA_MET,
    SUSPENDED,
    TRACKING_FINALIZER,
    BackoffRecord,
    condition_true,
    ensure_condition,
    find_condition,
    has_tracking_finalizer,
    is_active,
    is_failed,
    is_finished,
    is_terminating,
    managed_elsewhere,
    new_condition,
    parse_time,
    phase,
    restarts_while_running,
)
from kubelite.api.encoding.stored import now
from kubelite.api.errors import APIError
from kubelite.api.kinds.policy.disruption import is_pod_ready
from kubelite.api.machinery.selectors import SelectorError, label_selector_of

Obj = dict[str, Any]
#: MaxUncountedPods
MAX_UNCOUNTED_PODS = 500
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")
POD_FAILURE_POLICY, SUCCESS_POLICY = "PodFailurePolicy", "SuccessPolicy"


class JobSync(JobPods):
    """``syncJob`` over the state :class:`JobPods` holds."""

    # -- syncJob ---------------------------------------------------------------------------------

    async def run(self) -> None:
        c = self.c
        if managed_elsewhere(self.job):
            return
        if is_finished(self.job):
            c.backoffs.pop(self.key, None)
            return
        if self.spec.get("completionMode") not in (None, "NonIndexed", "Indexed"):
            message = "Skipped Job sync because completion mode is unknown"
            await c.recorder.record(self.job, WARNING, "UnknownCompletionMode", message)
            return
        uncounted = self.status.setdefault("uncountedTerminatedPods", {})
        self.uncounted_succeeded = set(uncounted.get("succeeded") or [])
        self.uncounted_failed = set(uncounted.get("failed") or [])
        satisfied = c.expectations.satisfied(self.key)
        self.pods = await self.pods_for_job()
        self.active_pods = [p for p in self.pods if is_active(p)]
        self.ready = sum(1 for p in self.active_pods if is_pod_ready(p))
        self.expected_rm = c.finalizer_expectations.expected(self.key)
        self.terminating = sum(1 for p in self.pods if is_terminating(p))
        active = len(self.active_pods)
        new_succeeded, new_failed = self.new_finished_pods()
        self.succeeded = int(self.status.get("succeeded") or 0) + len(new_succeeded)
        self.succeeded += len(self.uncounted_succeeded)
        counted = [p for p in new_failed if failure_policy.match(self.policy, p)[1]]
        self.failed = int(self.status.get("failed") or 0) + len(counted)
        self.failed += len(self.uncounted_failed)
        if not self.status.get("startTime") and not self.suspended:
            self.status["startTime"] = now()
        self.new_backoff = c.backoffs.get(self.key, BackoffRecord()).advanced(
            new_succeeded, new_failed
        )
        self.decide_failure()
        if self.indexed:
            self.count_indexes()
            policy = self.spec.get("successPolicy")
            met = ix.match_success_policy(
                policy, int(self.completions or 0), self.succeeded_indexes
            )
            if self.finished is None and met is not None:
                self.finished = new_condition(SUCCESS_CRITERIA_MET, "True", SUCCESS_POLICY, met)
        manage_error: Exception | None = None
        suspend_changed = False
        if self.finished is not None:
            deleted_ready, deleted, manage_error = await self.delete_active_pods()
            if deleted != active or not satisfied:
                self.finished = None  # pods not yet seen, or finalizers left: not yet
            active -= deleted
            self.terminating += deleted
            self.ready -= deleted_ready
        else:
            managed = False
            if satisfied and not self.job["metadata"].get("deletionTimestamp"):
                active, manage_error = await self.manage(active)
                managed = True
            if self.completions is None:
                complete = self.succeeded > 0 and active == 0
            else:
                complete = self.succeeded >= self.completions and active == 0
            if complete:
                self.finished = new_condition(SUCCESS_CRITERIA_MET, "True", *COMPLETIONS_REACHED)
            elif managed:
                suspend_changed = await self.suspend_condition()
        needs_update = (
            suspend_changed
            or active != int(self.status.get("active") or 0)
            or self.ready != self.status.get("ready")
            or self.terminating != self.status.get("terminating")
        )
        self.set_counter("active", active)
        self.status["ready"] = self.ready
        self.status["terminating"] = self.terminating
        await self.track_status(needs_update)
        if manage_error is not None:
            raise manage_error

    def set_counter(self, field: str, value: int) -> None:
        """An omitempty int32: absent when 0."""
        if value:
            self.status[field] = value
        else:
            self.status.pop(field, None)

    async def pods_for_job(self) -> list[Obj]:
        """``getPodsForJob``: the namespace's pods, claimed; an adopted pod is taken to have
        the tracking finalizer."""
        selector_spec = self.spec.get("selector")
        if not isinstance(selector_spec, dict):
            return []
        try:
            selector = label_selector_of(selector_spec)
        except SelectorError:
            return []
        pods = self.c.namespace_pods(self.namespace)

        async def fresh() -> Obj:
            return await self.c.fresh_job(self.namespace, self.name)

        return await self.c.pod_control.claim(
            self.job, selector, pods, adopt_finalizer=TRACKING_FINALIZER, fresh=fresh
        )

    def counted_or_pending(self, pod: Obj, uncounted: set[str]) -> bool:
        """``getValidPodsWithFilter``'s exclusions: counted already, in the uncounted list,
        its finalizer removal in flight, or (Indexed) no valid index."""
        uid = str(pod["metadata"].get("uid") or "")
        if not has_tracking_finalizer(pod) or uid in uncounted or uid in self.expected_rm:
            return True
        if self.indexed:
            index = ix.completion_index(pod)
            return index == ix.UNKNOWN or index >= int(self.completions or 0)
        return False

    def new_finished_pods(self) -> tuple[list[Obj], list[Obj]]:
        """``getNewFinishedPods``."""
        succeeded = [
            p for p in self.pods
            if not self.counted_or_pending(p, self.uncounted_succeeded)
            and phase(p) == "Succeeded"
        ]  # fmt: skip
        failed = [
            p for p in self.pods
            if not self.counted_or_pending(p, self.uncounted_failed) and is_failed(p, self.job)
        ]  # fmt: skip
        return succeeded, failed

    def decide_failure(self) -> None:
        """SuccessCriteriaMet already there; a FailureTarget already there; too many failures;
        the deadline passed; or look again when it will have."""
        self.finished = find_condition(self.job, SUCCESS_CRITERIA_MET)
        if self.finished is not None and self.finished.get("status") != "True":
            self.finished = None
        if self.finished is not None:
            return
        target = find_condition(self.job, FAILURE_TARGET)
        if target is not None and target.get("status") == "True":
            reason, message = target.get("reason", ""), target.get("message", "")
            self.finished = new_condition(FAILED, "True", reason, message)
            return
        for pod in self.pods:
            if is_failed(pod, self.job):
                message, _, _ = failure_policy.match(self.policy, pod)
                if message is not None:  # ``getFailJobMessage``
                    self.finished = new_condition(
                        FAILURE_TARGET, "True", POD_FAILURE_POLICY, message
                    )
                    return
        limit = int(self.spec.get("backoffLimit") or 0)
        if self.failed > limit or self.past_backoff_limit_on_failure(limit):
            self.finished = new_condition(FAILURE_TARGET, "True", *BACKOFF_LIMIT_EXCEEDED)
            return
        deadline = self.spec.get("activeDeadlineSeconds")
        started = parse_time(self.status.get("startTime"))
        if deadline is None or started is None or self.suspended:
            return
        remaining = started + float(deadline) - time.time()
        if remaining <= 0:
            self.finished = new_condition(FAILURE_TARGET, "True", *DEADLINE_EXCEEDED)
        else:
            self.c.queue.add_after(("job", *self.key), remaining)

    def past_backoff_limit_on_failure(self, limit: int) -> bool:
        template_spec = (self.spec.get("template") or {}).get("spec") or {}
        if template_spec.get("restartPolicy") != "OnFailure":
            return False
        restarts = restarts_while_running(self.pods)
        return restarts > 0 if limit == 0 else restarts >= limit

    def count_indexes(self) -> None:
        """``calculateSucceededIndexes``: the indexes counted, and with them those of
        succeeded pods not yet counted."""
        completions = int(self.completions or 0)
        self.prev_indexes = ix.parse_indexes(self.status.get("completedIndexes"), completions)
        new = {
            ix.completion_index(p)
            for p in self.pods
            if phase(p) == "Succeeded" and has_tracking_finalizer(p)
        }
        new = {i for i in new if 0 <= i < completions}
        self.succeeded_indexes = ix.with_indexes(self.prev_indexes, new)
        self.succeeded = ix.total(self.succeeded_indexes)

    async def suspend_condition(self) -> bool:
        conditions = self.status.setdefault("conditions", [])
        if self.suspended:
            if ensure_condition(conditions, SUSPENDED, "True", "JobSuspended", "Job suspended"):
                await self.c.recorder.record(self.job, NORMAL, "Suspended", "Job suspended")
                return True
            return False
        if ensure_condition(conditions, SUSPENDED, "False", "JobResumed", "Job resumed"):
            await self.c.recorder.record(self.job, NORMAL, "Resumed", "Job resumed")
            # a resumed Job's deadline counts from now, as one created suspended
            self.status["startTime"] = now()
            return True
        return False

    # -- status ----------------------------------------------------------------------------------

    async def track_status(self, needs_flush: bool) -> None:
        """``trackJobStatusAndRemoveFinalizers``."""
        pods = sorted(self.pods, key=ix.completion_index) if self.indexed else self.pods
        with_finalizer = {
            str(p["metadata"].get("uid"))
            for p in pods
            if has_tracking_finalizer(p) and str(p["metadata"].get("uid")) not in self.expected_rm
        }
        if self.clean_uncounted(with_finalizer):
            needs_flush = True
        uncounted = self.status["uncountedTerminatedPods"]
        to_remove: list[Obj] = []
        new_indexes: list[int] = []
        reached_max = False
        completions = int(self.completions or 0)
        for pod in pods:
            uid = str(pod["metadata"].get("uid") or "")
            if not has_tracking_finalizer(pod) or uid in self.expected_rm:
                continue
            failed = is_failed(pod, self.job)
            if not self.can_remove_finalizer(pod, failed):
                continue
            to_remove.append(pod)
            index = ix.completion_index(pod)
            if phase(pod) == "Succeeded" and uid not in self.uncounted_failed:
                if self.indexed:
                    if 0 <= index < completions and not ix.has(self.prev_indexes, index):
                        new_indexes.append(index)
                        needs_flush = True
                elif uid not in self.uncounted_succeeded:
                    needs_flush = True
                    uncounted.setdefault("succeeded", []).append(uid)
            elif failed or (
                self.finished is not None and self.finished["type"] != SUCCESS_CRITERIA_MET
            ):
                valid = not self.indexed or 0 <= index < completions
                counts = failure_policy.match(self.policy, pod)[1]
                if uid not in self.uncounted_failed and valid and counts:
                    needs_flush = True
                    uncounted.setdefault("failed", []).append(uid)
            waiting = len(uncounted.get("succeeded") or []) + len(uncounted.get("failed") or [])
            if len(new_indexes) + waiting >= MAX_UNCOUNTED_PODS:
                reached_max = True
                break
        if self.indexed:
            self.succeeded_indexes = ix.with_indexes(self.succeeded_indexes, new_indexes)
            text = ix.format_indexes(self.succeeded_indexes)
            if text != (self.status.get("completedIndexes") or ""):
                needs_flush = True
            self.set_counter("succeeded", ix.total(self.succeeded_indexes))
            if text:
                self.status["completedIndexes"] = text
            else:
                self.status.pop("completedIndexes", None)
        conditions = self.status.setdefault("conditions", [])
        if self.finished is not None and self.finished["type"] == FAILURE_TARGET:
            conditions.append(self.finished)
            needs_flush = True
            reason, message = self.finished.get("reason", ""), self.finished.get("message", "")
            self.finished = new_condition(FAILED, "True", reason, message)
        if self.finished is not None and self.finished["type"] == SUCCESS_CRITERIA_MET:
            if not condition_true(self.job, SUCCESS_CRITERIA_MET):
                conditions.append(self.finished)
                needs_flush = True
            reason, message = self.finished.get("reason", ""), self.finished.get("message", "")
            self.finished = new_condition(COMPLETE, "True", reason, message)
        needs_flush = await self.flush_and_remove_finalizers(to_remove, with_finalizer, needs_flush)
        finished = not reached_max and self.enact_finished()
        if finished or needs_flush:
            await self.write_status()
            if finished:
                await self.record_finished()

    def can_remove_finalizer(self, pod: Obj, failed: bool) -> bool:
        """``canRemoveFinalizer``: the Job is being deleted or finishing, or the pod is done."""
        if self.job["metadata"].get("deletionTimestamp") or self.finished is not None:
            return True
        return phase(pod) == "Succeeded" or failed

    def clean_uncounted(self, with_finalizer: set[str]) -> bool:
        """``cleanUncountedPodsWithoutFinalizers``: the uids whose finalizer is gone leave the
        lists and go up the counters."""
        uncounted = self.status["uncountedTerminatedPods"]
        changed = False
        for field in ("succeeded", "failed"):
            listed = list(uncounted.get(field) or [])
            kept = [uid for uid in listed if uid in with_finalizer]
            if len(kept) != len(listed):
                changed = True
                self.set_counter(field, int(self.status.get(field) or 0) + len(listed) - len(kept))
                if kept:
                    uncounted[field] = kept
                else:
                    uncounted.pop(field, None)
        return changed

    async def flush_and_remove_finalizers(
        self, pods: list[Obj], with_finalizer: set[str], needs_flush: bool
    ) -> bool:
        """``flushUncountedAndRemoveFinalizers``: the status first (the uids written down),
        then the finalizers, then the counters; whether a write is still due."""
        c = self.c
        if needs_flush:
            await self.write_status()
            c.backoffs[self.key] = self.new_backoff
            needs_flush = False
        error: Exception | None = None
        if pods:
            uids = [str(p["metadata"].get("uid") or "") for p in pods]
            c.finalizer_expectations.expect(self.key, uids)
            results = await asyncio.gather(
                *(c.pod_control.remove_finalizer(p, TRACKING_FINALIZER) for p in pods),
                return_exceptions=True,
            )
            for uid, result in zip(uids, results, strict=True):
                if isinstance(result, BaseException):
                    c.finalizer_expectations.observed(self.key, uid)
                    if not (isinstance(result, APIError) and result.code == 404):
                        if isinstance(result, Exception):
                            error = error or result
                        continue
                with_finalizer.discard(uid)
        if self.clean_uncounted(with_finalizer):
            needs_flush = True
        if error is not None:
            if needs_flush:
                await self.write_status()
            raise error
        return needs_flush

    def enact_finished(self) -> bool:
        """``enactJobFinished``: Complete or Failed, once nothing is uncounted or terminating."""
        if self.finished is None:
            return False
        uncounted = self.status["uncountedTerminatedPods"]
        if uncounted.get("succeeded") or uncounted.get("failed") or self.terminating > 0:
            return False
        condition = self.finished
        conditions = self.status.setdefault("conditions", [])
        ensure_condition(conditions, condition["type"], condition["status"],
                         condition.get("reason", ""), condition.get("message", ""))  # fmt: skip
        if condition["type"] == COMPLETE:
            written = find_condition(self.job, COMPLETE) or {}
            self.status["completionTime"] = written.get("lastTransitionTime") or now()
        return True

    async def record_finished(self) -> None:
        assert self.finished is not None
        c, job = self.c, self.job
        if self.finished["type"] == COMPLETE:
            succeeded = int(self.status.get("succeeded") or 0)
            if self.completions is not None and succeeded > self.completions:
                await c.recorder.record(job, WARNING, "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached")  # fmt: skip
            await c.recorder.record(job, NORMAL, "Completed", "Job completed")
        else:
            await c.recorder.record(job, WARNING, self.finished.get("reason", ""),
                                    self.finished.get("message", ""))  # fmt: skip

    async def write_status(self) -> None:
        """``UpdateStatus`` with the resourceVersion read (409 when the Job changed since)."""
        self.status.setdefault("uncountedTerminatedPods", {})
        if not self.status.get("conditions"):
            self.status.pop("conditions", None)
        self.job["status"] = _ordered_status(self.status)
        written, _ = await self.c.registry.update(
            self.c.job_info, self.namespace, self.name, self.job,
            subresource="status", field_manager=MANAGER,
        )  # fmt: skip
        self.job = {**written, "kind": "Job", "apiVersion": "batch/v1"}
        self.job["status"] = dict(self.job.get("status") or {})
        self.job["status"].setdefault("uncountedTerminatedPods", {})


_STATUS_ORDER = (
    "conditions", "startTime", "completionTime", "active", "succeeded", "failed", "terminating",
    "completedIndexes", "failedIndexes", "uncountedTerminatedPods", "ready",
)  # fmt: skip


def _ordered_status(status: Obj) -> Obj:
    """JobStatus's fields in Go's order."""
    ordered = {k: status[k] for k in _STATUS_ORDER if k in status}
    ordered.update({k: v for k, v in status.items() if k not in ordered})
    return ordered
