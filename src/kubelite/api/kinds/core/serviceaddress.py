"""Where a Service is served, for the webhooks kubelite calls (admission and CRD conversion):
kubelite runs no cluster network, so a service is reached at an address its endpoints list.

A Service of type ExternalName is its ``externalName`` at the asked port. Otherwise the asked
port is one of ``spec.ports``; the address is the first ready address of its Endpoints (else of
its EndpointSlices, label ``kubernetes.io/service-name``) with the endpoint port of the same
name (or the only one). A service without endpoints resolves to nothing.
"""

from __future__ import annotations

from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.webhookclient import ServiceResolver

Obj = dict[str, Any]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def service_resolver(registry: Registry, catalogue: Catalogue) -> ServiceResolver:
    services = catalogue.require("", "v1", "services")
    endpoints = catalogue.require("", "v1", "endpoints")
    slices = catalogue.lookup("discovery.k8s.io", "v1", "endpointslices")

    async def resolve(namespace: str, name: str, port: int) -> tuple[str, int] | None:
        try:
            service = await registry.get(services, namespace, name)
        except errors.APIError:
            return None
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName" and spec.get("externalName"):
            return str(spec["externalName"]), port
        wanted = next(
            (p for p in spec.get("ports") or [] if isinstance(p, dict) and p.get("port") == port),
            None,
        )
        if wanted is None:
            return None
        port_name = str(wanted.get("name") or "")
        try:
            listed = await registry.get(endpoints, namespace, name)
            found = _from_endpoints(listed, port_name)
        except errors.APIError:
            found = None
        if found is None and slices is not None:

            def of_service(obj: Obj) -> bool:
                labels = (obj.get("metadata") or {}).get("labels") or {}
                return bool(labels.get(SERVICE_NAME_LABEL) == name)

            listing = await registry.list(slices, namespace, ListOptions(label_selector=of_service))
            found = _from_slices(listing["items"], port_name)
        return found

    return resolve


def _port(ports: Any, name: str) -> int | None:
    ports = [p for p in ports or [] if isinstance(p, dict)]
    for port in ports:
        if str(port.get("name") or "") == name and isinstance(port.get("port"), int):
            return int(port["port"])
    if len(ports) == 1 and isinstance(ports[0].get("port"), int):
        return int(ports[0]["port"])
    return None


def _from_endpoints(obj: Obj, port_name: str) -> tuple[str, int] | None:
    for subset in obj.get("subsets") or []:
        port = _port(subset.get("ports"), port_name)
        addresses = [a for a in subset.get("addresses") or [] if a.get("ip")]
        if port is not None and addresses:
            return str(addresses[0]["ip"]), port
    return None


def _from_slices(items: list[Obj], port_name: str) -> tuple[str, int] | None:
    for item in items:
        port = _port(item.get("ports"), port_name)
        for endpoint in item.get("endpoints") or []:
            ready = (endpoint.get("conditions") or {}).get("ready")
            if port is not None and ready is not False and endpoint.get("addresses"):
                return str(endpoint["addresses"][0]), port
    return None
