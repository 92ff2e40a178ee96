"""The pod side of one sync of one Job (pkg/controller/job/job_controller.go's ``syncJobCtx``
and ``manageJob``): the state a sync works on, and the pods it creates and deletes.

- ``manage``: a suspended Job's pods all deleted (finalizer first); surplus pods deleted (an
  Indexed Job's duplicate or invalid indexes first, then kube's ``ActivePods`` order); missing
  pods created up to ``min(parallelism, completions - succeeded)`` (all of parallelism for a Job
  without completions until one succeeded), once the pod-failure back-off passed, in slow-start
  batches of 1, 2, 4...; at most 500 per sync;
- ``delete_active_pods``: a finishing Job's active pods deleted, their finalizers kept (the
  counting removes them).

Created pods get ``generateName: <job>-`` (Indexed: ``<job>-<index>-``, the index's annotation,
label and hostname, and ``JOB_COMPLETION_INDEX``), the tracking finalizer and the Job as
controller; expectations record what a sync made, so that the next one waits to see it.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from kubelite.api.controllers import jobindexes as ix
from kubelite.api.controllers.jobtracking import (
    TRACKING_FINALIZER,
    BackoffRecord,
    is_terminating,
    only_replace_failed,
    pod_from_template,
    removal_order,
)
from kubelite.api.controllers.serviceaccounts import namespace_terminating
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.kinds.policy.disruption import is_pod_ready

if TYPE_CHECKING:
    from kubelite.api.controllers.job import JobController

Obj = dict[str, Any]
#: MaxPodCreateDeletePerSync
MAX_POD_CREATE_DELETE = 500


class JobPods:
    """``syncJobCtx``: one sync's Job (a copy), pods and counts; its pod writes."""

    def __init__(self, controller: JobController, job: Obj) -> None:
        self.c = controller
        self.job = {**clone(job), "kind": "Job", "apiVersion": "batch/v1"}
        meta = self.job["metadata"]
        self.namespace, self.name = str(meta.get("namespace") or ""), str(meta["name"])
        self.key = (self.namespace, self.name)
        self.spec: Obj = self.job.get("spec") or {}
        self.indexed = self.spec.get("completionMode") == "Indexed"
        self.completions: int | None = self.spec.get("completions")
        self.policy: Obj | None = self.spec.get("podFailurePolicy")
        self.pods: list[Obj] = []
        self.active_pods: list[Obj] = []
        self.finished: Obj | None = None
        self.succeeded = 0
        self.failed = 0
        self.ready = 0
        self.terminating = 0
        self.prev_indexes: list[ix.Interval] = []
        self.succeeded_indexes: list[ix.Interval] = []
        self.expected_rm: frozenset[str] = frozenset()
        self.uncounted_succeeded: set[str] = set()
        self.uncounted_failed: set[str] = set()
        self.new_backoff = BackoffRecord()

    @property
    def status(self) -> Obj:
        status: Obj = self.job.setdefault("status", {})
        return status

    @property
    def suspended(self) -> bool:
        return bool(self.spec.get("suspend"))

    # -- pods ------------------------------------------------------------------------------------

    async def delete_active_pods(self) -> tuple[int, int, Exception | None]:
        """``deleteActivePods``: deleted, finalizers kept (the counting removes them)."""
        results = await asyncio.gather(
            *(self._delete(p, remove_finalizer=False) for p in self.active_pods)
        )
        return self._tally(results)

    async def delete_pods(self, pods: list[Obj]) -> tuple[int, int, Exception | None]:
        """``deleteJobPods``: finalizer removed, then deleted; a pod whose deletion will not be
        seen (refused, or gone already) is expected no more."""
        results = await asyncio.gather(*(self._delete(p, remove_finalizer=True) for p in pods))
        for error, _, gone in results:
            if error is not None or gone:
                self.c.expectations.deletion_observed(self.key)
        return self._tally(results)

    def _tally(
        self, results: list[tuple[Exception | None, bool, bool]]
    ) -> tuple[int, int, Exception | None]:
        deleted = sum(1 for error, _, _ in results if error is None)
        deleted_ready = sum(1 for error, ready, _ in results if ready and error is None)
        error = next((e for e, _, _ in results if e is not None), None)
        return deleted_ready, deleted, error

    async def _delete(
        self, pod: Obj, *, remove_finalizer: bool
    ) -> tuple[Exception | None, bool, bool]:
        """(the error, the pod was ready, it was gone already: 404 is no error)."""
        ready = is_pod_ready(pod)
        try:
            if remove_finalizer:
                await self.c.pod_control.remove_finalizer(pod, TRACKING_FINALIZER)
            await self.c.pod_control.delete(self.job, self.namespace, pod["metadata"]["name"])
        except APIError as exc:
            if exc.code == 404:
                return None, ready, True
            return exc, ready, False
        return None, ready, False

    async def manage(self, active: int) -> tuple[int, Exception | None]:
        """``manageJob``: delete surplus pods, or create missing ones after the back-off."""
        c = self.c
        parallelism = int(self.spec.get("parallelism") or 0)
        if self.suspended:
            doomed = self.pods_for_removal(active)
            c.expectations.expect(self.key, delete=len(doomed))
            removed_ready, removed, error = await self.delete_pods(doomed)
            self.terminating += removed
            self.ready -= removed_ready
            return active - removed, error
        if self.completions is None:
            want = active if self.succeeded > 0 else parallelism
        else:
            want = max(min(self.completions - self.succeeded, parallelism), 0)
        doomed = self.pods_for_removal(max(active - want, 0))[:MAX_POD_CREATE_DELETE]
        if doomed:
            c.expectations.expect(self.key, delete=len(doomed))
            removed_ready, removed, error = await self.delete_pods(doomed)
            self.terminating += removed
            self.ready -= removed_ready
            return active - removed, error
        waiting = self.terminating if only_replace_failed(self.job) else 0
        diff = want - waiting - active
        if diff <= 0:
            return active, None
        remaining = self.new_backoff.remaining(time.time(), c.backoff_scale)
        if remaining > 0:
            c.sync_batched(self.job, remaining)
            return active, None
        diff = min(diff, MAX_POD_CREATE_DELETE)
        indexes: list[int] = []
        if self.indexed:
            indexes = self.pending_indexes(diff)
            diff = len(indexes)
        return await self.create_pods(active, diff, indexes)

    def pending_indexes(self, count: int) -> list[int]:
        busy = [ix.completion_index(p) for p in self.active_pods]
        if only_replace_failed(self.job):
            busy += [ix.completion_index(p) for p in self.pods if is_terminating(p)]
        return ix.first_pending(self.succeeded_indexes, busy, count, int(self.completions or 0))

    def pods_for_removal(self, at_least: int) -> list[Obj]:
        """``activePodsForRemoval``: for an Indexed Job first the pods of no valid index and
        the extra pods of an index; then the rest in ``controller.ActivePods`` order."""
        remove: list[Obj] = []
        left = list(self.active_pods)
        if self.indexed:
            completions = int(self.completions or 0)
            by_index: dict[int, list[Obj]] = {}
            left = []
            for pod in self.active_pods:
                index = ix.completion_index(pod)
                if index == ix.UNKNOWN or index >= completions:
                    remove.append(pod)
                else:
                    by_index.setdefault(index, []).append(pod)
            for group in by_index.values():
                group.sort(key=removal_order)
                remove.extend(group[:-1])
                left.append(group[-1])
        if len(remove) < at_least:
            left.sort(key=removal_order)
            remove.extend(left[: at_least - len(remove)])
        return remove

    async def create_pods(
        self, active: int, diff: int, indexes: list[int]
    ) -> tuple[int, Exception | None]:
        """Slow-start batches (1, 2, 4...) of pods from the template; a batch with a failure
        ends the creations (the others are expected no more)."""
        c = self.c
        c.expectations.expect(self.key, add=diff)
        active += diff
        template = clone(self.spec.get("template") or {})
        if self.indexed:
            ix.add_index_env(template)
        errors: list[Exception] = []
        batch = min(diff, 1)
        while diff > 0:
            wave = [indexes.pop(0) if indexes else ix.UNKNOWN for _ in range(batch)]
            results = await asyncio.gather(*(self._create(template, i) for i in wave))
            failed = [e for e in results if e is not None]
            for error in failed:
                c.expectations.creation_observed(self.key)
                active -= 1
                errors.append(error)
            diff -= batch
            if failed and diff > 0:
                for _ in range(diff):
                    c.expectations.creation_observed(self.key)
                active -= diff
                break
            batch = min(2 * batch, diff)
        return active, (errors[0] if errors else None)

    async def _create(self, template: Obj, index: int) -> Exception | None:
        generate_name = f"{self.name}-"
        if index != ix.UNKNOWN:
            template = clone(template)
            ix.mark_index(template, self.name, index)
            generate_name = ix.generate_name(self.name, index)
        pod = pod_from_template(self.job, template, generate_name)
        try:
            await self.c.pod_control.create(self.job, pod)
        except APIError as exc:
            if namespace_terminating(exc):
                return None
            return exc
        return None
