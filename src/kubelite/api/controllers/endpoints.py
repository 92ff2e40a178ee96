"""The Endpoints controller (kube-controller-manager's ``endpoints-controller``,
pkg/controller/endpoint/endpoints_controller.go; subsets packed as pkg/api/v1/endpoints
``RepackSubsets``). The Endpoints API is deprecated since 1.33; the controller still runs.

For each Service with a selector that is not ExternalName, an Endpoints of the service's name:

- labels: the service's, ``endpoints.kubernetes.io/managed-by: endpoint-controller``, and
  ``service.kubernetes.io/headless: ""`` for a headless service; no ownerReferences;
- annotation ``endpoints.kubernetes.io/last-change-trigger-time`` (the earliest pod Ready
  transition or service creation that changed since the last sync);
- ``subsets``: each pod with an IP, not Succeeded or Failed and (unless
  ``publishNotReadyAddresses``) not terminating, as ``{ip, hostname?, nodeName, targetRef}`` in
  ``addresses`` when Ready (or publishNotReadyAddresses), else ``notReadyAddresses``, for each
  service port its targetPort resolves (a named port not found in the pod leaves that port
  out); addresses grouped by identical port sets, sorted by IP; no ``subsets`` when no pod;
- over 1000 addresses: truncated (ready ones first, proportionally per subset), with annotation
  ``endpoints.kubernetes.io/over-capacity: truncated``, removed when back under.

The Endpoints of a Service that is gone is deleted, and so (once, when the controller starts,
``checkLeftoverEndpoints``) is every Endpoints without a Service but leader-election records.
Writes: create, or a conflict-checked update of the object the informer holds, through the
registry as ``kube-controller-manager`` (its user agent's prefix); unchanged subsets, labels
and capacity annotation write nothing. Subsets and their ports are sorted by
content, where kube sorts them by a hash of it (the order differs; the content does not).
"""

from __future__ import annotations

import math
from typing import Any

from kubelite.api.catalogue import Catalogue
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
)
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry

#: managedFields name the client's user agent up to its first "/": every controller of
#: kube-controller-manager writes as ``kube-controller-manager``
MANAGER = "kube-controller-manager"
MANAGED_BY_LABEL = "endpoints.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpoint-controller"
OVER_CAPACITY_ANNOTATION = "endpoints.kubernetes.io/over-capacity"
TRUNCATED = "truncated"
MAX_CAPACITY = 1000
#: resourcelock.LeaderElectionRecordAnnotationKey
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"


def _address(pod: Obj, service: Obj) -> Obj | None:
    """``podToEndpointAddressForService``: the pod's first IP of the service's family."""
    spec = service.get("spec") or {}
    families = spec.get("ipFamilies") or []
    if families:
        v6 = families[0] == "IPv6"
    elif service_ip_set(service):
        v6 = is_ipv6(spec["clusterIP"])
    else:
        v6 = is_ipv6(str((pod.get("status") or {}).get("podIP") or ""))
    ip = next((ip for ip in pod_ips(pod) if is_ipv6(ip) == v6), None)
    if ip is None:
        return None
    meta = pod["metadata"]
    address: Obj = {"ip": ip}
    if should_set_hostname(pod, service):
        address["hostname"] = pod["spec"]["hostname"]
    address["nodeName"] = (pod.get("spec") or {}).get("nodeName") or ""
    address["targetRef"] = {
        "kind": "Pod",
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
    }
    return address


def _port_key(port: Obj) -> tuple[Any, ...]:
    return (port.get("name") or "", port.get("port") or 0, port.get("protocol") or "")


def _address_key(address: Obj) -> tuple[str, str]:
    return str(address.get("ip") or ""), str((address.get("targetRef") or {}).get("uid") or "")


def repack(entries: list[tuple[Obj, Obj | None, bool]]) -> list[Obj]:
    """``RepackSubsets`` of one-address subsets (address, port or None, ready): addresses
    grouped by the set of ports they serve (ready wins over not ready for one port), sorted by
    IP and uid; ports sorted; subsets sorted by their first address."""
    addresses: dict[tuple[str, str], Obj] = {}
    per_port: dict[tuple[Any, ...], tuple[Obj | None, dict[tuple[str, str], bool]]] = {}
    for address, port, ready in entries:
        key = _address_key(address)
        addresses.setdefault(key, address)
        pkey = _port_key(port) if port is not None else ("", -1, "")
        _, ready_by_address = per_port.setdefault(pkey, (port, {}))
        ready_by_address[key] = ready_by_address.get(key, False) or ready
    groups: dict[tuple[Any, ...], tuple[dict[tuple[str, str], bool], list[Obj]]] = {}
    for _pkey, (port, ready_by_address) in per_port.items():
        akey = tuple(sorted(ready_by_address.items()))
        _, ports = groups.setdefault(akey, (ready_by_address, []))
        if port is not None:
            ports.append(port)
    subsets: list[Obj] = []
    for ready_by_address, ports in groups.values():
        ready_keys = sorted(k for k, r in ready_by_address.items() if r)
        not_ready = sorted(k for k, r in ready_by_address.items() if not r)
        subset: Obj = {}
        if ready_keys:
            subset["addresses"] = [addresses[k] for k in ready_keys]
        if not_ready:
            subset["notReadyAddresses"] = [addresses[k] for k in not_ready]
        if ports:
            subset["ports"] = sorted(ports, key=_port_key)
        subsets.append(subset)

    def first(subset: Obj) -> tuple[Any, ...]:
        listed = subset.get("addresses") or subset.get("notReadyAddresses") or [{}]
        return (_address_key(listed[0]), [_port_key(p) for p in subset.get("ports") or []])

    return sorted(subsets, key=first)


