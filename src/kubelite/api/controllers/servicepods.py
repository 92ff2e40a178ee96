"""What the EndpointSlice and Endpoints controllers share: which pods back a Service and how
(kube's ``staging/src/k8s.io/endpointslice/util/controller_utils.go`` and
``trigger_time_tracker.go``, ``pkg/api/v1/pod`` ``FindPort``), and the loop both run
(:class:`ServicePodController`): an informer on Services, Pods, Nodes and the controller's own
output kind (:class:`~kubelite.api.machinery.following.StoreFollower`), a work queue of service
keys (``namespace/name``) and workers.

What it enqueues, as kube's controllers do: a Service that is added, changes or goes; the
Services whose selector matches a pod that is added or goes, or (old and new) one whose labels,
hostname, subdomain, deletion, readiness, IPs or phase changed; and what the subclass asks for
when its own objects change (:meth:`ServicePodController.output_changed`). A sync that raises is
retried with the queue's per-key back-off.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.controllers.workqueue import WorkQueue
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]
SERVICES, PODS, NODES = "services", "pods", "nodes"
CLOSE_GRACE_SECONDS = 5.0
#: v1.EndpointsLastChangeTriggerTime
TRIGGER_TIME_ANNOTATION = "endpoints.kubernetes.io/last-change-trigger-time"
#: v1.IsHeadlessService
HEADLESS_LABEL = "service.kubernetes.io/headless"


# -- pods and services (controller_utils.go) ------------------------------------------------------


def pod_ready(pod: Obj) -> bool:
    """``IsPodReady``: the Ready condition is True."""
    return ready_condition(pod).get("status") == "True"


def ready_condition(pod: Obj) -> Obj:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition
    return {}


def terminating(pod: Obj) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def should_be_in_endpoints(pod: Obj, include_terminating: bool) -> bool:
    """``ShouldPodBeInEndpoints``: not terminal (Succeeded, Failed), has an IP, and (unless
    ``include_terminating``) is not being deleted."""
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not terminating(pod)


def pod_ips(pod: Obj) -> list[str]:
    return [str(p["ip"]) for p in (pod.get("status") or {}).get("podIPs") or [] if p.get("ip")]


def is_ipv6(ip: str) -> bool:
    return ":" in ip


def should_set_hostname(pod: Obj, service: Obj) -> bool:
    """``ShouldSetHostname``: the pod has a hostname and its subdomain is the service."""
    spec = pod.get("spec") or {}
    return (
        bool(spec.get("hostname"))
        and spec.get("subdomain") == service["metadata"]["name"]
        and pod["metadata"].get("namespace") == service["metadata"].get("namespace")
    )


def service_ip_set(service: Obj) -> bool:
    """``IsServiceIPSet``: the ClusterIP is neither ``None`` nor empty."""
    cluster_ip = (service.get("spec") or {}).get("clusterIP") or ""
    return cluster_ip not in ("", "None")


def find_port(pod: Obj, service_port: Obj) -> int | None:
    """``FindPort``: an int targetPort as is; a name looked up among the containers' ports (and
    sidecars', init containers with restartPolicy Always) by name and protocol; None when not
    found."""
    target = service_port.get("targetPort")
    if target is None:
        target = service_port.get("port")
    if isinstance(target, int):
        return target
    protocol = service_port.get("protocol") or "TCP"
    spec = pod.get("spec") or {}
    sidecars = [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for container in [*(spec.get("containers") or []), *sidecars]:
        for port in container.get("ports") or []:
            if port.get("name") == target and (port.get("protocol") or "TCP") == protocol:
                return int(port["containerPort"])
    return None


def selects(service: Obj, pod: Obj) -> bool:
    """The service's selector (a nil one selects nothing) matches the pod's labels."""
    selector = (service.get("spec") or {}).get("selector")
    if selector is None:
        return False
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def managed(service: Obj) -> bool:
    """Whether the controllers manage the service's endpoints: it has a selector and is not
    ExternalName."""
    spec = service.get("spec") or {}
    return spec.get("type") != "ExternalName" and spec.get("selector") is not None


def _relevant(pod: Obj) -> tuple[Any, ...]:
    """What ``podEndpointsChanged`` compares (and the phase, which ends a pod's endpoints)."""
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    return (
        meta.get("labels") or {},
        spec.get("hostname"),
        spec.get("subdomain"),
        meta.get("deletionTimestamp"),
        pod_ready(pod),
        [p.get("ip") for p in status.get("podIPs") or []],
        status.get("podIP"),
        status.get("phase"),
        spec.get("nodeName"),
    )


# -- the trigger time (trigger_time_tracker.go) ---------------------------------------------------


def _parsed(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None


class TriggerTimes:
    """``TriggerTimeTracker``: per service, the pods' Ready transition times and the service's
    creation time seen at the last sync; :meth:`compute` gives the earliest that changed since
    (the service's creation time the first time), as the annotation's text, or None."""

    def __init__(self) -> None:
        self._states: dict[str, tuple[datetime | None, dict[str, datetime]]] = {}

    def compute(self, key: str, service: Obj, pods: list[Obj]) -> str | None:
        known = self._states.get(key)
        last_service, last_pods = known if known is not None else (None, {})
        earliest: datetime | None = None
        times: dict[str, datetime] = {}
        for pod in pods:
            when = _parsed(str(ready_condition(pod).get("lastTransitionTime") or ""))
            if when is None:
                continue
            name = pod["metadata"]["name"]
            times[name] = when
            before = last_pods.get(name)
            if before is None or when > before:
                earliest = when if earliest is None else min(earliest, when)
        created = _parsed(str(service["metadata"].get("creationTimestamp") or ""))
        if created is not None and (last_service is None or created > last_service):
            earliest = created if earliest is None else min(earliest, created)
        self._states[key] = (created, times)
        if known is None:
            earliest = created
        return None if earliest is None else earliest.strftime("%Y-%m-%dT%H:%M:%SZ")

    def forget(self, key: str) -> None:
        self._states.pop(key, None)


# -- the loop ------------------------------------------------------------------------------------


class _Listers(StoreFollower):
    def __init__(self, owner: ServicePodController) -> None:
        super().__init__(owner.registry, owner.followed(), name=owner.name)
        self.owner = owner
        self.services: dict[str, Obj] = {}
        #: pods by namespace, then name
        self.pods: dict[str, dict[str, Obj]] = {}
        self.nodes: dict[str, Obj] = {}
        #: the output kind's objects by namespace, then name
        self.outputs: dict[str, dict[str, Obj]] = {}

    def _table(self, plural: str) -> dict[str, dict[str, Obj]]:
        return self.pods if plural == PODS else self.outputs

    def replace(self, plural: str, objects: list[Obj]) -> None:
        if plural == SERVICES:
            self.services = {key_of(o): o for o in objects}
            for key in self.services:
                self.owner.queue.add(key)
        elif plural == NODES:
            self.nodes = {o["metadata"]["name"]: o for o in objects}
        else:
            table: dict[str, dict[str, Obj]] = {}
            for obj in objects:
                meta = obj["metadata"]
                table.setdefault(meta.get("namespace", ""), {})[meta["name"]] = obj
            if plural == PODS:
                self.pods = table
            else:
                self.outputs = table
                for obj in objects:
                    self.owner.output_changed(obj)

    def put(self, plural: str, obj: Obj) -> None:
        meta = obj["metadata"]
        if plural == SERVICES:
            self.services[key_of(obj)] = obj
            self.owner.queue.add(key_of(obj))
        elif plural == NODES:
            self.nodes[meta["name"]] = obj
        else:
            held = self._table(plural).setdefault(meta.get("namespace", ""), {})
            old = held.get(meta["name"])
            held[meta["name"]] = obj
            if plural == PODS:
                if old is None:
                    self.owner.enqueue_for(obj)
                elif _relevant(old) != _relevant(obj):
                    self.owner.enqueue_for(old, obj)
            else:
                self.owner.output_changed(obj)

    def remove(self, plural: str, namespace: str, name: str) -> None:
        if plural == SERVICES:
            self.services.pop(f"{namespace}/{name}", None)
            self.owner.queue.add(f"{namespace}/{name}")
        elif plural == NODES:
            self.nodes.pop(name, None)
        else:
            old = self._table(plural).get(namespace, {}).pop(name, None)
            if old is None:
                return
            if plural == PODS:
                self.owner.enqueue_for(old)
            else:
                self.owner.output_changed(old, gone=True)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        if plural == SERVICES:
            return f"{namespace}/{name}" in self.services
        if plural == NODES:
            return name in self.nodes
        return name in self._table(plural).get(namespace, {})


def key_of(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


class ServicePodController(ABC):
    """``start()`` runs the controller on the running loop; ``close()`` stops it. A subclass
    names its output kind (:attr:`output`) and writes :meth:`sync`."""

    name = "service pod controller"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        output: ResourceInfo,
        *,
        workers: int = 2,
        retry_min_seconds: float = 0.005,
        retry_max_seconds: float = 1000.0,
        follow_nodes: bool = False,
    ) -> None:
        self.registry = registry
        self.catalogue = catalogue
        self.services_info = catalogue.require("", "v1", "services")
        self.pods_info = catalogue.require("", "v1", "pods")
        self.nodes_info = catalogue.require("", "v1", "nodes") if follow_nodes else None
        self.output = output
        self.workers = workers
        self.retry_min_seconds = retry_min_seconds
        self.retry_max_seconds = retry_max_seconds
        self.triggers = TriggerTimes()
        self.queue = self._new_queue()
        self.listers = _Listers(self)
        self._listed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def followed(self) -> dict[str, ResourceInfo]:
        infos = {SERVICES: self.services_info, PODS: self.pods_info}
        if self.nodes_info is not None:
            infos[NODES] = self.nodes_info
        infos[self.output.plural] = self.output
        return infos

    @abstractmethod
    async def sync(self, key: str) -> None:
        """Bring the service ``key``'s output to what the controller wants; raise to retry."""

    @abstractmethod
    def after_listing(self) -> None:
        """Called once the informer has listed everything, before the workers start."""

    @abstractmethod
    def output_changed(self, obj: Obj, *, gone: bool = False) -> None:
        """One of the output kind's objects changed (or ``gone``)."""

    # -- what the workers read -------------------------------------------------------------------

    def enqueue_for(self, *pods: Obj) -> None:
        """Queue every service (in the pods' namespace) whose selector matches one of ``pods``."""
        for pod in pods:
            namespace = pod["metadata"].get("namespace", "")
            for key, service in self.listers.services.items():
                if key.startswith(namespace + "/") and selects(service, pod):
                    self.queue.add(key)

    def service(self, key: str) -> Obj | None:
        return self.listers.services.get(key)

    def pods_of(self, service: Obj) -> list[Obj]:
        """The pods the service's selector matches, in its namespace, sorted by name."""
        namespace = service["metadata"].get("namespace", "")
        held = self.listers.pods.get(namespace, {})
        return [held[n] for n in sorted(held) if selects(service, held[n])]

    def outputs_in(self, namespace: str) -> dict[str, Obj]:
        return self.listers.outputs.get(namespace, {})

    async def written(self, obj: Obj | None, namespace: str, name: str) -> None:
        """Wait until the informer holds the write that returned ``obj`` (None: a delete), so
        that the next sync does not read the cache from before it."""
        revision = None if obj is None else int(obj["metadata"]["resourceVersion"])
        await self.listers.caught_up(self.output.plural, namespace, name, revision)

    def queue_depth(self) -> int:
        return len(self.queue)

    async def wait_settled(self) -> None:
        await self._listed.wait()
        await self.queue.wait_idle()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        if self._tasks:
            return
        if self.queue.shutting_down:
            self.queue = self._new_queue()
            self.listers = _Listers(self)
            self._listed = asyncio.Event()
            self.triggers = TriggerTimes()
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._run(), name=f"kubelite-{self.name}")]

    async def close(self) -> None:
        tasks, self._tasks = self._tasks, []
        self.queue.shut_down()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, CLOSE_GRACE_SECONDS)
        await self.listers.close()

    def _new_queue(self) -> WorkQueue[str]:
        return WorkQueue(
            retry_min_seconds=self.retry_min_seconds, retry_max_seconds=self.retry_max_seconds
        )

    async def _run(self) -> None:
        while not self.queue.shutting_down:
            try:
                await self.listers.start()
                self.after_listing()
                self._listed.set()
                break
            except Exception:
                log.warning("%s: listing failed; trying again", self.name, exc_info=True)
                await asyncio.sleep(1.0)
        await asyncio.gather(*(self._work() for _ in range(self.workers)))

    async def _work(self) -> None:
        while (key := await self.queue.get()) is not None:
            try:
                await self.sync(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("%s: syncing service %s failed (%s); retrying", self.name, key, exc)
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)
