"""The disruption controller (kube-controller-manager's ``disruption-controller``,
pkg/controller/disruption/disruption.go): keeps each PodDisruptionBudget's status, which the
eviction subresource (kinds/core/evictions.py) spends.

An informer follows PDBs, Pods, ReplicationControllers, ReplicaSets, Deployments and
StatefulSets; a work queue holds PDB keys. A PDB is queued when it is added, changes or goes,
and when a pod it covers (the first PDB by name whose selector matches, as kube's
``getPdbForPod``) is added, changes or goes. A sync (kube's ``trySync``):

- the pods: those of the PDB's namespace its selector matches (an empty selector: all; none: no
  pod); none gives the Normal event ``NoPods`` "No matching pods found";
- ``expectedPods`` and ``desiredHealthy`` (``getExpectedPodCount``): an integer
  ``minAvailable`` is the desired count and the matching pods the expected; otherwise expected is
  the sum of the scale of the pods' controllers (a ReplicationController, the Deployment of a
  ReplicaSet, a ReplicaSet, a StatefulSet (their ``spec.replicas``), or any kind's ``/scale``),
  and a percentage is rounded up; ``desiredHealthy = expected - maxUnavailable`` (not below 0).
  A pod without a controller makes the Warning ``UnmanagedPods``; a failure (``found no
  controllers for pod "p"``, ``jobs.batch does not implement the scale subresource``) the Warning
  ``CalculateExpectedPodCountFailed``, and the fail-safe status: ``disruptionsAllowed: 0`` and
  ``DisruptionAllowed`` False ``SyncFailed`` with the error as its message;
- ``disruptedPods``: the eviction's entries of pods still there and not terminating, dropped
  after ``deletion_timeout`` (kube's DeletionTimeout, 2 min; the Warning ``NotDeleted`` on the
  pod), the PDB queued again when the first one left expires;
- ``currentHealthy``: pods Ready, not terminating and not in ``disruptedPods``;
- ``disruptionsAllowed = currentHealthy - desiredHealthy`` (0 when negative, or when no pod is
  expected), ``observedGeneration``, and the ``DisruptionAllowed`` condition (True
  ``SufficientPods`` / False ``InsufficientPods``).

A pod that is neither terminating nor terminal whose ``DisruptionTarget`` condition is True (and
not the kubelet's ``TerminationByKubelet``) for ``stale_timeout`` (kube's
stalePodDisruptionTimeout, 2 min: an eviction whose delete failed) gets the condition set to
False, through ``pods/status``.

The status is written only when it changes, through ``poddisruptionbudgets/status`` with the
resourceVersion the informer holds, under ``kube-controller-manager`` (the manager kube's
client-go user agent gives); a 409 is retried from the queue once the informer caught up,
without the fail-safe. Events are recorded as ``controllermanager`` (kube's recorder's
component), in the legacy style.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.controllers.disruptionscale import (
    DEPLOYMENTS,
    RCS,
    RSS,
    STATEFULSETS,
    ExpectedPods,
    SyncError,
    go_selector,
)
from kubelite.api.controllers.events import NORMAL, WARNING, EventRecorder
from kubelite.api.controllers.workqueue import WorkQueue
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.kinds.core.evictions import update_pod_condition
from kubelite.api.kinds.policy.disruption import (
    CONDITION,
    SYNC_FAILED,
    conditions_are_up_to_date,
    is_pod_ready,
    set_status_condition,
    update_disruption_allowed_condition,
)
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.selectors import LabelSelector, SelectorError, label_selector_of

log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]
MANAGER = "kube-controller-manager"
COMPONENT = "controllermanager"
#: kube's DeletionTimeout
DELETION_TIMEOUT_SECONDS = 120.0
#: kube's stalePodDisruptionTimeout
STALE_TIMEOUT_SECONDS = 120.0
CLOSE_GRACE_SECONDS = 5.0
PDBS, PODS = "poddisruptionbudgets", "pods"


def _key(obj: Obj) -> Key:
    meta = obj["metadata"]
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def _time(text: Any) -> float:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


class _Listers(StoreFollower):
    """Every followed object by plural and (namespace, name); pods also by namespace (a
    budget's sync reads its namespace's pods)."""

    def __init__(self, owner: DisruptionController) -> None:
        super().__init__(owner.registry, owner.infos, name=owner.name)
        self.owner = owner
        self.objects: dict[str, dict[Key, Obj]] = {plural: {} for plural in owner.infos}
        self.pods: dict[str, dict[str, Obj]] = {}

    def replace(self, plural: str, objects: list[Obj]) -> None:
        self.objects[plural] = {_key(o): o for o in objects}
        if plural == PODS:
            self.pods = {}
            for (namespace, name), pod in self.objects[PODS].items():
                self.pods.setdefault(namespace, {})[name] = pod
        if plural == PDBS:
            for key in self.objects[PDBS]:
                self.owner.queue.add(key)

    def put(self, plural: str, obj: Obj) -> None:
        key = _key(obj)
        self.objects[plural][key] = obj
        if plural == PDBS:
            self.owner.queue.add(key)
        elif plural == PODS:
            self.pods.setdefault(key[0], {})[key[1]] = obj
            self.owner.pod_changed(obj)

    def remove(self, plural: str, namespace: str, name: str) -> None:
        gone = self.objects[plural].pop((namespace, name), None)
        if plural == PDBS:
            self.owner.queue.add((namespace, name))
        elif plural == PODS and gone is not None:
            held = self.pods.get(namespace, {})
            held.pop(name, None)
            if not held:
                self.pods.pop(namespace, None)
            self.owner.pod_changed(gone, record=False)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        return (namespace, name) in self.objects.get(plural, {})


def _selector(pdb: Obj) -> LabelSelector | None:
    """LabelSelectorAsSelector of the PDB's selector; None for a missing one (nothing)."""
    selector = (pdb.get("spec") or {}).get("selector")
    if not isinstance(selector, dict):
        return None
    return label_selector_of(selector)


