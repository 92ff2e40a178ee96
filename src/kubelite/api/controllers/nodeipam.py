"""kube-controller-manager's ``node-ipam-controller`` with the range allocator
(pkg/controller/nodeipam/ipam/range_allocator.go, cidrset/cidr_set.go), as kind runs it: every
Node gets ``spec.podCIDR`` and ``spec.podCIDRs`` from the cluster CIDR ``10.244.0.0/16`` cut into
``/24`` blocks (``--cluster-cidr``, ``--node-cidr-mask-size``).

- At start every block a Node already holds is marked used; then the Nodes without one get one,
  in order of registration (creation time, then name in natural order: ``kubelite-worker``,
  ``kubelite-worker2`` ... ``kubelite-worker10``), by one worker, so the first registered gets
  ``10.244.0.0/24``.
- The next block is the first free one after the last given (``cidrSet.AllocateNext``'s
  ``nextCandidate``, wrapping round): a block freed by a deleted Node is not given again until
  the others were.
- A deleted Node's block is freed. A Node that got a podCIDR from elsewhere keeps it (its
  block is marked used).
- No block left: event ``CIDRNotAvailable`` "Node <n> status is now: CIDRNotAvailable" from
  ``cidrAllocator``, and the Node is retried with back-off.

Writes are a conflict-checked read-modify-write under ``kube-controller-manager``.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from typing import Any

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.events import NORMAL, EventRecorder
from kubelite.api.controllers.keyed import KeyedController
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MANAGER = "kube-controller-manager"
CLUSTER_CIDR = "10.244.0.0/16"
NODE_MASK_SIZE = 24
NODES = "nodes"


def registration_order(node: Obj) -> tuple[str, list[Any]]:
    """Creation time, then the name with its numbers compared as numbers."""
    meta = node.get("metadata") or {}
    name = str(meta.get("name") or "")
    parts = [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]
    return str(meta.get("creationTimestamp") or ""), parts


class CIDRSet:
    """The blocks of one cluster CIDR, used or free (cidr_set.go)."""

    def __init__(self, cluster_cidr: str = CLUSTER_CIDR, mask_size: int = NODE_MASK_SIZE) -> None:
        self.network = ipaddress.ip_network(cluster_cidr)
        self.mask_size = mask_size
        self.size = 2 ** (mask_size - self.network.prefixlen)
        self.used: set[int] = set()
        self.next_candidate = 0

    def _block(self, index: int) -> str:
        step = 2 ** (self.network.max_prefixlen - self.mask_size)
        base = int(self.network.network_address) + index * step
        return f"{ipaddress.ip_address(base)}/{self.mask_size}"

    def index_of(self, cidr: str) -> int | None:
        try:
            net = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            return None
        if net.version != self.network.version or not net.subnet_of(self.network):  # type: ignore[arg-type]
            return None
        step = 2 ** (self.network.max_prefixlen - self.mask_size)
        return int((int(net.network_address) - int(self.network.network_address)) // step)

    def occupy(self, cidr: str) -> None:
        index = self.index_of(cidr)
        if index is not None:
            self.used.add(index)

    def release(self, cidr: str) -> None:
        index = self.index_of(cidr)
        if index is not None:
            self.used.discard(index)

    def allocate_next(self) -> str | None:
        for i in range(self.size):
            candidate = (i + self.next_candidate) % self.size
            if candidate not in self.used:
                self.used.add(candidate)
                self.next_candidate = (candidate + 1) % self.size
                return self._block(candidate)
        return None


class NodeIPAMController(KeyedController[str]):
    name = "node-ipam-controller"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        cluster_cidr: str = CLUSTER_CIDR,
        mask_size: int = NODE_MASK_SIZE,
    ) -> None:
        self.node_info = catalogue.require("", "v1", NODES)
        super().__init__(registry, {NODES: self.node_info}, workers=1)
        self.cluster_cidr = cluster_cidr
        self.mask_size = mask_size
        self.cidrs = CIDRSet(cluster_cidr, mask_size)
        #: the block this controller gave each node (freed when the node goes)
        self.given: dict[str, str] = {}
        self.recorder = EventRecorder(registry, catalogue, "cidrAllocator")
        self._listing = False

    def reset(self) -> None:
        self.cidrs = CIDRSet(self.cluster_cidr, self.mask_size)
        self.given = {}
        self._listing = True

    def enqueue(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            assert old is not None
            name = old["metadata"]["name"]
            for cidr in _pod_cidrs(old) or ([self.given[name]] if name in self.given else []):
                self.cidrs.release(cidr)
            self.given.pop(name, None)
            return
        cidrs = _pod_cidrs(new)
        for cidr in cidrs:
            self.cidrs.occupy(cidr)
        if not cidrs and not self._listing:
            self.queue.add(new["metadata"]["name"])

    async def started(self) -> None:
        """Every Node listed without a podCIDR, in order of registration."""
        waiting = [n for n in self.informer.all(NODES) if not _pod_cidrs(n)]
        for node in sorted(waiting, key=registration_order):
            self.queue.add(node["metadata"]["name"])
        self._listing = False

    async def sync(self, key: str) -> None:
        node = self.informer.get(NODES, "", key)
        if node is None or _pod_cidrs(node) or node["metadata"].get("deletionTimestamp"):
            return
        cidr = self.given.get(key)
        if cidr is None:
            cidr = self.cidrs.allocate_next()
            if cidr is None:
                await self.recorder.record(
                    _node_ref(node), NORMAL, "CIDRNotAvailable",
                    f"Node {key} status is now: CIDRNotAvailable",
                )  # fmt: skip
                raise RuntimeError(f"no pod CIDR left in {self.cluster_cidr} for node {key}")
            self.given[key] = cidr
        uid = node["metadata"].get("uid")

        def assign(current: Obj) -> None:
            if uid and current["metadata"].get("uid") != uid:
                raise _Replaced([])
            spec = current.setdefault("spec", {})
            if _pod_cidrs(current):
                raise _Replaced(_pod_cidrs(current))
            spec["podCIDR"] = cidr
            spec["podCIDRs"] = [cidr]

        try:
            await self.registry.mutate(self.node_info, None, key, assign, field_manager=MANAGER)
        except _Replaced as replaced:
            # the stored Node has a podCIDR already, or is another Node of that name: this
            # informer's copy is behind, and its event brings the key back; a second look waits
            # out the queue's back-off (an immediate one, its read served from memory, could
            # loop without yielding, so that the informer never caught up)
            self.given.pop(key, None)
            if cidr not in replaced.cidrs:
                self.cidrs.release(cidr)
            if not replaced.cidrs:
                self.queue.add_rate_limited(key)
        except APIError as exc:
            if exc.code != 404:
                raise
            self.given.pop(key, None)
            self.cidrs.release(cidr)


class _Replaced(Exception):
    """The node is another one now, or has a podCIDR already (``cidrs``)."""

    def __init__(self, cidrs: list[str]) -> None:
        super().__init__(cidrs)
        self.cidrs = cidrs


def _pod_cidrs(node: Obj) -> list[str]:
    spec = node.get("spec") or {}
    cidrs = [str(c) for c in spec.get("podCIDRs") or []]
    if not cidrs and spec.get("podCIDR"):
        cidrs = [str(spec["podCIDR"])]
    return cidrs


def _node_ref(node: Obj) -> Obj:
    """kube's node event reference (``RecordNodeStatusChange``): v1 Node, name and uid."""
    meta = node["metadata"]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": meta["name"],
            "uid": meta.get("uid", "")}}  # fmt: skip
