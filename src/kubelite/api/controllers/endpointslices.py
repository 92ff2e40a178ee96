"""The EndpointSlice controller (kube-controller-manager's ``endpointslice-controller``:
pkg/controller/endpointslice/endpointslice_controller.go, and the reconciler of
staging/src/k8s.io/endpointslice/reconciler.go and utils.go).

For each Service with a selector that is not ExternalName it keeps the EndpointSlices labelled
``kubernetes.io/service-name: <svc>`` and ``endpointslice.kubernetes.io/managed-by:
endpointslice-controller.k8s.io`` in step with the pods the selector matches in its namespace:

- a pod is an endpoint when it has an IP and is not Succeeded or Failed (terminating ones stay,
  with ``terminating: true``); ``ready`` = Ready and not terminating (always with
  ``publishNotReadyAddresses``), ``serving`` = Ready; ``hostname`` when the pod's subdomain is
  the service; ``nodeName``; ``zone`` from the node's ``topology.kubernetes.io/zone``; a pod on a
  node that does not exist is left out (and the service retried) unless
  ``publishNotReadyAddresses``;
- ``ports`` are the service's ports with targetPort resolved per pod (a named one by name and
  protocol among the containers' ports; left out when not found): pods that resolve differently
  go to different slices; at most ``max_endpoints_per_slice`` (100) endpoints a slice; slices no
  longer needed are deleted or reused, and a service without endpoints keeps one empty slice;
- a new slice is ``generateName: <svc>-`` with the service's labels (and
  ``service.kubernetes.io/headless: ""`` for a headless one), an ownerReference to the Service
  (controller, blockOwnerDeletion), ``addressType`` per IP family, and the
  ``endpoints.kubernetes.io/last-change-trigger-time`` annotation.

Writes are plain create, conflict-checked update (the informer's resourceVersion) and delete
through the registry as ``kube-controller-manager`` (its user agent's prefix); a 409 is retried
after the back-off (kube's 1 s doubling to 1000 s). Topology hints and trafficDistribution are
not computed.
"""

from __future__ import annotations

import json
from typing import Any

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.events import WARNING, EventRecorder
from kubelite.api.controllers.serviceaccounts import namespace_terminating
from kubelite.api.controllers.servicepods import (
    HEADLESS_LABEL,
    TRIGGER_TIME_ANNOTATION,
    Obj,
    ServicePodController,
    find_port,
    is_ipv6,
    managed,
    pod_ips,
    pod_ready,
    service_ip_set,
    should_be_in_endpoints,
    should_set_hostname,
    terminating,
)
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry

#: managedFields name the client's user agent up to its first "/": every controller of
#: kube-controller-manager writes as ``kube-controller-manager``
MANAGER = "kube-controller-manager"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
ZONE_LABEL = "topology.kubernetes.io/zone"
RESERVED_LABELS = frozenset({SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL})
MAX_ENDPOINTS_PER_SLICE = 100
#: endpointSliceChangeMinSyncDelay: a change to a managed slice syncs its service after this
SLICE_CHANGE_DELAY = 1.0


class SyncFailed(Exception):
    """What went wrong syncing a service (utilerrors' aggregate of kube's texts): a pod's node
    not held (the slices are written without it), or a write refused."""


def aggregate(errs: list[str]) -> str:
    """``utilerrors.NewAggregate(...).Error()``: one text as is, several (each once) in
    brackets."""
    unique = list(dict.fromkeys(errs))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def _ports_key(ports: list[Obj]) -> str:
    return json.dumps(sorted(json.dumps(p, sort_keys=True) for p in ports))


def _endpoint_key(endpoint: Obj) -> tuple[Any, ...]:
    """``hashEndpoint``: the addresses, hostname and target pod identify an endpoint."""
    ref = endpoint.get("targetRef") or {}
    return (
        tuple(sorted(endpoint.get("addresses") or [])),
        endpoint.get("hostname") or "",
        ref.get("namespace") or "",
        ref.get("name") or "",
    )


def _same_beyond_key(a: Obj, b: Obj) -> bool:
    """``EndpointsEqualBeyondHash``: nodeName, zone, conditions and targetRef (its
    resourceVersion aside)."""

    def ref(e: Obj) -> Obj:
        return {k: v for k, v in (e.get("targetRef") or {}).items() if k != "resourceVersion"}

    return all(a.get(f) == b.get(f) for f in ("nodeName", "zone", "conditions")) and ref(a) == ref(
        b
    )


def address_types(service: Obj) -> list[str]:
    """``getAddressTypesForService``: one per ``spec.ipFamilies``; else by the ClusterIP's
    family; a headless service without families gets both."""
    spec = service.get("spec") or {}
    families = {"IPv4": "IPv4", "IPv6": "IPv6"}
    found = [families[f] for f in spec.get("ipFamilies") or [] if f in families]
    if found:
        return found
    if service_ip_set(service):
        return ["IPv6" if is_ipv6(spec["clusterIP"]) else "IPv4"]
    return ["IPv4", "IPv6"]