class DisruptionController:
    """``start()`` runs it on the running loop; ``close()`` stops it (it may start again)."""

    name = "disruption-controller"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        deletion_timeout: float = DELETION_TIMEOUT_SECONDS,
        stale_timeout: float = STALE_TIMEOUT_SECONDS,
        workers: int = 2,
        retry_min_seconds: float = 0.05,
        retry_max_seconds: float = 30.0,
    ) -> None:
        self.registry = registry
        self.catalogue = catalogue
        self.deletion_timeout = deletion_timeout
        self.stale_timeout = stale_timeout
        self.workers = workers
        self.retry_min_seconds = retry_min_seconds
        self.retry_max_seconds = retry_max_seconds
        self.pdb_info = catalogue.require("policy", "v1", PDBS)
        self.infos: dict[str, ResourceInfo] = {
            PDBS: self.pdb_info,
            PODS: catalogue.require("", "v1", PODS),
            RCS: catalogue.require("", "v1", RCS),
            RSS: catalogue.require("apps", "v1", RSS),
            DEPLOYMENTS: catalogue.require("apps", "v1", DEPLOYMENTS),
            STATEFULSETS: catalogue.require("apps", "v1", STATEFULSETS),
        }
        self.recorder = EventRecorder(registry, catalogue, COMPONENT)
        self.expected = ExpectedPods(registry, catalogue, self.held)
        self.queue: WorkQueue[Key] = self._new_queue()
        self.stale_queue: WorkQueue[Key] = self._new_queue()
        self.listers = _Listers(self)
        self._listed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._events: set[asyncio.Task[None]] = set()

    # -- what is held ----------------------------------------------------------------------------

    def held(self, plural: str, namespace: str, name: str) -> Obj | None:
        return self.listers.objects[plural].get((namespace, name))

    def pdb_for_pod(self, pod: Obj, *, record: bool = True) -> Key | None:
        """kube's getPdbForPod: the first PDB (by name) covering the pod; a Warning
        ``MultiplePodDisruptionBudgets`` on the pod when several do."""
        namespace = str(pod["metadata"].get("namespace") or "")
        labels = pod["metadata"].get("labels") or {}
        if not labels:
            return None
        found = []
        for (ns, name), pdb in self.listers.objects[PDBS].items():
            if ns != namespace:
                continue
            try:
                selector = _selector(pdb)
            except SelectorError:
                continue
            if selector is None or selector.empty or not selector.matches(labels):
                continue
            found.append(name)
        if not found:
            return None
        found.sort()
        if len(found) > 1 and record:
            message = (
                f'Pod "{namespace}"/"{pod["metadata"]["name"]}" matches multiple '
                f'PodDisruptionBudgets.  Chose "{found[0]}" arbitrarily.'
            )
            self._record(pod, WARNING, "MultiplePodDisruptionBudgets", message)
        return (namespace, found[0])

    def pod_changed(self, pod: Obj, *, record: bool = True) -> None:
        key = self.pdb_for_pod(pod, record=record)
        if key is not None:
            self.queue.add(key)
        if record:  # an added or changed pod (kube's addPod, updatePod)
            stale, after = self.stale_disruption(pod)
            if stale:
                self.stale_queue.add_after(_key(pod), after)

    # -- stale DisruptionTarget conditions -------------------------------------------------------

    def stale_disruption(self, pod: Obj) -> tuple[bool, float]:
        """kube's nonTerminatingPodHasStaleDisruptionCondition: a pod that is not terminating
        nor terminal with ``DisruptionTarget`` True (not the kubelet's), and how long until that
        condition is stale."""
        if pod["metadata"].get("deletionTimestamp"):
            return False, 0.0
        status = pod.get("status") or {}
        found = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "DisruptionTarget"),
            None,
        )
        if (
            found is None
            or found.get("status") != "True"
            or found.get("reason") == "TerminationByKubelet"
            or status.get("phase") in ("Succeeded", "Failed")
        ):
            return False, 0.0
        since = time.time() - _time(found.get("lastTransitionTime"))
        return True, max(self.stale_timeout - since, 0.0)

    async def sync_stale(self, key: Key) -> None:
        """kube's syncStalePodDisruption: the condition set to False (a conflict-checked update
        of the pod's status, the resourceVersion the informer holds)."""
        pod = self.held(PODS, *key)
        if pod is None:
            return
        stale, after = self.stale_disruption(pod)
        if not stale:
            return
        if after > 0:
            self.stale_queue.add_after(key, after)
            return
        body = {**clone(pod), "kind": "Pod", "apiVersion": "v1"}
        if not update_pod_condition(body, {"type": "DisruptionTarget", "status": "False"}):
            return
        await self.registry.update(
            self.infos[PODS], key[0], key[1], body, subresource="status", field_manager=MANAGER
        )

    def _record(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """An event, written in the background (the informer's handlers do not wait)."""
        ref = {**obj, "kind": obj.get("kind") or "Pod", "apiVersion": obj.get("apiVersion") or "v1"}
        task = asyncio.get_running_loop().create_task(
            self.recorder.record(ref, type_, reason, message)
        )
        self._events.add(task)
        task.add_done_callback(self._events.discard)

    # -- the sync --------------------------------------------------------------------------------

    async def sync(self, key: Key) -> None:
        pdb = self.held(PDBS, *key)
        if pdb is None:
            return
        try:
            await self.try_sync(pdb)
        except APIError as exc:
            if exc.code == 409:
                raise
            await self.fail_safe(pdb, exc.message)
        except SyncError as exc:
            await self.fail_safe(pdb, str(exc))

    def pods_for(self, pdb: Obj) -> list[Obj]:
        namespace = str(pdb["metadata"].get("namespace") or "")
        selector = _selector(pdb)
        if selector is None:
            return []
        held = self.listers.pods.get(namespace, {})
        return [
            held[name]
            for name in sorted(held)
            if selector.matches(held[name]["metadata"].get("labels") or {})
        ]

    async def try_sync(self, pdb: Obj) -> None:
        pdb = {**pdb, "kind": "PodDisruptionBudget", "apiVersion": "policy/v1"}
        try:
            pods = self.pods_for(pdb)
        except SelectorError as exc:
            await self.recorder.record(pdb, WARNING, "NoPods", f"Failed to get pods: {exc}")
            raise SyncError(str(exc)) from None
        if not pods:
            await self.recorder.record(pdb, NORMAL, "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = await self.expected.count(pdb, pods)
        except SyncError as exc:
            await self.recorder.record(
                pdb, WARNING, "CalculateExpectedPodCountFailed",
                f"Failed to calculate the number of expected pods: {exc}",
            )  # fmt: skip
            raise
        if unmanaged:
            await self.recorder.record(
                pdb, WARNING, "UnmanagedPods",
                f"Pods selected by this PodDisruptionBudget (selector: "
                f"{go_selector(pdb['spec'].get('selector'))}) were found to be unmanaged. As a "
                "result, the status of the PDB cannot be calculated correctly, which may result "
                'in undefined behavior. To account for these pods please set ".spec.minAvailable" '
                "field of the PDB to an integer value.",
            )  # fmt: skip
        current_time = time.time()
        disrupted, recheck = self.disrupted_pod_map(pods, pdb, current_time)
        healthy = self.count_healthy(pods, disrupted, current_time)
        await self.update_status(pdb, healthy, desired, expected, disrupted)
        if recheck is not None:
            self.queue.add_after(_key(pdb), max(recheck - current_time, 0.0))

    def disrupted_pod_map(
        self, pods: list[Obj], pdb: Obj, current_time: float
    ) -> tuple[dict[str, str], float | None]:
        """kube's buildDisruptedPodMap: the entries still pending, and when to look again."""
        disrupted = (pdb.get("status") or {}).get("disruptedPods") or {}
        result: dict[str, str] = {}
        recheck: float | None = None
        for pod in pods:
            name = pod["metadata"]["name"]
            if pod["metadata"].get("deletionTimestamp") or name not in disrupted:
                continue
            expected_deletion = _time(disrupted[name]) + self.deletion_timeout
            if expected_deletion < current_time:
                namespace = pdb["metadata"].get("namespace")
                self._record(
                    pod, WARNING, "NotDeleted",
                    f"Pod was expected by PDB {namespace}/{namespace} to be deleted but it wasn't",
                )  # fmt: skip
            else:
                if recheck is None or expected_deletion < recheck:
                    recheck = expected_deletion
                result[name] = disrupted[name]
        return result, recheck

    def count_healthy(self, pods: list[Obj], disrupted: dict[str, str], now: float) -> int:
        healthy = 0
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            when = disrupted.get(pod["metadata"]["name"])
            if when is not None and _time(when) + self.deletion_timeout > now:
                continue
            if is_pod_ready(pod):
                healthy += 1
        return healthy

    async def update_status(
        self, pdb: Obj, healthy: int, desired: int, expected: int, disrupted: dict[str, str]
    ) -> None:
        """kube's updatePdbStatus: written only when something changed."""
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0:
            allowed = 0
        status = pdb.get("status") or {}
        generation = int(pdb["metadata"].get("generation") or 0)
        if (
            status.get("currentHealthy", 0) == healthy
            and status.get("desiredHealthy", 0) == desired
            and status.get("expectedPods", 0) == expected
            and status.get("disruptionsAllowed", 0) == allowed
            and (status.get("disruptedPods") or {}) == disrupted
            and int(status.get("observedGeneration") or 0) == generation
            and conditions_are_up_to_date(pdb)
        ):
            return
        new: Obj = {"observedGeneration": generation}
        if disrupted:
            new["disruptedPods"] = disrupted
        new.update(
            disruptionsAllowed=allowed,
            currentHealthy=healthy,
            desiredHealthy=desired,
            expectedPods=expected,
            conditions=[dict(c) for c in status.get("conditions") or []],
        )
        update_disruption_allowed_condition(new)
        await self._write(pdb, new)

    async def fail_safe(self, pdb: Obj, message: str) -> None:
        """kube's failSafe: no disruption allowed, ``DisruptionAllowed`` False ``SyncFailed``."""
        status = clone(pdb.get("status") or {})
        status["disruptionsAllowed"] = 0
        conditions = status.setdefault("conditions", [])
        set_status_condition(
            conditions,
            {
                "type": CONDITION,
                "status": "False",
                "observedGeneration": int(status.get("observedGeneration") or 0),
                "reason": SYNC_FAILED,
                "message": message,
            },
        )
        await self._write(pdb, status)

    async def _write(self, pdb: Obj, status: Obj) -> None:
        body = {**clone(pdb), "kind": "PodDisruptionBudget", "apiVersion": "policy/v1"}
        body["status"] = status
        namespace, name = _key(pdb)
        await self.registry.update(
            self.pdb_info, namespace, name, body, subresource="status", field_manager=MANAGER
        )

    # -- lifecycle -------------------------------------------------------------------------------

    def queue_depth(self) -> int:
        return len(self.queue)

    async def wait_settled(self) -> None:
        await self._listed.wait()
        await self.queue.wait_idle()

    def start(self) -> None:
        if self._tasks:
            return
        if self.queue.shutting_down:
            self.queue = self._new_queue()
            self.stale_queue = self._new_queue()
            self.listers = _Listers(self)
            self._listed = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(), name=f"kubelite-{self.name}")]

    async def close(self) -> None:
        tasks, self._tasks = self._tasks, []
        self.queue.shut_down()
        self.stale_queue.shut_down()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, CLOSE_GRACE_SECONDS)
        await self.listers.close()
        for event in list(self._events):
            event.cancel()

    def _new_queue(self) -> WorkQueue[Key]:
        return WorkQueue(
            retry_min_seconds=self.retry_min_seconds, retry_max_seconds=self.retry_max_seconds
        )

    async def _run(self) -> None:
        while not self.queue.shutting_down:
            try:
                await self.listers.start()
                self._listed.set()
                break
            except Exception:
                log.warning("%s: listing failed; trying again", self.name, exc_info=True)
                await asyncio.sleep(self.retry_max_seconds / 10)
        await asyncio.gather(
            *(
                self._work(self.queue, self.sync, "PodDisruptionBudget")
                for _ in range(self.workers)
            ),
            self._work(self.stale_queue, self.sync_stale, "Pod"),
        )

    async def _work(
        self, queue: WorkQueue[Key], sync: Callable[[Key], Awaitable[None]], kind: str
    ) -> None:
        while (key := await queue.get()) is not None:
            try:
                await sync(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("%s: syncing %s %s/%s failed (%s); requeuing",
                         self.name, kind, key[0], key[1], exc)  # fmt: skip
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
            finally:
                queue.done(key)
