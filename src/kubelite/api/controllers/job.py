"""The Job controller (kube-controller-manager's ``job-controller``,
pkg/controller/job/job_controller.go): runs each Job's pods to completion.

An informer follows Jobs and Pods; the work queue holds ``("job", namespace, name)`` keys and
``("orphan", namespace, name)`` keys of pods whose tracking finalizer is left to remove. A Job is
synced at once when it is added, deleted or its spec changes, and one second after a pod or
status change (kube's ``syncJobBatchPeriod``, so that a burst of pod events makes one sync).
Failed syncs are retried after kube's API back-off (1 s doubling to 1 min).

One sync (``syncJob``; :mod:`.jobsync` counts and writes the status):

- the Job's pods: those of its namespace its selector matches, claimed (orphans adopted with the
  tracking finalizer, owned pods that no longer match released);
- pods that finished since the last count (their tracking finalizer still on) are counted, the
  Job fails when more than ``backoffLimit`` failed (or, restartPolicy OnFailure, its running pods
  restarted that often), or when ``activeDeadlineSeconds`` passed since ``startTime``;
- otherwise pods are created (``generateName: <job>-``, or ``<job>-<index>-`` with the index's
  annotation, label, hostname and ``JOB_COMPLETION_INDEX``, the tracking finalizer
  ``batch.kubernetes.io/job-tracking``, the Job as controller) up to ``min(parallelism,
  remaining completions)`` in slow-start batches, after the pod-failure back-off (10 s doubling
  to 10 min, times ``backoff_scale``), or surplus pods deleted; a suspended Job's pods are all
  deleted, with condition ``Suspended`` (``JobSuspended`` / ``JobResumed``);
- expectations keep a sync from creating or deleting again before the informer saw the last
  creations and deletions.

Writes go through the registry as ``kube-controller-manager``: pods created, patched and
deleted, the status through ``jobs/status`` with the resourceVersion read (a 409 is retried).
Events are recorded as ``job-controller``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.expectations import Expectations, UIDExpectations
from kubelite.api.controllers.jobpods import PodControl
from kubelite.api.controllers.jobsync import JobSync
from kubelite.api.controllers.jobtracking import (
    TRACKING_FINALIZER,
    BackoffRecord,
    controller_of,
    has_tracking_finalizer,
    is_finished,
    parse_time,
)
from kubelite.api.controllers.keyed import KeyedController
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.selectors import SelectorError, label_selector_of

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str, str]
JobKey = tuple[str, str]
JOBS, PODS = "jobs", "pods"
JOB, ORPHAN = "job", "orphan"
NAME = "job-controller"
#: syncJobBatchPeriod
SYNC_BATCH_SECONDS = 1.0
#: DefaultJobApiBackOff, MaxJobApiBackOff
API_BACKOFF_SECONDS, MAX_API_BACKOFF_SECONDS = 1.0, 60.0


def _key(obj: Obj) -> JobKey:
    meta = obj["metadata"]
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class JobController(KeyedController[Key]):
    name = NAME

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        backoff_scale: float = 1.0,
        batch_seconds: float = SYNC_BATCH_SECONDS,
        workers: int = 5,
    ) -> None:
        self.job_info = catalogue.require("batch", "v1", JOBS)
        self.pod_info = catalogue.require("", "v1", PODS)
        super().__init__(
            registry,
            {JOBS: self.job_info, PODS: self.pod_info},
            workers=workers,
            retry_min_seconds=API_BACKOFF_SECONDS,
            retry_max_seconds=MAX_API_BACKOFF_SECONDS,
        )
        self.backoff_scale = backoff_scale
        self.batch_seconds = batch_seconds
        self.pod_control = PodControl(registry, catalogue, NAME, self.job_info)
        self.recorder = self.pod_control.recorder
        self.expectations: Expectations[JobKey] = Expectations()
        self.finalizer_expectations: UIDExpectations[JobKey] = UIDExpectations()
        self.backoffs: dict[JobKey, BackoffRecord] = {}
        #: pods by namespace and name (a sync reads its namespace's pods)
        self.pods: dict[str, dict[str, Obj]] = {}

    def reset(self) -> None:
        self.expectations.clear()
        self.finalizer_expectations.clear()
        self.backoffs = {}
        self.pods = {}

    # -- the informer's handlers -----------------------------------------------------------------

    def enqueue(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        if plural == JOBS:
            self._job_changed(old, new)
            return
        if new is not None:
            namespace, name = _key(new)
            self.pods.setdefault(namespace, {})[name] = new
        elif old is not None:
            namespace, name = _key(old)
            held = self.pods.get(namespace, {})
            held.pop(name, None)
            if not held:
                self.pods.pop(namespace, None)
        if old is None and new is not None:
            self._add_pod(new)
        elif old is not None and new is not None:
            self._update_pod(old, new)
        elif old is not None:
            self._delete_pod(old, final=True)

    def sync_now(self, job: Obj) -> None:
        self.queue.add((JOB, *_key(job)))

    def sync_batched(self, job: Obj, delay: float | None = None) -> None:
        self.queue.add_after((JOB, *_key(job)), max(delay or 0.0, self.batch_seconds))

    def _job_changed(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            assert old is not None
            self.sync_now(old)
            self._cleanup_finalizers(old)
            return
        if old is None:
            self.sync_now(new)
            return
        if old["metadata"].get("generation") == new["metadata"].get("generation"):
            self.sync_batched(new)
        else:
            self.sync_now(new)
        if is_finished(new):
            self._cleanup_finalizers(new)
        started = parse_time((new.get("status") or {}).get("startTime"))
        deadline = (new.get("spec") or {}).get("activeDeadlineSeconds")
        old_deadline = (old.get("spec") or {}).get("activeDeadlineSeconds")
        if started is not None and deadline is not None and old_deadline != deadline:
            self.queue.add_after((JOB, *_key(new)), started + deadline - time.time())

    def _resolve(self, namespace: str, ref: Obj) -> Obj | None:
        """``resolveControllerRef``: the Job the reference names, if it has that uid."""
        if ref.get("kind") != "Job":
            return None
        job = self.informer.get(JOBS, namespace, str(ref.get("name") or ""))
        if job is None or job["metadata"].get("uid") != ref.get("uid"):
            return None
        return job

    def _jobs_selecting(self, pod: Obj) -> list[Obj]:
        """``GetPodJobs``: the Jobs of the pod's namespace whose selector matches it."""
        namespace, _ = _key(pod)
        labels = pod["metadata"].get("labels") or {}
        if not labels:
            return []
        found = []
        for job in self.informer.all(JOBS):
            if _key(job)[0] != namespace:
                continue
            selector = (job.get("spec") or {}).get("selector")
            try:
                if isinstance(selector, dict) and label_selector_of(selector).matches(labels):
                    found.append(job)
            except SelectorError:
                continue
        return found

    def _orphan(self, pod: Obj) -> None:
        self.queue.add((ORPHAN, *_key(pod)))

    def _add_pod(self, pod: Obj) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._delete_pod(pod, final=False)
            return
        ref = controller_of(pod)
        if ref is not None:
            job = self._resolve(_key(pod)[0], ref)
            if job is not None:
                self.expectations.creation_observed(_key(job))
                self.sync_batched(job)
            return
        if has_tracking_finalizer(pod):
            self._orphan(pod)
        for job in self._jobs_selecting(pod):
            self.sync_batched(job)

    def _update_pod(self, old: Obj, cur: Obj) -> None:
        if old["metadata"].get("resourceVersion") == cur["metadata"].get("resourceVersion"):
            return
        if cur["metadata"].get("deletionTimestamp"):
            self._delete_pod(cur, final=False)
            return
        namespace = _key(cur)[0]
        removed = not has_tracking_finalizer(cur)
        uid = str(cur["metadata"].get("uid") or "")
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        changed = cur_ref != old_ref
        if changed and old_ref is not None:
            job = self._resolve(namespace, old_ref)
            if job is not None:
                if removed:
                    self.finalizer_expectations.observed(_key(job), uid)
                self.sync_batched(job)
        if cur_ref is not None:
            job = self._resolve(namespace, cur_ref)
            if job is not None:
                if removed:
                    self.finalizer_expectations.observed(_key(job), uid)
                self.sync_batched(job)
            return
        if has_tracking_finalizer(cur):
            self._orphan(cur)
        if changed or old["metadata"].get("labels") != cur["metadata"].get("labels"):
            for job in self._jobs_selecting(cur):
                self.sync_batched(job)

    def _delete_pod(self, pod: Obj, *, final: bool) -> None:
        ref = controller_of(pod)
        finalizer = has_tracking_finalizer(pod)
        if ref is None:
            if finalizer:
                self._orphan(pod)
            return
        job = self._resolve(_key(pod)[0], ref)
        if job is None or is_finished(job):
            if finalizer:
                self._orphan(pod)
            return
        key = _key(job)
        self.expectations.deletion_observed(key)
        if final or not finalizer:
            self.finalizer_expectations.observed(key, str(pod["metadata"].get("uid") or ""))
        self.sync_batched(job)

    def _cleanup_finalizers(self, job: Obj) -> None:
        """``cleanupPodFinalizers``: the Job's pods that keep the finalizer, as orphans."""
        uid = job["metadata"].get("uid")
        for pod in list(self.pods.get(_key(job)[0], {}).values()):
            ref = controller_of(pod)
            if ref is not None and ref.get("uid") == uid and has_tracking_finalizer(pod):
                self._orphan(pod)

    # -- syncs -----------------------------------------------------------------------------------

    async def sync(self, key: Key) -> None:
        kind, namespace, name = key
        if kind == ORPHAN:
            await self.sync_orphan(namespace, name)
        else:
            await self.sync_job(namespace, name)

    async def sync_orphan(self, namespace: str, name: str) -> None:
        """``syncOrphanPod``: drop the tracking finalizer of a pod no unfinished Job owns."""
        pod = self.informer.get(PODS, namespace, name)
        if pod is None:
            return
        ref = controller_of(pod)
        if ref is not None:
            if ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
                return
            job = self._resolve(namespace, ref)
            if job is not None and not is_finished(job):
                return
        try:
            await self.pod_control.remove_finalizer(pod, TRACKING_FINALIZER)
        except APIError as exc:
            if exc.code != 404:
                raise

    async def sync_job(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        job = self.informer.get(JOBS, namespace, name)
        if job is None:
            self.expectations.forget(key)
            self.finalizer_expectations.forget(key)
            self.backoffs.pop(key, None)
            return
        await JobSync(self, job).run()

    async def fresh_job(self, namespace: str, name: str) -> Obj:
        return await self.registry.get(self.job_info, namespace, name)

    def namespace_pods(self, namespace: str) -> list[Obj]:
        return list(self.pods.get(namespace, {}).values())
