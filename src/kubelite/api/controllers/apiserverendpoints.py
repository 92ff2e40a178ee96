"""kube-apiserver's endpoint reconciler for the ``default/kubernetes`` Service
(pkg/controlplane/reconcilers: ``instancecount.go``'s master-count reconciler with a count of
one, and ``endpointsadapter.go``, which writes the EndpointSlice from the Endpoints). Every
API server runs it, not only the one leading the controllers: at start and every
``interval`` seconds (kube: 10) it makes

- Endpoints ``default/kubernetes``: label ``endpointslice.kubernetes.io/skip-mirror: "true"``,
  one subset ``{addresses: [{ip: <advertised address>}], ports: [{name: https, port: <secure
  port>, protocol: TCP}]}``;
- EndpointSlice ``default/kubernetes`` (``endpointSliceFromEndpoints``): label
  ``kubernetes.io/service-name: kubernetes`` only, ``addressType`` IPv4 (IPv6 for an IPv6
  address), one endpoint ``{addresses: [<ip>], conditions: {ready: true}}``, the same ports.

Simplification, as kube's ``--endpoint-reconciler-type=master-count`` with
``--apiserver-count=1``: the Endpoints name this server's address only. Servers that share a
store (etcd) each write their own address and port when they reconcile, so the objects name the
last one to do so, where kube's default ``lease`` reconciler keeps every live server's address.
Writes are recorded as ``kube-apiserver``; a conflict waits for the next round.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue
from kubelite.api.encoding.stored import clone
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]
NAMESPACE, NAME = "default", "kubernetes"
SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
RECONCILE_SECONDS = 10.0


class KubernetesEndpoints:
    """Keeps ``default/kubernetes``'s Endpoints and EndpointSlice naming ``address:port``."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        address: str,
        port: int,
        *,
        interval: float = RECONCILE_SECONDS,
    ) -> None:
        self.registry = registry
        self.endpoints = catalogue.require("", "v1", "endpoints")
        self.slices = catalogue.require("discovery.k8s.io", "v1", "endpointslices")
        self.address = str(ipaddress.ip_address(address))
        self.port = port
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    def wanted_endpoints(self) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {
                "name": NAME,
                "namespace": NAMESPACE,
                "labels": {SKIP_MIRROR_LABEL: "true"},
            },
            "subsets": [
                {
                    "addresses": [{"ip": self.address}],
                    "ports": [{"name": "https", "port": self.port, "protocol": "TCP"}],
                }
            ],
        }

    def wanted_slice(self) -> Obj:
        v6 = ipaddress.ip_address(self.address).version == 6
        return {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": NAME,
                "namespace": NAMESPACE,
                "labels": {SERVICE_NAME_LABEL: NAME},
            },
            "addressType": "IPv6" if v6 else "IPv4",
            "endpoints": [{"addresses": [self.address], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "protocol": "TCP", "port": self.port}],
        }

    async def start(self) -> None:
        """Reconcile once (a failure is logged), then every ``interval`` seconds."""
        await self._round()
        self._task = asyncio.get_running_loop().create_task(
            self._loop(), name="kubelite-endpoint-reconciler"
        )

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self._round()

    async def _round(self) -> None:
        try:
            await self.reconcile()
        except asyncio.CancelledError:
            raise
        except errors.APIError as exc:
            if exc.code != 409:  # a conflict: another server wrote it; the next round sees it
                log.warning("Unable to reconcile the kubernetes service's endpoints: %s", exc)
        except Exception as exc:
            log.warning("Unable to reconcile the kubernetes service's endpoints: %s", exc)

    async def reconcile(self) -> None:
        """``ReconcileEndpoints``, then ``EnsureEndpointSliceFromEndpoints``."""
        wanted = self.wanted_endpoints()
        try:
            current = await self.registry.get(self.endpoints, NAMESPACE, NAME)
        except errors.APIError as exc:
            if exc.code != 404:
                raise
            try:
                await self.registry.create(self.endpoints, NAMESPACE, wanted)
            except errors.APIError as exc2:
                if exc2.reason != "AlreadyExists":
                    raise
        else:
            labels = current["metadata"].get("labels") or {}
            if labels.get(SKIP_MIRROR_LABEL) != "true" or _subsets(current) != _subsets(wanted):
                body = clone(current)
                body["metadata"]["labels"] = {**labels, SKIP_MIRROR_LABEL: "true"}
                body["subsets"] = wanted["subsets"]
                await self.registry.update(self.endpoints, NAMESPACE, NAME, body)
        await self._ensure_slice()

    async def _ensure_slice(self) -> None:
        wanted = self.wanted_slice()
        try:
            current = await self.registry.get(self.slices, NAMESPACE, NAME)
        except errors.APIError as exc:
            if exc.code != 404:
                raise
            try:
                await self.registry.create(self.slices, NAMESPACE, wanted)
            except errors.APIError as exc2:
                if exc2.reason != "AlreadyExists":
                    raise
            return
        if current.get("addressType") != wanted["addressType"]:
            await self.registry.delete(self.slices, NAMESPACE, NAME)
            await self.registry.create(self.slices, NAMESPACE, wanted)
            return
        same = (
            all(current.get(f) == wanted[f] for f in ("endpoints", "ports"))
            and (current["metadata"].get("labels") or {}) == wanted["metadata"]["labels"]
        )
        if same:
            return
        body = clone(current)
        body["metadata"]["labels"] = wanted["metadata"]["labels"]
        body["endpoints"] = wanted["endpoints"]
        body["ports"] = wanted["ports"]
        await self.registry.update(self.slices, NAMESPACE, NAME, body)


def _subsets(obj: Obj) -> Any:
    return obj.get("subsets") or []
