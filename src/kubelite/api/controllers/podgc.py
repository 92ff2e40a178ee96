"""The pod garbage collector (kube-controller-manager's ``pod-garbage-collector-controller``,
pkg/controller/podgc/gc_controller.go). Every ``gc_period`` seconds (kube: 20), from its
informer's pods and nodes:

1. **terminated pods**: when more pods are Succeeded or Failed than
   ``terminated_pod_threshold`` (``--terminated-pod-gc-threshold``, default 12500; 0 turns this
   off), the oldest beyond it are deleted (evicted ones first, then by creation time and name);
2. **terminating pods on out-of-service nodes**: a pod being deleted on a node that is not Ready
   and is tainted ``node.kubernetes.io/out-of-service``;
3. **orphaned pods**: a pod bound to a node the informer does not hold puts that node in
   quarantine for ``quarantine`` seconds (kube: 40); a node still missing after it (checked
   again by a GET) has its pods marked ``DisruptionTarget=True`` (reason ``DeletionByPodGC``,
   message ``PodGC: node no longer exists``) and deleted;
4. **unscheduled terminating pods**: a pod being deleted that has no ``nodeName``.

Each deletion first writes a pod that is not yet Succeeded or Failed to phase Failed (with the
condition, for an orphan) through ``pods/status``, conflict-checked against its uid, then
deletes it with ``gracePeriodSeconds: 0``. Writes are recorded as ``kube-controller-manager``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue
from kubelite.api.encoding.stored import now
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import DeleteOptions

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MANAGER = "kube-controller-manager"
GC_PERIOD_SECONDS = 20.0
QUARANTINE_SECONDS = 40.0
TERMINATED_POD_THRESHOLD = 12500
OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"
ORPHAN_CONDITION: Obj = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "DeletionByPodGC",
    "message": "PodGC: node no longer exists",
}


class _Listers(StoreFollower):
    def __init__(self, owner: PodGC) -> None:
        super().__init__(
            owner.registry, {"pods": owner.pods, "nodes": owner.nodes}, name=owner.name
        )
        self.pods: dict[tuple[str, str], Obj] = {}
        self.nodes: dict[str, Obj] = {}

    def replace(self, plural: str, objects: list[Obj]) -> None:
        if plural == "pods":
            self.pods = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in objects}
        else:
            self.nodes = {o["metadata"]["name"]: o for o in objects}

    def put(self, plural: str, obj: Obj) -> None:
        meta = obj["metadata"]
        if plural == "pods":
            self.pods[(meta["namespace"], meta["name"])] = obj
        else:
            self.nodes[meta["name"]] = obj

    def remove(self, plural: str, namespace: str, name: str) -> None:
        if plural == "pods":
            self.pods.pop((namespace, name), None)
        else:
            self.nodes.pop(name, None)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        if plural == "pods":
            return (namespace, name) in self.pods
        return name in self.nodes


def terminated(pod: Obj) -> bool:
    """``isPodTerminated``: the phase is none of Pending, Running, Unknown."""
    return (pod.get("status") or {}).get("phase") not in ("Pending", "Running", "Unknown")


def evicted(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


def node_ready(node: Obj) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


class PodGC:
    """``start()`` runs the loop on the running loop; ``close()`` stops it."""

    name = "pod-garbage-collector-controller"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        terminated_pod_threshold: int = TERMINATED_POD_THRESHOLD,
        gc_period: float = GC_PERIOD_SECONDS,
        quarantine: float = QUARANTINE_SECONDS,
    ) -> None:
        self.registry = registry
        self.pods = catalogue.require("", "v1", "pods")
        self.nodes = catalogue.require("", "v1", "nodes")
        self.threshold = terminated_pod_threshold
        self.gc_period = gc_period
        self.quarantine = quarantine
        self.listers = _Listers(self)
        #: nodes missing from the informer, and when each may be checked
        self._quarantined: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is not None:
            return
        self.listers = _Listers(self)
        self._quarantined = {}
        self._task = asyncio.get_running_loop().create_task(self._run(), name="kubelite-podgc")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.listers.close()

    async def _run(self) -> None:
        while True:
            try:
                await self.listers.start()
                break
            except Exception:
                log.warning("%s: listing failed; trying again", self.name, exc_info=True)
                await asyncio.sleep(1.0)
        while True:  # wait.UntilWithContext: a round at once, then one a period after each
            try:
                await self.gc()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("%s: a round failed", self.name, exc_info=True)
            await asyncio.sleep(self.gc_period)

    async def gc(self) -> None:
        """One round (``gc``): terminated, terminating on out-of-service nodes, orphaned, and
        unscheduled terminating pods."""
        pods = list(self.listers.pods.values())
        nodes = dict(self.listers.nodes)
        if self.threshold > 0:
            done = [p for p in pods if terminated(p)]
            excess = len(done) - self.threshold
            if excess > 0:
                done.sort(key=lambda p: (not evicted(p), _created(p), p["metadata"]["name"]))
                for pod in done[:excess]:
                    await self._delete(pod)
        for pod in pods:
            if not pod["metadata"].get("deletionTimestamp"):
                continue
            node = nodes.get((pod.get("spec") or {}).get("nodeName") or "")
            if node is None or node_ready(node):
                continue
            taints = (node.get("spec") or {}).get("taints") or []
            if any(t.get("key") == OUT_OF_SERVICE_TAINT for t in taints):
                await self._delete(pod)
        await self._orphans(pods, nodes)
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp") and not (pod.get("spec") or {}).get(
                "nodeName"
            ):
                await self._delete(pod)

    async def _orphans(self, pods: list[Obj], nodes: dict[str, Obj]) -> None:
        """``gcOrphaned`` and ``discoverDeletedNodes``."""
        clock = time.monotonic()
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName") or ""
            if node_name and node_name not in nodes:
                self._quarantined.setdefault(node_name, clock + self.quarantine)
        gone: set[str] = set()
        for node_name, due in list(self._quarantined.items()):
            if due > clock:
                continue
            del self._quarantined[node_name]
            if node_name in nodes:
                continue
            try:
                await self.registry.get(self.nodes, None, node_name)
            except errors.APIError as exc:
                if exc.code == 404:
                    gone.add(node_name)
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName") in gone:
                await self._delete(pod, ORPHAN_CONDITION)

    async def _delete(self, pod: Obj, condition: Obj | None = None) -> None:
        """``markFailedAndDeletePodWithCondition``; a pod already gone is not an error."""
        meta = pod["metadata"]
        namespace, name, uid = meta["namespace"], meta["name"], meta.get("uid")
        try:
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):

                def fail(current: Obj) -> None:
                    if current["metadata"].get("uid") != uid:
                        raise errors.not_found("pods", "", name)  # another pod of the name
                    status = current.setdefault("status", {})
                    status["phase"] = "Failed"
                    if condition is not None:
                        _set_condition(status, condition)

                await self.registry.mutate(
                    self.pods, namespace, name, fail, subresource="status", field_manager=MANAGER
                )
            await self.registry.delete(
                self.pods,
                namespace,
                name,
                DeleteOptions(precondition_uid=str(uid or ""), sent={"gracePeriodSeconds": 0}),
            )
            log.info("%s: force deleted pod %s/%s", self.name, namespace, name)
        except errors.APIError as exc:
            if exc.code not in (404, 409):
                raise


def _created(pod: Obj) -> str:
    return str(pod["metadata"].get("creationTimestamp") or "")


def _set_condition(status: Obj, condition: Obj) -> None:
    """``UpdatePodCondition``: replace (or add) the condition of its type; lastTransitionTime is
    now when its status changes."""
    conditions = status.setdefault("conditions", [])
    for i, existing in enumerate(conditions):
        if existing.get("type") == condition["type"]:
            transition = existing.get("lastTransitionTime")
            if existing.get("status") != condition["status"] or not transition:
                transition = now()
            conditions[i] = _ordered(condition, transition)
            return
    conditions.append(_ordered(condition, now()))


def _ordered(condition: Obj, transition: str) -> Obj:
    return {
        "type": condition["type"],
        "status": condition["status"],
        "lastProbeTime": None,
        "lastTransitionTime": transition,
        "reason": condition["reason"],
        "message": condition["message"],
    }