def truncate(subsets: list[Obj]) -> bool:
    """``truncateEndpoints``: at most :data:`MAX_CAPACITY` addresses, ready ones first, each
    subset keeping its proportion (rounded up); True when it truncated."""
    total_ready = sum(len(s.get("addresses") or []) for s in subsets)
    total_not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    if total_ready + total_not_ready <= MAX_CAPACITY:
        return False
    truncate_ready = total_ready > MAX_CAPACITY
    room = MAX_CAPACITY if truncate_ready else MAX_CAPACITY - total_ready
    total = total_ready if truncate_ready else total_not_ready
    can_add = room
    for subset in subsets:
        field = "addresses" if truncate_ready else "notReadyAddresses"
        listed = subset.get(field) or []
        share = min(math.ceil(len(listed) / total * room), can_add)
        kept = listed[:share]
        if kept:
            subset[field] = kept
        else:
            subset.pop(field, None)
        if truncate_ready:
            subset.pop("notReadyAddresses", None)
        can_add -= len(kept)
    return True


class EndpointsController(ServicePodController):
    name = "endpoints-controller"

    def __init__(self, registry: Registry, catalogue: Catalogue, *, workers: int = 2) -> None:
        super().__init__(registry, catalogue, catalogue.require("", "v1", "endpoints"))
        self.workers = workers

    def after_listing(self) -> None:
        """``checkLeftoverEndpoints``: every Endpoints held is synced once (one without a
        Service is deleted), except leader-election records."""
        for namespace, held in self.listers.outputs.items():
            for name, obj in held.items():
                if LEADER_ANNOTATION not in (obj["metadata"].get("annotations") or {}):
                    self.queue.add(f"{namespace}/{name}")

    def output_changed(self, obj: Obj, *, gone: bool = False) -> None:
        if gone:  # onEndpointsDelete
            meta = obj["metadata"]
            self.queue.add(f"{meta.get('namespace', '')}/{meta['name']}")

    def subsets(self, service: Obj, pods: list[Obj]) -> list[Obj]:
        spec = service.get("spec") or {}
        publish = bool(spec.get("publishNotReadyAddresses"))
        entries: list[tuple[Obj, Obj | None, bool]] = []
        for pod in pods:
            if not should_be_in_endpoints(pod, publish):
                continue
            address = _address(pod, service)
            if address is None:
                continue
            ready = publish or pod_ready(pod)
            ports = spec.get("ports") or []
            if not ports:
                if spec.get("clusterIP") == "None":
                    entries.append((address, None, ready))
                continue
            for service_port in ports:
                number = find_port(pod, service_port)
                if number is None:
                    continue
                port: Obj = {
                    "name": service_port.get("name") or "",
                    "port": number,
                    "protocol": service_port.get("protocol") or "TCP",
                }
                if service_port.get("appProtocol") is not None:
                    port["appProtocol"] = service_port["appProtocol"]
                entries.append((address, port, ready))
        return repack(entries)

    async def sync(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        service = self.service(key)
        if service is None:
            self.triggers.forget(key)
            if name in self.outputs_in(namespace):
                try:
                    await self.registry.delete(self.output, namespace, name)
                except APIError as exc:
                    if exc.code != 404:
                        raise
                await self.written(None, namespace, name)
            return
        if not managed(service):
            return
        pods = self.pods_of(service)
        trigger = self.triggers.compute(key, service, pods)
        subsets = self.subsets(service, pods)
        labels = dict(service["metadata"].get("labels") or {})
        labels[MANAGED_BY_LABEL] = CONTROLLER_NAME
        if service_ip_set(service):
            labels.pop(HEADLESS_LABEL, None)
        else:
            labels[HEADLESS_LABEL] = ""
        current = self.outputs_in(namespace).get(name)
        if current is not None:
            annotations = current["metadata"].get("annotations") or {}
            count = sum(
                len(s.get("addresses") or []) + len(s.get("notReadyAddresses") or [])
                for s in current.get("subsets") or []
            )
            capacity_right = count <= MAX_CAPACITY and OVER_CAPACITY_ANNOTATION not in annotations
            if (
                _without_versions(current.get("subsets") or []) == subsets
                and (current["metadata"].get("labels") or {}) == labels
                and capacity_right
            ):
                return
            body = clone(current)
        else:
            body = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name}}
        annotations = dict(body["metadata"].get("annotations") or {})
        if trigger:
            annotations[TRIGGER_TIME_ANNOTATION] = trigger
        else:
            annotations.pop(TRIGGER_TIME_ANNOTATION, None)
        if truncate(subsets):
            annotations[OVER_CAPACITY_ANNOTATION] = TRUNCATED
        else:
            annotations.pop(OVER_CAPACITY_ANNOTATION, None)
        body["metadata"]["labels"] = labels
        if annotations:
            body["metadata"]["annotations"] = annotations
        else:
            body["metadata"].pop("annotations", None)
        if subsets:
            body["subsets"] = subsets
        else:
            body.pop("subsets", None)
        if current is None:
            try:
                made = await self.registry.create(
                    self.output, namespace, body, field_manager=MANAGER
                )
            except APIError as exc:
                if namespace_terminating(exc):
                    return
                raise
        else:
            made, _ = await self.registry.update(
                self.output, namespace, name, body, field_manager=MANAGER
            )
        await self.written(made, namespace, name)


def _without_versions(subsets: list[Obj]) -> list[Obj]:
    """Subsets with the targetRefs' resourceVersion dropped (kube compares them so)."""
    out: list[Obj] = clone({"subsets": subsets})["subsets"]
    for subset in out:
        for field in ("addresses", "notReadyAddresses"):
            for address in subset.get(field) or []:
                (address.get("targetRef") or {}).pop("resourceVersion", None)
    return out