def slice_labels(service: Obj, current: dict[str, str]) -> tuple[dict[str, str], bool]:
    """``setEndpointSliceLabels``: the service's labels but the reserved ones, the headless
    label, service name and managed-by; and whether the non-reserved labels differed."""
    mine = {k: v for k, v in current.items() if k not in RESERVED_LABELS}
    labels = {
        k: v
        for k, v in (service["metadata"].get("labels") or {}).items()
        if k not in RESERVED_LABELS
    }
    changed = mine != labels
    if not service_ip_set(service):
        labels[HEADLESS_LABEL] = ""
    labels[SERVICE_NAME_LABEL] = service["metadata"]["name"]
    labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
    return labels, changed


class EndpointSliceController(ServicePodController):
    name = "endpointslice-controller"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
        workers: int = 2,
    ) -> None:
        super().__init__(
            registry,
            catalogue,
            catalogue.require("discovery.k8s.io", "v1", "endpointslices"),
            workers=workers,
            retry_min_seconds=1.0,
            retry_max_seconds=1000.0,
            follow_nodes=True,
        )
        self.max_endpoints = max_endpoints_per_slice
        self.events = EventRecorder(registry, catalogue, "endpoint-slice-controller")

    def after_listing(self) -> None:
        """Nothing more: every Service is queued once listed."""

    def output_changed(self, obj: Obj, *, gone: bool = False) -> None:
        labels = obj["metadata"].get("labels") or {}
        service = labels.get(SERVICE_NAME_LABEL)
        if service and labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME:
            key = f"{obj['metadata'].get('namespace', '')}/{service}"
            self.queue.add_after(key, SLICE_CHANGE_DELAY)

    def _slices_of(self, namespace: str, name: str) -> list[Obj]:
        return [
            s
            for _, s in sorted(self.outputs_in(namespace).items())
            if (s["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL) == name
            and (s["metadata"].get("labels") or {}).get(MANAGED_BY_LABEL) == CONTROLLER_NAME
            and not s["metadata"].get("deletionTimestamp")
        ]

    async def sync(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        service = self.service(key)
        if service is None:
            self.triggers.forget(key)
            return  # the garbage collector deletes the slices it owned
        if not managed(service):
            return
        pods = self.pods_of(service)
        slices = self._slices_of(namespace, name)
        trigger = self.triggers.compute(key, service, pods)
        supported = address_types(service)
        errs: list[str] = []
        for address_type in supported:
            existing = [s for s in slices if s.get("addressType") == address_type]
            await self._reconcile(service, pods, existing, address_type, trigger, errs)
        for old in slices:
            if old.get("addressType") not in supported:
                try:
                    await self._delete(old)
                except APIError as exc:
                    errs.append(
                        f"error deleting {old['metadata']['name']} EndpointSlice for Service "
                        f"{key}: {exc.message}"
                    )
        if errs:
            text = aggregate(errs)
            await self.events.record(
                service, WARNING, "FailedToUpdateEndpointSlices",
                f"Error updating Endpoint Slices for Service {key}: {text}",
            )  # fmt: skip
            raise SyncFailed(text)

    def _endpoint(self, pod: Obj, service: Obj, address_type: str, node: Obj | None) -> Obj:
        """``podToEndpoint``."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        serving = pod_ready(pod)
        ending = terminating(pod)
        publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
        endpoint: Obj = {
            "addresses": [ip for ip in pod_ips(pod) if is_ipv6(ip) == (address_type == "IPv6")],
            "conditions": {
                "ready": publish or (serving and not ending),
                "serving": serving,
                "terminating": ending,
            },
        }
        if should_set_hostname(pod, service):
            endpoint["hostname"] = spec["hostname"]
        endpoint["targetRef"] = {
            "kind": "Pod",
            "namespace": meta.get("namespace", ""),
            "name": meta["name"],
            "uid": meta.get("uid", ""),
        }
        if spec.get("nodeName"):
            endpoint["nodeName"] = spec["nodeName"]
        zone = ((node or {}).get("metadata", {}).get("labels") or {}).get(ZONE_LABEL)
        if zone:
            endpoint["zone"] = zone
        return endpoint

    def _ports(self, service: Obj, pod: Obj) -> list[Obj]:
        """``getEndpointPorts``."""
        spec = service.get("spec") or {}
        found: list[Obj] = []
        for service_port in spec.get("ports") or []:
            number = find_port(pod, service_port)
            if number is None:
                continue
            port: Obj = {
                "name": service_port.get("name") or "",
                "protocol": service_port.get("protocol") or "TCP",
                "port": number,
            }
            if service_port.get("appProtocol") is not None:
                port["appProtocol"] = service_port["appProtocol"]
            found.append(port)
        return found

    def _new_slice(self, service: Obj, ports: list[Obj], address_type: str) -> Obj:
        """``newEndpointSlice``."""
        meta = service["metadata"]
        labels, _ = slice_labels(service, {})
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "generateName": f"{meta['name']}-",
                "namespace": meta.get("namespace", ""),
                "labels": labels,
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "name": meta["name"],
                        "uid": meta.get("uid", ""),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "addressType": address_type,
            "endpoints": [],
            "ports": ports,
        }

    async def _reconcile(
        self,
        service: Obj,
        pods: list[Obj],
        existing: list[Obj],
        address_type: str,
        trigger: str | None,
        errs: list[str],
    ) -> None:
        """``reconcileByAddressType``, ``reconcileByPortMapping`` and ``finalize``."""
        uid = service["metadata"].get("uid")
        by_ports: dict[str, list[Obj]] = {}
        to_delete: list[Obj] = []
        for s in existing:
            owned = any(
                o.get("uid") == uid and o.get("kind") == "Service" and o.get("apiVersion") == "v1"
                for o in s["metadata"].get("ownerReferences") or []
            )
            if owned:
                by_ports.setdefault(_ports_key(s.get("ports") or []), []).append(s)
            else:
                to_delete.append(s)
        publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
        desired: dict[str, dict[tuple[Any, ...], Obj]] = {}
        desired_ports: dict[str, list[Obj]] = {}
        for pod in pods:
            if not should_be_in_endpoints(pod, True):
                continue
            ports = self._ports(service, pod)
            pkey = _ports_key(ports)
            desired.setdefault(pkey, {})
            desired_ports.setdefault(pkey, ports)
            node_name = (pod.get("spec") or {}).get("nodeName") or ""
            node = self.listers.nodes.get(node_name)
            if node is None and not publish:
                errs.append(
                    f"skipping Pod {pod['metadata']['name']} for Service "
                    f"{pod['metadata'].get('namespace', '')}/{service['metadata']['name']}: "
                    f"Node {node_name} Not Found"
                )
                continue
            endpoint = self._endpoint(pod, service, address_type, node)
            if endpoint["addresses"]:
                desired[pkey][_endpoint_key(endpoint)] = endpoint
        to_create: list[Obj] = []
        to_update: list[Obj] = []
        for pkey, wanted in desired.items():
            create, update, delete = self._by_ports(
                service, by_ports.get(pkey, []), wanted, desired_ports[pkey], address_type
            )
            to_create += create
            to_update += update
            to_delete += delete
        for pkey, olds in by_ports.items():
            if pkey not in desired:
                to_delete += olds
        if len(existing) == len(to_delete) and not to_create:
            placeholder = self._new_slice(service, [], address_type)
            if len(to_delete) == 1 and self._is_placeholder(to_delete[0], placeholder):
                to_delete = []
            else:
                to_create.append(placeholder)
        try:
            await self._finalize(service, to_create, to_update, to_delete, trigger)
        except SyncFailed as exc:
            errs.append(str(exc))

    @staticmethod
    def _is_placeholder(old: Obj, placeholder: Obj) -> bool:
        """``placeholderSliceCompare``: no endpoints or ports, same labels and owners."""
        meta = old["metadata"]
        return (
            not old.get("endpoints")
            and not old.get("ports")
            and (meta.get("labels") or {}) == placeholder["metadata"]["labels"]
            and (meta.get("ownerReferences") or []) == placeholder["metadata"]["ownerReferences"]
        )

    def _by_ports(
        self,
        service: Obj,
        existing: list[Obj],
        wanted: dict[tuple[Any, ...], Obj],
        ports: list[Obj],
        address_type: str,
    ) -> tuple[list[Obj], list[Obj], list[Obj]]:
        """``reconcileByPortMapping``: keep and update what is still wanted, fill the slices
        being updated (fullest first), then an unchanged one that fits, then new slices."""
        wanted = dict(wanted)
        updated: dict[str, Obj] = {}
        unchanged: dict[str, Obj] = {}
        deleted: list[Obj] = []
        for old in existing:
            kept: list[Obj] = []
            changed = False
            for endpoint in old.get("endpoints") or []:
                got = wanted.pop(_endpoint_key(endpoint), None)
                if got is not None:
                    kept.append(got)
                    changed = changed or not _same_beyond_key(got, endpoint)
            labels, labels_changed = slice_labels(service, old["metadata"].get("labels") or {})
            name = old["metadata"]["name"]
            if changed or len(kept) != len(old.get("endpoints") or []):
                if not kept:
                    deleted.append(old)
                    continue
                copy = clone(old)
                copy["endpoints"] = kept
                copy["metadata"]["labels"] = labels
                updated[name] = copy
            elif labels_changed:
                copy = clone(old)
                copy["metadata"]["labels"] = labels
                updated[name] = copy
            else:
                unchanged[name] = old
        pending = list(wanted.values())
        if pending and updated:
            for s in sorted(updated.values(), key=lambda s: -len(s["endpoints"])):
                while pending and len(s["endpoints"]) < self.max_endpoints:
                    s["endpoints"].append(pending.pop(0))
        created: list[Obj] = []
        while pending:
            target = None
            if len(pending) < self.max_endpoints and unchanged:
                target = self._to_fill(list(unchanged.values()), len(pending))
            if target is None:
                target = self._new_slice(service, ports, address_type)
            else:
                target = clone(target)
                target["endpoints"] = list(target.get("endpoints") or [])
            while pending and len(target["endpoints"]) < self.max_endpoints:
                target["endpoints"].append(pending.pop(0))
            name = target["metadata"].get("name")
            if name:
                updated[name] = target
                unchanged.pop(name, None)
            else:
                created.append(target)
        return created, list(updated.values()), deleted

    def _to_fill(self, slices: list[Obj], count: int) -> Obj | None:
        """``getSliceToFill``: the slice closest to full once ``count`` are added."""
        closest, best = self.max_endpoints, None
        for s in slices:
            diff = self.max_endpoints - (count + len(s.get("endpoints") or []))
            if 0 <= diff < closest:
                closest, best = diff, s
                if diff == 0:
                    break
        return best

    async def _finalize(
        self,
        service: Obj,
        to_create: list[Obj],
        to_update: list[Obj],
        to_delete: list[Obj],
        trigger: str | None,
    ) -> None:
        """``finalize``: creates become updates of slices that would be deleted; no creates
        while the service is being deleted."""
        uid = service["metadata"].get("uid")
        i = 0
        while i < len(to_delete) and to_create:
            old = to_delete[i]
            new = to_create[-1]
            owned = any(o.get("uid") == uid for o in old["metadata"].get("ownerReferences") or [])
            if old.get("addressType") == new.get("addressType") and owned:
                to_create.pop()
                body = clone(old)
                body["metadata"]["labels"] = new["metadata"]["labels"]
                body["endpoints"] = new["endpoints"]
                body["ports"] = new["ports"]
                to_update.append(body)
                to_delete.pop(i)
            else:
                i += 1
        namespace = service["metadata"].get("namespace", "")
        of = f"Service {namespace}/{service['metadata']['name']}"
        if not service["metadata"].get("deletionTimestamp"):
            for body in to_create:
                _annotate(body, trigger)
                try:
                    made = await self.registry.create(
                        self.output, namespace, body, field_manager=MANAGER
                    )
                except APIError as exc:
                    if namespace_terminating(exc):
                        return
                    raise SyncFailed(f"failed to create EndpointSlice for {of}: {exc.message}")
                await self.written(made, namespace, made["metadata"]["name"])
        for body in to_update:
            _annotate(body, trigger)
            name = body["metadata"]["name"]
            try:
                made, _ = await self.registry.update(
                    self.output, namespace, name, body, field_manager=MANAGER
                )
            except APIError as exc:
                raise SyncFailed(f"failed to update {name} EndpointSlice for {of}: {exc.message}")
            await self.written(made, namespace, name)
        for old in to_delete:
            try:
                await self._delete(old)
            except APIError as exc:
                name = old["metadata"]["name"]
                raise SyncFailed(f"failed to delete {name} EndpointSlice for {of}: {exc.message}")

    async def _delete(self, old: Obj) -> None:
        meta = old["metadata"]
        namespace = meta.get("namespace", "")
        try:
            await self.registry.delete(self.output, namespace, meta["name"])
        except APIError as exc:
            if exc.code != 404:
                raise
        await self.written(None, namespace, meta["name"])


def _annotate(body: Obj, trigger: str | None) -> None:
    """``addTriggerTimeAnnotation`` (kept in kube's metadata order, before ownerReferences);
    empty ``endpoints`` and ``ports`` written as null, as kube serves them."""
    for field in ("endpoints", "ports"):  # stored empty, served null (no omitempty)
        if not body.get(field):
            body[field] = None
    annotations = dict(body["metadata"].get("annotations") or {})
    if trigger:
        annotations[TRIGGER_TIME_ANNOTATION] = trigger
    else:
        annotations.pop(TRIGGER_TIME_ANNOTATION, None)
    meta = body["metadata"]
    if not annotations:
        meta.pop("annotations", None)
    elif "annotations" in meta or "uid" in meta:
        meta["annotations"] = annotations
    else:  # a new slice: before its ownerReferences, as kube's ObjectMeta orders them
        owners = meta.pop("ownerReferences", None)
        meta["annotations"] = annotations
        if owners is not None:
            meta["ownerReferences"] = owners
