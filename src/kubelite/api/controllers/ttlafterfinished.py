"""The TTL-after-finished controller (kube-controller-manager's
``ttl-after-finished-controller``, pkg/controller/ttlafterfinished/ttlafterfinished_controller.go):
deletes a finished Job ``spec.ttlSecondsAfterFinished`` seconds after it finished.

A Job is finished when its ``Complete`` or ``Failed`` condition is True; it finished at that
condition's ``lastTransitionTime``. An informer follows Jobs and queues each one that has a TTL,
is finished and is not being deleted; a sync whose Job has time left looks again when it runs out
(``add_after``). At expiry the Job is read again from the registry (its TTL may have changed) and,
still expired, deleted with ``propagationPolicy: Foreground`` (the garbage collector deletes its
pods first) and its uid as precondition, as ``kube-controller-manager``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.jobtracking import COMPLETE, FAILED, parse_time
from kubelite.api.controllers.keyed import KeyedController
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import DeleteOptions

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]
JOBS = "jobs"
NAME = "ttl-after-finished-controller"


def finished_at(job: Obj) -> float | None:
    """``jobFinishTime``: the transition time of the True Complete or Failed condition."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if condition.get("type") in (COMPLETE, FAILED) and condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime"))
    return None


def needs_cleanup(job: Obj) -> bool:
    """``needsCleanup``: a TTL, finished, not being deleted."""
    if job["metadata"].get("deletionTimestamp"):
        return False
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    return ttl is not None and finished_at(job) is not None


def time_left(job: Obj, current: float) -> float:
    finished = finished_at(job) or current
    return finished + float(job["spec"]["ttlSecondsAfterFinished"]) - current


class TTLAfterFinishedController(KeyedController[Key]):
    name = NAME

    def __init__(self, registry: Registry, catalogue: Catalogue, *, workers: int = 5) -> None:
        self.job_info = catalogue.require("batch", "v1", JOBS)
        super().__init__(registry, {JOBS: self.job_info}, workers=workers)

    def enqueue(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        if new is not None and needs_cleanup(new):
            meta = new["metadata"]
            self.queue.add((str(meta.get("namespace") or ""), str(meta["name"])))

    async def sync(self, key: Key) -> None:
        """``processJob``."""
        namespace, name = key
        job = self.informer.get(JOBS, namespace, name)
        if job is None or not self._expired(key, job):
            return
        try:
            fresh = await self.registry.get(self.job_info, namespace, name)
        except APIError as exc:
            if exc.code == 404:
                return
            raise
        if not self._expired(key, fresh):
            return
        uid = str(fresh["metadata"].get("uid") or "")
        options = DeleteOptions(
            precondition_uid=uid,
            propagation_policy="Foreground",
            sent={"propagationPolicy": "Foreground", "preconditions": {"uid": uid}},
        )
        log.info("%s: cleaning up Job %s/%s", self.name, namespace, name)
        try:
            await self.registry.delete(self.job_info, namespace, name, options)
        except APIError as exc:
            if exc.code != 404:
                raise

    def _expired(self, key: Key, job: Obj) -> bool:
        """``processTTL``: whether the TTL ran out; if not, look again when it will have."""
        if not needs_cleanup(job):
            return False
        left = time_left(job, time.time())
        if left > 0:
            self.queue.add_after(key, left)
            return False
        return True
