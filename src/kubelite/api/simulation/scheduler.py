"""The scheduler (kube-scheduler's ``default-scheduler`` profile, pkg/scheduler/schedule_one.go):
pods waiting for a node are placed on one, one pod at a time.

- **Which pods:** ``spec.schedulerName: default-scheduler``, no ``spec.nodeName``, not being
  deleted, not terminal, no ``spec.schedulingGates`` (a gated pod carries ``PodScheduled=False``
  ``SchedulingGated`` from its creation; it is scheduled once its gates are removed).
- **The cycle** (:mod:`.schedulingcycle`, :mod:`.schedulerfilters`): the nodes and the
  non-terminal pods on them as the informer holds them, plus the pods this scheduler bound but
  the informer has not seen bound yet (kube's "assumed" pods), so that a burst of pods never
  overcommits a node.
- **Binding:** ``POST pods/<name>/binding`` (the pod's uid as precondition), then the Normal
  event ``Scheduled`` (action ``Binding``) ``Successfully assigned <ns>/<pod> to <node>``.
  A 404 (the pod is gone) or 409 (already assigned, or another pod of that name) drops the pod.
- **Failure** (``handleSchedulingFailure``): the Warning event ``FailedScheduling`` (action
  ``Scheduling``), then the pod's ``PodScheduled`` condition ``False``/``Unschedulable`` with the
  message, written to ``pods/status`` only when it changed (``lastTransitionTime`` kept while the
  status stays ``False``).
- **Preemption** (DefaultPreemption): when evicting lower-priority pods from a node would make
  room, they get ``DisruptionTarget=True`` ``PreemptionByScheduler``, are deleted and get the
  Normal event ``Preempted``; the pod's ``status.nominatedNodeName`` names the node, and it is
  tried again once they are gone.
- **Retry** (:mod:`.schedulingqueue`, simplified queueing hints): an unschedulable pod waits until
  a Node is added or changes (labels, taints, allocatable, conditions, ``unschedulable``), an
  assigned pod goes away, leaves its node or ends, a pod with pod affinity or spread constraints
  waits for a pod that was bound, or the pod itself changes; then after its back-off (1 s
  doubling to 10 s per attempt); and at the latest after 5 minutes
  (``podMaxInUnschedulablePodsDuration``).

Events are recorded as ``default-scheduler`` (series style, as ``tools/events`` records them);
writes are recorded under the field manager ``kube-scheduler`` (client-go's default, the
binary's name).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.events import NORMAL, WARNING, EventRecorder
from kubelite.api.encoding.stored import now
from kubelite.api.errors import APIError
from kubelite.api.kinds.validation.fields import as_dict, as_list
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import DeleteOptions
from kubelite.api.simulation.schedulerfilters import NodeInfo
from kubelite.api.simulation.schedulingcycle import Preemption, schedule
from kubelite.api.simulation.schedulingqueue import SchedulingQueue

log = logging.getLogger(__name__)

Obj = dict[str, Any]
NAME = "default-scheduler"
FIELD_MANAGER = "kube-scheduler"
PODS, NODES, NAMESPACES = "pods", "nodes", "namespaces"


def key_of(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def terminal(pod: Obj) -> bool:
    return as_dict(pod.get("status")).get("phase") in ("Succeeded", "Failed")


def pending(pod: Obj | None) -> bool:
    """Whether the scheduler places ``pod``."""
    if pod is None:
        return False
    spec = as_dict(pod.get("spec"))
    return (
        spec.get("schedulerName", NAME) == NAME
        and not spec.get("nodeName")
        and not pod["metadata"].get("deletionTimestamp")
        and not spec.get("schedulingGates")
        and not terminal(pod)
    )


def _node_view(node: Obj) -> Any:
    """What of a Node can make a pod schedulable (kube's node update event types)."""
    status = as_dict(node.get("status"))
    conditions = sorted(
        (c.get("type"), c.get("status"), c.get("reason"))
        for c in as_list(status.get("conditions"))
        if isinstance(c, dict)
    )
    meta = node["metadata"]
    return (meta.get("labels"), meta.get("annotations"), node.get("spec"),
            status.get("allocatable"), conditions)  # fmt: skip


def _pod_view(pod: Obj) -> Any:
    return (pod["metadata"].get("labels"), pod.get("spec"))


class _Listers(StoreFollower):
    def __init__(self, owner: Scheduler) -> None:
        super().__init__(
            owner.registry,
            {PODS: owner.pods_info, NODES: owner.nodes_info, NAMESPACES: owner.namespaces_info},
            name=NAME,
        )
        self.owner = owner
        self.pods: dict[str, Obj] = {}
        self.nodes: dict[str, Obj] = {}
        self.namespaces: dict[str, Obj] = {}

    def _table(self, plural: str) -> dict[str, Obj]:
        return {PODS: self.pods, NODES: self.nodes, NAMESPACES: self.namespaces}[plural]

    def replace(self, plural: str, objects: list[Obj]) -> None:
        table = self._table(plural)
        table.clear()
        for obj in objects:
            table[key_of(obj) if plural == PODS else obj["metadata"]["name"]] = obj
        self.owner.relisted(plural)

    def put(self, plural: str, obj: Obj) -> None:
        key = key_of(obj) if plural == PODS else obj["metadata"]["name"]
        table = self._table(plural)
        old = table.get(key)
        table[key] = obj
        if plural == PODS:
            self.owner.pod_changed(key, old, obj)
        elif plural == NODES:
            self.owner.node_changed(old, obj)

    def remove(self, plural: str, namespace: str, name: str) -> None:
        key = f"{namespace}/{name}" if plural == PODS else name
        old = self._table(plural).pop(key, None)
        if plural == PODS and old is not None:
            self.owner.pod_removed(key, old)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        return (f"{namespace}/{name}" if plural == PODS else name) in self._table(plural)


class Scheduler:
    """The controller: ``start()`` lists and follows Pods, Nodes and Namespaces and runs the
    scheduling loop; ``close()`` stops it (it may start again)."""

    def __init__(self, registry: Registry, catalogue: Catalogue) -> None:
        self.registry = registry
        self.pods_info = catalogue.require("", "v1", "pods")
        self.nodes_info = catalogue.require("", "v1", "nodes")
        self.namespaces_info = catalogue.require("", "v1", "namespaces")
        self.events = EventRecorder(registry, catalogue, NAME, style="series")
        self._fresh()

    def _fresh(self) -> None:
        self.queue = SchedulingQueue()
        self.listers = _Listers(self)
        #: pod uid -> (key, the pod as bound) while the informer has not seen it bound
        self.assumed: dict[str, tuple[str, Obj]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._main: asyncio.Task[None] | None = None

    def queue_depth(self) -> int:
        return len(self.queue)

    def start(self) -> None:
        if self._main is not None:
            return
        self._fresh()
        self._main = asyncio.get_running_loop().create_task(self._run(), name=f"kubelite-{NAME}")

    async def close(self) -> None:
        main, self._main = self._main, None
        tasks = [t for t in (main, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.queue.close()
        await self.listers.close()

    async def _run(self) -> None:
        while True:
            try:
                await self.listers.start()
                break
            except Exception:
                log.warning("%s: listing failed; trying again", NAME, exc_info=True)
                await asyncio.sleep(1.0)
        while True:
            key = await self.queue.pop()
            try:
                await self._schedule_one(key)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: scheduling %s failed", NAME, key)
                self.queue.in_flight = None
                self.queue.requeue(key)
            finally:
                self.queue.in_flight = None

    # -- informer events ---------------------------------------------------------------------------

    def relisted(self, plural: str) -> None:
        if plural == PODS:
            for key, pod in self.listers.pods.items():
                if pending(pod) and not self.queue.holds(key):
                    self.queue.add(key)
        self.queue.move()

    def pod_changed(self, key: str, old: Obj | None, new: Obj) -> None:
        uid = new["metadata"].get("uid", "")
        if as_dict(new.get("spec")).get("nodeName"):
            self.assumed.pop(uid, None)
        if pending(new):
            if not self.queue.holds(key):
                self.queue.add(key)
            elif (
                old is not None
                and key in self.queue.unschedulable
                and _pod_view(old) != _pod_view(new)
            ):
                self.queue.requeue(key)
            return
        self.queue.forget(key)
        node = as_dict(new.get("spec")).get("nodeName")
        old_node = as_dict(old.get("spec")).get("nodeName") if old else None
        if old_node and (old_node != node or (terminal(new) and not terminal(old or {}))):
            self.queue.move()  # an assigned pod left its node or ended
        elif node and not old_node:
            self.queue.move([k for k in self.queue.unschedulable if self._wants_pods(k)])

    def _wants_pods(self, key: str) -> bool:
        pod = self.listers.pods.get(key)
        affinity = as_dict(as_dict(pod.get("spec")).get("affinity")) if pod else {}
        spread = as_list(as_dict(pod.get("spec")).get("topologySpreadConstraints")) if pod else []
        return bool(affinity.get("podAffinity")) or bool(spread)

    def pod_removed(self, key: str, old: Obj) -> None:
        self.assumed.pop(old["metadata"].get("uid", ""), None)
        self.queue.forget(key)
        if as_dict(old.get("spec")).get("nodeName"):
            self.queue.move()

    def node_changed(self, old: Obj | None, new: Obj) -> None:
        if old is None or _node_view(old) != _node_view(new):
            self.queue.move()

    # -- the cycle ---------------------------------------------------------------------------------

    def _snapshot(self) -> list[NodeInfo]:
        infos = {name: NodeInfo(node) for name, node in self.listers.nodes.items()}
        bound = set()
        for pod in self.listers.pods.values():
            node = as_dict(pod.get("spec")).get("nodeName")
            if node and node in infos and not terminal(pod):
                infos[node].add(pod)
                bound.add(pod["metadata"].get("uid"))
        for uid, (_, pod) in self.assumed.items():
            node = pod["spec"]["nodeName"]
            if uid not in bound and node in infos:
                infos[node].add(pod)
        return list(infos.values())

    def _namespace_labels(self) -> dict[str, dict[str, str]]:
        return {
            name: as_dict(ns["metadata"].get("labels"))
            for name, ns in self.listers.namespaces.items()
        }

    async def _schedule_one(self, key: str) -> None:
        pod = self.listers.pods.get(key)
        if not pending(pod) or pod is None or pod["metadata"].get("uid") in self.assumed:
            return
        moves = self.queue.moves
        outcome = schedule(pod, self._snapshot(), self._namespace_labels())
        if outcome.node is None:
            nominated = ""
            if outcome.preemption is not None:
                nominated = outcome.preemption.node
                await self._preempt(pod, outcome.preemption)
            await self._failed(pod, outcome.message, nominated)
            self.queue.in_flight = None
            if self.queue.moves != moves:  # something changed while the pod was tried
                self.queue.requeue(key)
            else:
                self.queue.park(key)
            return
        bound = {**pod, "spec": {**pod["spec"], "nodeName": outcome.node}}
        self.assumed[pod["metadata"]["uid"]] = (key, bound)
        self.queue.drop(key)
        task = asyncio.get_running_loop().create_task(self._bind(key, pod, outcome.node))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _bind(self, key: str, pod: Obj, node: str) -> None:
        meta = pod["metadata"]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "uid": meta["uid"]},
            "target": {"kind": "Node", "name": node},
        }
        try:
            await self.registry.create(
                self.pods_info, meta["namespace"], binding, subresource="binding",
                field_manager=FIELD_MANAGER,
            )  # fmt: skip
        except Exception as exc:
            self.assumed.pop(meta["uid"], None)
            self.queue.move()  # what the pod held on the node is free again
            if isinstance(exc, APIError) and exc.code in (404, 409):
                return  # gone, replaced or bound meanwhile
            log.info("%s: binding %s to %s failed (%s); retrying", NAME, key, node, exc)
            text = exc.message if isinstance(exc, APIError) else str(exc)
            with contextlib.suppress(Exception):
                await self._failed(pod, text, reason="SchedulerError")
            self.queue.requeue(key)  # after its back-off
            return
        message = f"Successfully assigned {meta['namespace']}/{meta['name']} to {node}"
        await self.events.record(pod, NORMAL, "Scheduled", message, action="Binding")

    async def _preempt(self, pod: Obj, plan: Preemption) -> None:
        """prepareCandidate: each victim gets DisruptionTarget=True, is deleted, and gets the
        Normal event ``Preempted`` (action ``Preempting``)."""
        for victim in plan.victims:
            meta = victim["metadata"]
            target = disruption_target(victim)

            def mark(current: Obj, uid: str = meta.get("uid", ""), wanted: Obj = target) -> None:
                if current["metadata"].get("uid") != uid:
                    raise _Gone
                status = current.setdefault("status", {})
                kept = [c for c in as_list(status.get("conditions")) if isinstance(c, dict)]
                for i, old in enumerate(kept):
                    if old.get("type") == "DisruptionTarget":
                        kept[i] = wanted
                        break
                else:
                    kept.append(wanted)
                status["conditions"] = kept

            try:
                await self.registry.mutate(
                    self.pods_info, meta["namespace"], meta["name"], mark, subresource="status",
                    field_manager=FIELD_MANAGER,
                )  # fmt: skip
                await self.registry.delete(
                    self.pods_info, meta["namespace"], meta["name"],
                    DeleteOptions(precondition_uid=meta.get("uid", "")),
                )  # fmt: skip
            except _Gone:
                continue
            except APIError as exc:
                if exc.code in (404, 409):
                    continue
                raise
            uid = pod["metadata"].get("uid", "")
            message = f"Preempted by pod {uid} on node {plan.node}"
            await self.events.record(victim, NORMAL, "Preempted", message, action="Preempting")

    async def _failed(
        self, pod: Obj, message: str, nominated: str = "", reason: str = "Unschedulable"
    ) -> None:
        await self.events.record(pod, WARNING, "FailedScheduling", message, action="Scheduling")
        meta = pod["metadata"]
        generation = meta.get("generation")
        wanted: Obj = {"type": "PodScheduled"}
        if isinstance(generation, int):
            wanted["observedGeneration"] = generation
        wanted.update(status="False", lastProbeTime=None, lastTransitionTime=now(),
                      reason=reason, message=message)  # fmt: skip
        had = as_dict(pod.get("status")).get("nominatedNodeName") or ""
        if _same_condition(pod, wanted) and had == nominated:
            return

        def change(current: Obj) -> None:
            if current["metadata"].get("uid") != meta.get("uid"):
                raise _Gone
            if as_dict(current.get("spec")).get("nodeName"):
                raise _Gone
            status = current.setdefault("status", {})
            conditions = as_list(status.get("conditions"))
            condition = dict(wanted)
            for i, old in enumerate(conditions):
                if isinstance(old, dict) and old.get("type") == "PodScheduled":
                    if old.get("status") == "False" and old.get("lastTransitionTime"):
                        condition["lastTransitionTime"] = old["lastTransitionTime"]
                    conditions[i] = condition
                    break
            else:
                conditions.append(condition)
            status["conditions"] = conditions
            if nominated:
                status["nominatedNodeName"] = nominated
            else:
                status.pop("nominatedNodeName", None)

        try:
            await self.registry.mutate(
                self.pods_info, meta["namespace"], meta["name"], change, subresource="status",
                field_manager=FIELD_MANAGER,
            )  # fmt: skip
        except _Gone:
            return
        except APIError as exc:
            if exc.code != 404:
                raise


class _Gone(Exception):
    """The pod was replaced or bound meanwhile: its condition is not the scheduler's to write."""


def _same_condition(pod: Obj, wanted: Obj) -> bool:
    for old in as_list(as_dict(pod.get("status")).get("conditions")):
        if isinstance(old, dict) and old.get("type") == "PodScheduled":
            return all(
                old.get(k) == wanted.get(k)
                for k in ("status", "reason", "message", "observedGeneration")
            )
    return False


def disruption_target(victim: Obj) -> Obj:
    """The condition a preempted pod gets (preemption.go ``PreemptPod``)."""
    condition: Obj = {"type": "DisruptionTarget"}
    generation = victim["metadata"].get("generation")
    if isinstance(generation, int):
        condition["observedGeneration"] = generation
    message = f"{NAME}: preempting to accommodate a higher priority pod"
    condition.update(status="True", lastProbeTime=None, lastTransitionTime=now(),
                     reason="PreemptionByScheduler", message=message)  # fmt: skip
    return condition
