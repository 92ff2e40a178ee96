"""kube-controller-manager's ``node-lifecycle-controller``
(pkg/controller/nodelifecycle/node_lifecycle_controller.go) for every Node: the NoSchedule
tainting pass, the health check of heartbeats, and the node-controller's events.

- **Taints** (``doNoScheduleTaintingPass``, on every change of a Node): ``Ready=False`` ->
  ``node.kubernetes.io/not-ready:NoSchedule``, ``Ready=Unknown`` -> ``unreachable``,
  ``MemoryPressure``/``DiskPressure``/``PIDPressure``/``NetworkUnavailable=True`` ->
  ``memory-pressure``/``disk-pressure``/``pid-pressure``/``network-unavailable``,
  ``spec.unschedulable`` -> ``node.kubernetes.io/unschedulable``. Each taint is added with
  ``timeAdded`` (``SwapNodeControllerTaint``) and removed when its cause clears; other taints
  are left alone.
- **Health** (``monitorNodeHealth`` / ``tryUpdateNodeHealth``, every ``monitor_period``): a
  node's probe time moves when its Ready condition's ``lastHeartbeatTime`` changes or its Lease
  ``kube-node-lease/<node>`` is renewed. When none came for ``grace_period`` (``startup_grace``
  for a node that never posted a Ready condition, counted from its creation), Ready,
  MemoryPressure, DiskPressure and PIDPressure become ``Unknown``: reason ``NodeStatusUnknown``,
  ``Kubelet stopped posting node status.`` (a condition never posted is added with
  ``NodeStatusNeverUpdated``, ``Kubelet never posted node status.``), written with a
  conflict-checked update of ``nodes/status``. A Ready that was True and is no longer gives the
  event ``NodeNotReady`` "Node <n> status is now: NodeNotReady" and marks the node's pods not
  ready (``MarkPodsNotReady``: their Ready condition False, and a Warning ``NodeNotReady`` "Node is
  not ready" on each).
- **Events** from ``node-controller``: ``RegisteredNode`` "Node <n> event: Registered Node <n> in
  Controller" for each node the controller first sees (so again after it restarts, as kube's
  does), ``RemovingNode`` "Node <n> event: Removing Node <n> from Controller" when one goes.

Not done: the NoExecute taints and the zone states (``doNoExecuteTaintingPass``), and taint
eviction. Writes are under ``kube-controller-manager``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.events import NORMAL, WARNING, EventRecorder
from kubelite.api.controllers.keyed import KeyedController
from kubelite.api.encoding.stored import clone, now
from kubelite.api.errors import APIError
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MANAGER = "kube-controller-manager"
NODES, LEASES = "nodes", "leases"
LEASE_NAMESPACE = "kube-node-lease"
NO_SCHEDULE = "NoSchedule"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
#: nodeConditionToTaintKeyStatusMap
CONDITION_TAINTS: dict[str, dict[str, str]] = {
    "Ready": {"False": "node.kubernetes.io/not-ready", "Unknown": "node.kubernetes.io/unreachable"},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
TAINT_KEYS = frozenset(k for m in CONDITION_TAINTS.values() for k in m.values())
#: the conditions the health check sets Unknown, in kube's order
HEALTH_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


@dataclass(slots=True)
class _Health:
    """nodeHealthData: when a heartbeat was last seen, and what it was."""

    probe: float
    ready_heartbeat: str | None
    lease_renew: str | None


def desired_taints(node: Obj) -> list[tuple[str, str]]:
    """The NoSchedule taints (key, effect) the node's conditions and spec call for."""
    wanted = []
    for condition in (node.get("status") or {}).get("conditions") or []:
        key = CONDITION_TAINTS.get(condition.get("type", ""), {}).get(condition.get("status", ""))
        if key is not None:
            wanted.append((key, NO_SCHEDULE))
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.append((UNSCHEDULABLE_TAINT, NO_SCHEDULE))
    return wanted


