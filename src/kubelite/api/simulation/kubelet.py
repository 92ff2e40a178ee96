"""The simulated kubelet: one controller playing the kubelet of every simulated Node (a Node
annotated ``kubelite.dev/simulated: "true"``), for the pods bound to them (``spec.nodeName``).

It follows Nodes and pods (an informer: :class:`~kubelite.api.machinery.following.StoreFollower`)
and syncs one pod at a time from a work queue (client-go's, :mod:`..controllers.workqueue`),
as the kubelet's pod workers do (pkg/kubelet/pod_workers.go, kubelet.go SyncPod):

- a pod is run once its Node has a ``spec.podCIDR`` and an InternalIP in ``status.addresses``
  (its hostIP); until then it waits (the Node's next change queues its pods again). A pod whose
  Node is gone or not simulated is left alone;
- its simulated runtime (:mod:`.runtime`, with the pod's annotation knobs, :mod:`.knobs`) moves
  on in stages, and after each stage the status (:mod:`.podstatus`) is written through
  ``pods/status`` with the resourceVersion read (a 409 re-reads the pod and computes again),
  under the field manager ``kubelet``; the kubelet's events are recorded in the legacy style
  with ``source.host`` the node;
- the next change is a timer (the queue's ``add_after``), never a poll;
- pod IPs come from the Node's podCIDR as host-local IPAM gives them: ``.2`` first, in
  sequence, not reused until the range wraps; hostNetwork pods get the hostIP;
- a pod with a deletionTimestamp is stopped (Killing events; ``stop-seconds``, up to the grace
  period, then exit 137), its terminal phase written, then deleted with ``gracePeriodSeconds:
  0`` and a uid precondition, as the status manager does (pkg/kubelet/status/status_manager.go).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import time
from typing import Any

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.events import EventRecorder
from kubelite.api.controllers.workqueue import WorkQueue
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import DeleteOptions
from kubelite.api.simulation.config import SIMULATED_ANNOTATION, Simulation
from kubelite.api.simulation.knobs import read_knobs
from kubelite.api.simulation.podstatus import TERMINAL, pod_status
from kubelite.api.simulation.runtime import PodRuntime

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MANAGER = "kubelet"
NODES, PODS = "nodes", "pods"
CLOSE_GRACE_SECONDS = 5.0


def simulated(node: Obj | None) -> bool:
    annotations = ((node or {}).get("metadata") or {}).get("annotations") or {}
    return node is not None and annotations.get(SIMULATED_ANNOTATION) == "true"


def internal_ip(node: Obj) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP" and address.get("address"):
            return str(address["address"])
    return ""


def pod_key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class NodeIPAM:
    """host-local IPAM over one podCIDR: the next free address after the last one given."""

    def __init__(self, cidr: str) -> None:
        self.cidr = cidr
        self.network = ipaddress.ip_network(cidr, strict=False)
        self.size = self.network.num_addresses
        self.last = 1  # .1 is the gateway: .2 comes first
        self.used: set[str] = set()

    def allocate(self) -> str:
        for _ in range(self.size):
            self.last += 1
            if self.last >= self.size - 1:  # the broadcast address: wrap to .2
                self.last = 2
            ip = str(self.network.network_address + self.last)
            if ip not in self.used:
                self.used.add(ip)
                return ip
        raise RuntimeError(f"no free address left in {self.cidr}")

    def reserve(self, ip: str) -> None:
        self.used.add(ip)

    def release(self, ip: str) -> None:
        self.used.discard(ip)


class _Listers(StoreFollower):
    def __init__(self, owner: SimulatedKubelet) -> None:
        super().__init__(
            owner.registry, {NODES: owner.nodes_info, PODS: owner.pods_info}, name=owner.name
        )
        self.owner = owner
        self.nodes: dict[str, Obj] = {}
        self.pods: dict[str, Obj] = {}

    def replace(self, plural: str, objects: list[Obj]) -> None:
        if plural == NODES:
            self.nodes = {o["metadata"]["name"]: o for o in objects}
            for key in self.pods:
                self.owner.queue.add(key)
        else:
            self.pods = {pod_key(o): o for o in objects}
            for key in list(self.owner.runtimes):
                if key not in self.pods:
                    self.owner.queue.add(key)
            for key, pod in self.pods.items():
                if (pod.get("spec") or {}).get("nodeName"):
                    self.owner.queue.add(key)

    def put(self, plural: str, obj: Obj) -> None:
        if plural == NODES:
            name = obj["metadata"]["name"]
            self.nodes[name] = obj
            for key, pod in self.pods.items():
                if (pod.get("spec") or {}).get("nodeName") == name:
                    self.owner.queue.add(key)
            return
        key = pod_key(obj)
        self.pods[key] = obj
        if (obj.get("spec") or {}).get("nodeName"):
            self.owner.queue.add(key)

    def remove(self, plural: str, namespace: str, name: str) -> None:
        if plural == NODES:
            self.nodes.pop(name, None)
            return
        key = f"{namespace}/{name}"
        self.pods.pop(key, None)
        self.owner.queue.add(key)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        if plural == NODES:
            return name in self.nodes
        return f"{namespace}/{name}" in self.pods


class SimulatedKubelet:
    """The kubelet of every simulated Node (``start()``/``close()`` as the controller manager
    runs them; it may start again after a close)."""

    name = "kubelet"

    def __init__(
        self, registry: Registry, catalogue: Catalogue, simulation: Simulation, workers: int = 4
    ) -> None:
        self.registry = registry
        self.catalogue = catalogue
        self.scale = simulation.backoff_scale
        self.nodes_info = catalogue.require("", "v1", "nodes")
        self.pods_info = catalogue.require("", "v1", "pods")
        self.workers = workers
        self.queue: WorkQueue[str] = WorkQueue()
        self.listers = _Listers(self)
        self.runtimes: dict[str, PodRuntime] = {}
        self.latest: dict[str, Obj] = {}
        self.ipam: dict[str, NodeIPAM] = {}
        self.recorders: dict[str, EventRecorder] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def queue_depth(self) -> int:
        return len(self.queue)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._tasks:
            return
        if self.queue.shutting_down:
            self.queue = WorkQueue()
            self.listers = _Listers(self)
            self.runtimes, self.latest, self.ipam = {}, {}, {}
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(), name="kubelite-kubelet")]

    async def close(self) -> None:
        tasks, self._tasks = self._tasks, []
        self.queue.shut_down()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, CLOSE_GRACE_SECONDS)
        await self.listers.close()

    async def _run(self) -> None:
        while not self.queue.shutting_down:
            try:
                await self.listers.start()
                break
            except Exception:
                log.warning("kubelet: listing failed; trying again", exc_info=True)
                await asyncio.sleep(1.0)
        await asyncio.gather(*(self._work() for _ in range(self.workers)))

    async def _work(self) -> None:
        while (key := await self.queue.get()) is not None:
            try:
                await self.sync(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("kubelet: syncing pod %s failed (%s); retrying", key, exc)
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)

    # -- one pod ---------------------------------------------------------------------------------

    def _current(self, key: str) -> Obj | None:
        """The newest version of the pod held: the informer's or the kubelet's own last write."""
        held, written = self.listers.pods.get(key), self.latest.get(key)
        if held is None:
            return None
        if written is None or written["metadata"].get("uid") != held["metadata"].get("uid"):
            return held
        version = int(held["metadata"].get("resourceVersion") or 0)
        return written if int(written["metadata"].get("resourceVersion") or 0) > version else held

    def _forget(self, key: str) -> None:
        rt = self.runtimes.pop(key, None)
        self.latest.pop(key, None)
        if rt is not None and rt.ip and rt.node in self.ipam:
            self.ipam[rt.node].release(rt.ip)

    async def sync(self, key: str) -> None:
        pod = self._current(key)
        if pod is None:
            self._forget(key)
            return
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        node = self.listers.nodes.get(node_name)
        if not node_name or not simulated(node):
            return
        assert node is not None
        rt = self.runtimes.get(key)
        if rt is not None and rt.uid != pod["metadata"].get("uid"):
            self._forget(key)
            rt = None
        if rt is None:
            meta = pod["metadata"]
            if (pod.get("status") or {}).get("phase") in TERMINAL:
                # finished before this kubelet: nothing to run; being deleted: finish that
                if meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds"):
                    await self._delete(key, pod)
                return
            rt = self._admit(key, pod, node)
            if rt is None:
                return
        host_ip = internal_ip(node) or rt.host_ip
        meta = pod["metadata"]
        if meta.get("deletionTimestamp") and not rt.terminating:
            rt.terminate(time.time(), float(meta.get("deletionGracePeriodSeconds") or 0))
        while True:
            now = time.time()
            if rt.sandbox_ready and not rt.ip and not rt.host_network:
                rt.ip = self.ipam[node_name].allocate()
            await self._record(node_name, pod, rt)
            written = await self._write(key, pod, rt, host_ip, now)
            if written is None:
                self._forget(key)
                return
            pod = written
            if pod["status"].get("phase") in TERMINAL and not rt.terminating:
                rt.terminal = True
            if not rt.step(time.time()):
                break
        if rt.stopped or (rt.terminal and meta.get("deletionTimestamp")):
            await self._delete(key, pod)
            return
        due = rt.next_due(now)  # as of the status written: a change since is due at once
        log.debug("kubelet: pod %s synced; next change %s", key, due and due - time.time())
        if due is not None:
            self.queue.add_after(key, max(due - time.time(), 0.0))

    def _admit(self, key: str, pod: Obj, node: Obj) -> PodRuntime | None:
        """A runtime for a pod seen for the first time, once its Node can run it."""
        cidr, host_ip = str((node.get("spec") or {}).get("podCIDR") or ""), internal_ip(node)
        if not cidr or not host_ip:
            return None  # the Node's next change queues its pods again
        status = pod.get("status") or {}
        name = node["metadata"]["name"]
        ipam = self.ipam.get(name)
        if ipam is None or ipam.cidr != cidr:
            ipam = self.ipam[name] = NodeIPAM(cidr)
            for other in self.listers.pods.values():
                if (other.get("spec") or {}).get("nodeName") == name:
                    ip = (other.get("status") or {}).get("podIP")
                    if ip and not (other.get("spec") or {}).get("hostNetwork"):
                        ipam.reserve(str(ip))
        rt = PodRuntime(pod, read_knobs(pod), time.time(), self.scale)
        rt.node, rt.host_ip = name, host_ip
        if status.get("containerStatuses") or status.get("podIP"):
            rt.adopt(status, time.time())  # a pod a previous kubelet started carries on
            if rt.host_network:
                rt.ip = ""
        self.runtimes[key] = rt
        return rt

    async def _record(self, node: str, pod: Obj, rt: PodRuntime) -> None:
        events, rt.events = rt.events, []
        if not events:
            return
        recorder = self.recorders.get(node)
        if recorder is None:
            recorder = self.recorders[node] = EventRecorder(
                self.registry, self.catalogue, MANAGER, host=node
            )
        for container, type_, reason, message in events:
            await recorder.record(pod, type_, reason, message, field_path=container.field_path)

    async def _write(
        self, key: str, pod: Obj, rt: PodRuntime, host_ip: str, now: float
    ) -> Obj | None:
        """Write the status for ``rt`` at ``now`` if it changed (conflict-checked; a 409 reads
        the pod again and computes again). The pod as stored; None once it is gone."""
        namespace, name = pod["metadata"].get("namespace"), pod["metadata"]["name"]
        for _ in range(10):
            status = pod_status(pod, rt, host_ip, now)
            if status == pod.get("status"):
                return pod
            body = clone(pod)
            body["status"] = status
            try:
                written, _ = await self.registry.update(
                    self.pods_info, namespace, name, body, subresource="status",
                    field_manager=MANAGER,
                )  # fmt: skip
            except APIError as exc:
                if exc.code == 404:
                    return None
                if exc.code != 409:
                    raise
                try:
                    pod = await self.registry.get(self.pods_info, namespace, name)
                except APIError as again:
                    if again.code == 404:
                        return None
                    raise
                if pod["metadata"].get("uid") != rt.uid:
                    return None
                continue
            self.latest[key] = written
            return written
        raise RuntimeError(f"the status of pod {key} kept conflicting")

    async def _delete(self, key: str, pod: Obj) -> None:
        """The status manager's final DELETE: grace period 0, on this pod's uid only."""
        namespace, name = pod["metadata"].get("namespace"), pod["metadata"]["name"]
        options = DeleteOptions(
            precondition_uid=str(pod["metadata"].get("uid") or ""), grace_period_seconds=0
        )
        try:
            await self.registry.delete(self.pods_info, namespace, name, options)
        except APIError as exc:
            if exc.code not in (404, 409):
                raise
        self._forget(key)
