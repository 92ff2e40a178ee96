"""The simulated kubelets' work for their Nodes (``node-agent``): registration, node status,
the node Lease and the kubelet's Node events, for every Node annotated
``kubelite.dev/simulated: "true"`` (pkg/kubelet/kubelet_node_status.go, pkg/kubelet/nodestatus,
pkg/kubelet/nodelease and component-helpers/apimachinery/lease/controller.go).

- **Registration** (once each time the agent starts): ``Simulation.nodes`` Nodes
  ``kubelite-worker``, ``kubelite-worker2`` ... are POSTed (:func:`.nodestatus.registered_node`);
  on 409 the existing one is read and reconciled (default labels, annotations).
- **Status** (:func:`.nodestatus.set_status`): computed every ``status_update`` seconds and on
  every change of the Node, written through ``nodes/status`` (conflict-checked, under
  ``kubelet``) only when something other than the heartbeat times changed, or
  ``status_report`` passed since the last report. The InternalIP is ``172.18.0.<n>``: .2, .3 ...
  for the registered nodes by their number, the lowest free one after them for others, kept
  once written.
- **Lease** ``kube-node-lease/<node>``: created with ``holderIdentity``, ``leaseDurationSeconds``
  40, ``renewTime`` and an ownerReference to the Node (no ``controller`` flag: the garbage
  collector deletes it with the Node); renewed every ``lease_renew`` seconds with a
  conflict-checked update (on 409 it is read again and the renewal tried once more).
- **Events** (legacy style, component ``kubelet``, host the node, on the reference the kubelet
  uses: kind Node, uid = the node's name): ``Starting`` "Starting kubelet." and
  ``NodeAllocatableEnforced`` when the agent takes a node on; ``NodeHasSufficientMemory`` ...
  "Node <n> status is now: <reason>" on each condition's transition (``NodeReady`` also when
  Ready is first posted True: a simulated node is ready at once, where kind's first reports it
  NotReady until CNI is up); ``NodeNotSchedulable`` / ``NodeSchedulable`` when
  ``spec.unschedulable`` changes (``recordNodeSchedulableEvent``).
- ``kubelite.dev/simulate-heartbeat: stopped`` stops the Lease renewal and the status reports
  (the node lifecycle controller then finds it unreachable); a Node that is deleted is no
  longer simulated.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.events import NORMAL, EventRecorder
from kubelite.api.controllers.keyed import KeyedController
from kubelite.api.controllers.leaderelection import microtime
from kubelite.api.encoding.stored import clone, now
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry
from kubelite.api.simulation import nodestatus
from kubelite.api.simulation.config import SIMULATED_ANNOTATION, NodeTimings, Simulation

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MANAGER = "kubelet"
NODES, LEASES = "nodes", "leases"
LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40


def simulated(node: Obj) -> bool:
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    return annotations.get(SIMULATED_ANNOTATION) == "true"


@dataclass(slots=True)
class _Kubelet:
    """What one simulated kubelet remembers of its node."""

    uid: str
    recorder: EventRecorder
    address: str = ""
    reported: float | None = None
    renewed: float | None = None
    unschedulable: bool = False


class NodeAgent(KeyedController[str]):
    """The simulated kubelets of ``simulation``; ``timings`` their intervals."""

    name = "node-agent"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        simulation: Simulation,
        timings: NodeTimings | None = None,
    ) -> None:
        self.catalogue = catalogue
        self.node_info = catalogue.require("", "v1", NODES)
        self.lease_info = catalogue.require("coordination.k8s.io", "v1", LEASES)
        super().__init__(registry, {NODES: self.node_info, LEASES: self.lease_info})
        self.simulation = simulation
        self.timings = timings or simulation.node_timings
        self.kubelets: dict[str, _Kubelet] = {}

    def reset(self) -> None:
        self.kubelets = {}

    def enqueue(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        obj = new if new is not None else old
        assert obj is not None
        meta = obj["metadata"]
        if plural == NODES:
            self.queue.add(meta["name"])
        elif meta.get("namespace") == LEASE_NAMESPACE and new is None:
            self.queue.add(meta["name"])  # a Lease that went is made again

    async def started(self) -> None:
        for index in range(self.simulation.nodes):
            name = nodestatus.node_name(index)
            try:
                await self._register(name)
            except APIError as exc:
                log.warning("simulated node %s not registered: %s", name, exc.message)

    async def _register(self, name: str) -> None:
        try:
            created = await self.registry.create(
                self.node_info, None, nodestatus.registered_node(name), field_manager=MANAGER
            )
        except APIError as exc:
            if exc.code != 409:
                raise
        else:
            self.informer.put(NODES, created)
            return
        existing = await self.registry.get(self.node_info, None, name)
        if nodestatus.reconcile_registered(clone(existing)):

            def reconcile(node: Obj) -> None:
                nodestatus.reconcile_registered(node)

            updated = await self.registry.mutate(
                self.node_info, None, name, reconcile, field_manager=MANAGER
            )
            self.informer.put(NODES, updated)

    # -- one node ---------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        node = self.informer.get(NODES, "", key)
        if node is None or not simulated(node) or node["metadata"].get("deletionTimestamp"):
            self.kubelets.pop(key, None)
            return
        kubelet = self.kubelets.get(key)
        uid = str(node["metadata"].get("uid") or "")
        if kubelet is None or kubelet.uid != uid:
            kubelet = self.kubelets[key] = _Kubelet(
                uid, EventRecorder(self.registry, self.catalogue, MANAGER, host=key)
            )
            kubelet.address = self._address(node)
            await self._event(kubelet, key, "Starting", "Starting kubelet.")
            await self._event(
                kubelet,
                key,
                "NodeAllocatableEnforced",
                "Updated Node Allocatable limit across pods",
            )
        if nodestatus.heartbeat_stopped(node):
            kubelet.reported = kubelet.renewed = None
            return
        clock = time.monotonic()
        if kubelet.renewed is None or clock - kubelet.renewed >= self.timings.lease_renew * 0.95:
            await self._renew_lease(node)
            kubelet.renewed = clock
        await self._report_status(node, kubelet, clock)
        unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
        if unschedulable != kubelet.unschedulable:
            kubelet.unschedulable = unschedulable
            reason = "NodeNotSchedulable" if unschedulable else "NodeSchedulable"
            await self._status_event(kubelet, key, reason)
        due = min(
            self.timings.lease_renew - (time.monotonic() - kubelet.renewed),
            self.timings.status_update,
        )
        self.queue.add_after(key, max(due, 0.01))

    def _address(self, node: Obj) -> str:
        """The node's InternalIP: the one it has, a registered node's by its number, else the
        lowest free one after those."""
        held = nodestatus.internal_ip(node)
        if held:
            return held
        name = node["metadata"]["name"]
        for index in range(self.simulation.nodes):
            if nodestatus.node_name(index) == name:
                return f"{nodestatus.ADDRESS_PREFIX}{nodestatus.FIRST_ADDRESS + index}"
        used = {k.address for k in self.kubelets.values()}
        used.update(filter(None, map(nodestatus.internal_ip, self.informer.all(NODES))))
        number = nodestatus.FIRST_ADDRESS + self.simulation.nodes
        while f"{nodestatus.ADDRESS_PREFIX}{number}" in used:
            number += 1
        return f"{nodestatus.ADDRESS_PREFIX}{number}"

    async def _report_status(self, node: Obj, kubelet: _Kubelet, clock: float) -> None:
        """syncNodeStatus: write the status when it changed, or when the report is due."""
        probe = clone(node)
        nodestatus.set_status(probe, self.simulation.capacity, kubelet.address, now())
        due = kubelet.reported is None or clock - kubelet.reported >= self.timings.status_report
        if not due and not nodestatus.changed(node, probe):
            return
        uid = kubelet.uid
        recorded: list[str] = []

        def report(current: Obj) -> None:
            if str(current["metadata"].get("uid") or "") != uid:
                raise errors.not_found("nodes", "", node["metadata"]["name"])
            recorded[:] = nodestatus.set_status(
                current, self.simulation.capacity, kubelet.address, now()
            )

        name = node["metadata"]["name"]
        try:
            await self.registry.mutate(
                self.node_info, None, name, report, subresource="status", field_manager=MANAGER
            )
        except APIError as exc:
            if exc.code == 404:
                return
            raise
        kubelet.reported = clock
        for reason in recorded:
            await self._status_event(kubelet, name, reason)

    async def _renew_lease(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}
        held = self.informer.get(LEASES, LEASE_NAMESPACE, name)
        if held is None:
            body: Obj = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": LEASE_NAMESPACE,
                             "ownerReferences": [owner]},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                         "renewTime": microtime()},
            }  # fmt: skip
            try:
                created = await self.registry.create(
                    self.lease_info, LEASE_NAMESPACE, body, field_manager=MANAGER
                )
            except APIError as exc:
                if exc.code != 409:
                    raise
                held = await self.registry.get(self.lease_info, LEASE_NAMESPACE, name)
            else:
                self.informer.put(LEASES, created)
                return None
        for attempt in range(2):
            body = clone(held)
            spec: Obj = body.setdefault("spec", {})
            spec.update(
                holderIdentity=name,
                leaseDurationSeconds=LEASE_DURATION_SECONDS,
                renewTime=microtime(),
            )
            body["metadata"]["ownerReferences"] = [owner]
            try:
                renewed, _ = await self.registry.update(
                    self.lease_info, LEASE_NAMESPACE, name, body, field_manager=MANAGER
                )
            except APIError as exc:
                if exc.code not in (409, 404) or attempt:
                    raise
                if exc.code == 404:
                    self.informer.remove(LEASES, LEASE_NAMESPACE, name)
                    return await self._renew_lease(node)
                held = await self.registry.get(self.lease_info, LEASE_NAMESPACE, name)
            else:
                self.informer.put(LEASES, renewed)
                return None
        return None

    async def _event(self, kubelet: _Kubelet, name: str, reason: str, message: str) -> None:
        ref = {"kind": "Node", "metadata": {"name": name, "uid": name}}
        await kubelet.recorder.record(ref, NORMAL, reason, message)

    async def _status_event(self, kubelet: _Kubelet, name: str, reason: str) -> None:
        await self._event(kubelet, name, reason, f"Node {name} status is now: {reason}")