def swap_taints(node: Obj) -> bool:
    """Add the missing controller taints (with timeAdded) and drop those whose cause cleared;
    whether the node changed."""
    spec = node.setdefault("spec", {})
    taints: list[Obj] = list(spec.get("taints") or [])
    wanted = desired_taints(node)

    def ours(t: Obj) -> bool:
        key = t.get("key")
        return t.get("effect") == NO_SCHEDULE and (key == UNSCHEDULABLE_TAINT or key in TAINT_KEYS)

    held = {(t.get("key"), t.get("effect")) for t in taints if ours(t)}
    kept = [t for t in taints if not ours(t) or (t.get("key"), t.get("effect")) in wanted]
    added = [
        {"key": key, "effect": effect, "timeAdded": now()}
        for key, effect in dict.fromkeys(wanted)
        if (key, effect) not in held
    ]
    if not added and len(kept) == len(taints):
        return False
    kept.extend(added)
    if kept:
        spec["taints"] = kept
    else:
        spec.pop("taints", None)
    return True


def _epoch(stamp: str | None) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _condition(node: Obj, type_: str) -> Obj | None:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == type_:
            return dict(condition)
    return None


class NodeLifecycleController(KeyedController[str]):
    name = "node-lifecycle-controller"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        monitor_period: float = 5.0,
        grace_period: float = 50.0,
        startup_grace_period: float = 60.0,
    ) -> None:
        self.node_info = catalogue.require("", "v1", NODES)
        self.lease_info = catalogue.require("coordination.k8s.io", "v1", LEASES)
        self.pod_info = catalogue.require("", "v1", "pods")
        super().__init__(registry, {NODES: self.node_info, LEASES: self.lease_info})
        self.monitor_period = monitor_period
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.recorder = EventRecorder(registry, catalogue, "node-controller")
        self.pod_recorder = EventRecorder(registry, catalogue, "node-controller")
        self.health: dict[str, _Health] = {}
        self.known: dict[str, str] = {}

    def reset(self) -> None:
        self.health = {}
        self.known = {}

    def enqueue(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        meta = obj["metadata"]
        if plural == NODES:
            self.queue.add(meta["name"])
        elif meta.get("namespace") == LEASE_NAMESPACE and new is None:
            return  # a lease that goes is no heartbeat; the periodic check sees it

    async def sync(self, key: str) -> None:
        node = self.informer.get(NODES, "", key)
        if node is None:
            self.health.pop(key, None)
            uid = self.known.pop(key, None)
            if uid is not None:
                await self._node_event(
                    key, uid, "RemovingNode", f"Removing Node {key} from Controller"
                )
            return
        uid = node["metadata"].get("uid", "")
        if self.known.get(key) != uid:
            self.known[key] = uid
            self.health.pop(key, None)
            await self._node_event(
                key, uid, "RegisteredNode", f"Registered Node {key} in Controller"
            )
        await self._taint_pass(node)
        await self._health_check(node)
        self.queue.add_after(key, self.monitor_period)

    async def _node_event(self, name: str, uid: str, reason: str, event: str) -> None:
        ref = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}}
        await self.recorder.record(ref, NORMAL, reason, f"Node {name} event: {event}")

    async def _taint_pass(self, node: Obj) -> None:
        probe = {"spec": dict(node.get("spec") or {}), "status": node.get("status") or {}}
        if not swap_taints(probe):
            return
        uid = node["metadata"].get("uid")

        def change(current: Obj) -> None:
            if current["metadata"].get("uid") == uid:
                swap_taints(current)

        try:
            await self.registry.mutate(
                self.node_info, None, node["metadata"]["name"], change, field_manager=MANAGER
            )
        except APIError as exc:
            if exc.code != 404:
                raise

    async def _health_check(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        if node["metadata"].get("deletionTimestamp"):
            return
        ready = _condition(node, "Ready")
        lease = self.informer.get(LEASES, LEASE_NAMESPACE, name)
        renew = ((lease or {}).get("spec") or {}).get("renewTime")
        heartbeat = None if ready is None else ready.get("lastHeartbeatTime")
        wall = time.time()
        health = self.health.get(name)
        if health is None:
            start = wall
            if ready is None:  # never posted: counted from its creation
                start = _epoch(node["metadata"].get("creationTimestamp")) or wall
            health = self.health[name] = _Health(start, heartbeat, renew)
        if heartbeat != health.ready_heartbeat:
            health.ready_heartbeat, health.probe = heartbeat, wall
        if renew is not None and (health.lease_renew is None or renew > health.lease_renew):
            health.lease_renew, health.probe = renew, wall
        grace = self.startup_grace_period if ready is None else self.grace_period
        if wall <= health.probe + grace:
            return
        was_ready = ready is not None and ready.get("status") == "True"
        if not self._stale_conditions(clone(node)):
            return
        uid = node["metadata"].get("uid")

        def stale(current: Obj) -> None:
            if current["metadata"].get("uid") == uid:
                self._stale_conditions(current)

        try:
            await self.registry.mutate(
                self.node_info, None, name, stale, subresource="status", field_manager=MANAGER
            )
        except APIError as exc:
            if exc.code == 404:
                return
            raise
        if was_ready:
            log.info("node %s stopped posting status; marking it NotReady", name)
            ref = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}}
            await self.recorder.record(
                ref, NORMAL, "NodeNotReady", f"Node {name} status is now: NodeNotReady"
            )
            await self._mark_pods_not_ready(name)

    @staticmethod
    def _stale_conditions(node: Obj) -> bool:
        """Set the health conditions Unknown (as tryUpdateNodeHealth does); whether Ready
        changed."""
        status = node.setdefault("status", {})
        conditions: list[Obj] = status.setdefault("conditions", [])
        stamp = now()
        before = _condition(node, "Ready")
        for type_ in HEALTH_CONDITIONS:
            for condition in conditions:
                if condition.get("type") == type_:
                    if condition.get("status") != "Unknown":
                        condition.update(
                            status="Unknown",
                            reason="NodeStatusUnknown",
                            message="Kubelet stopped posting node status.",
                            lastTransitionTime=stamp,
                        )
                    break
            else:
                conditions.append(
                    {
                        "type": type_,
                        "status": "Unknown",
                        "lastHeartbeatTime": node["metadata"].get("creationTimestamp"),
                        "lastTransitionTime": stamp,
                        "reason": "NodeStatusNeverUpdated",
                        "message": "Kubelet never posted node status.",
                    }
                )
        return before != _condition(node, "Ready")

    async def _mark_pods_not_ready(self, node_name: str) -> None:
        """MarkPodsNotReady (pkg/controller/util/node/controller_utils.go)."""
        listing = await self.registry.list(
            self.pod_info,
            None,
            ListOptions(
                label_selector=lambda p: (p.get("spec") or {}).get("nodeName") == node_name
            ),
        )
        for pod in listing["items"]:
            conditions = (pod.get("status") or {}).get("conditions") or []
            ready = next((c for c in conditions if c.get("type") == "Ready"), None)
            if ready is None or ready.get("status") == "False":
                continue
            meta = pod["metadata"]

            def unready(current: Obj) -> None:
                for condition in (current.get("status") or {}).get("conditions") or []:
                    if condition.get("type") == "Ready" and condition.get("status") != "False":
                        condition.update(status="False", lastTransitionTime=now())

            try:
                await self.registry.mutate(
                    self.pod_info, meta["namespace"], meta["name"], unready,
                    subresource="status", field_manager=MANAGER,
                )  # fmt: skip
            except APIError as exc:
                log.info("pod %s/%s not marked not ready: %s", meta["namespace"], meta["name"],
                         exc.message)  # fmt: skip
                continue
            await self.pod_recorder.record(pod, WARNING, "NodeNotReady", "Node is not ready")
