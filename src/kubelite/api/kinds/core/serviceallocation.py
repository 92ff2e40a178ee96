"""What the Service storage allocates: cluster IPs from the service CIDR and node ports from the
node port range (k/k ``pkg/registry/core/service/storage/alloc.go``, ``ipallocator``,
``portallocator``, whose error texts these are).

Each range is one bitmap kept in the store as kube keeps it, a ``RangeAllocation`` object at
``/registry/ranges/serviceips`` and ``/registry/ranges/servicenodeports`` (``data``: the
big-endian bytes of the bitmap as a big integer, bit ``i`` = offset ``i`` taken). Every change
is a compare-and-swap on that object's revision, recomputed from the value a Conflict carries,
so several servers over one etcd never hand out one IP or port twice.

Allocations are made before the Service is written and reverted if the write fails (kube's
``transaction``); what an update or a DELETE frees is released once the write is stored. A
crash between the two leaks the allocation (kube's repair controller would reclaim it; kubelite
has none yet). Dry runs check against the stored bitmap and store nothing.

Pure helpers used by the Service strategy before validation (no store): ``normalize_cluster_ips``,
``patch_allocated_values``, ``drop_type_dependent_fields``, ``init_ip_family_fields``.
"""

from __future__ import annotations

import base64
import ipaddress
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubelite.api import errors
from kubelite.api.errors import APIError
from kubelite.storage import Conflict, KeyExists, NotFound, Store

Obj = dict[str, Any]

#: kube-apiserver's defaults (``--service-cluster-ip-range``, ``--service-node-port-range``).
DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
DEFAULT_NODE_PORT_RANGE = (30000, 32767)
#: The first IP of the range belongs to ``default/kubernetes``.
IP_KEY = "/registry/ranges/serviceips"
PORT_KEY = "/registry/ranges/servicenodeports"
#: The families a single-stack IPv4 server serves.
CLUSTER_FAMILIES = ("IPv4",)

CAS_ATTEMPTS = 1000


# -- services: what needs what ------------------------------------------------------------------


def spec_of(svc: Obj | None) -> Obj:
    spec = (svc or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def is_headless(svc: Obj) -> bool:
    spec = spec_of(svc)
    ips = spec.get("clusterIPs") or []
    return spec.get("clusterIP") == "None" or (bool(ips) and ips[0] == "None")


def needs_cluster_ip(svc: Obj | None) -> bool:
    return svc is not None and spec_of(svc).get("type") != "ExternalName" and not is_headless(svc)


def needs_node_port(svc: Obj | None) -> bool:
    return svc is not None and spec_of(svc).get("type") in ("NodePort", "LoadBalancer")


def should_allocate_node_ports(svc: Obj) -> bool:
    spec = spec_of(svc)
    if spec.get("type") == "NodePort":
        return True
    if spec.get("type") == "LoadBalancer":
        return spec.get("allocateLoadBalancerNodePorts") is not False
    return False


def needs_health_check_port(svc: Obj | None) -> bool:
    spec = spec_of(svc)
    return (
        svc is not None
        and spec.get("type") == "LoadBalancer"
        and spec.get("externalTrafficPolicy") == "Local"
    )


def _ports(svc: Obj | None) -> list[Obj]:
    return [p for p in spec_of(svc).get("ports") or [] if isinstance(p, dict)]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def held_ips(svc: Obj | None) -> list[str]:
    """The cluster IPs a stored Service holds."""
    if not needs_cluster_ip(svc):
        return []
    spec = spec_of(svc)
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [ip for ip in ips if isinstance(ip, str) and ip and ip != "None"]


def held_ports(svc: Obj | None) -> set[int]:
    """The node ports (and health check node port) a stored Service holds."""
    found: set[int] = set()
    if needs_node_port(svc):
        found.update(_int(p.get("nodePort")) for p in _ports(svc))
    if needs_health_check_port(svc):
        found.add(_int(spec_of(svc).get("healthCheckNodePort")))
    found.discard(0)
    return found


# -- the helpers the strategy runs before validation ------------------------------------------


def normalize_cluster_ips(new: Obj, old: Obj | None) -> None:
    """``clusterIP`` and ``clusterIPs`` kept in step for clients that set only one
    (normalizeClusterIPs)."""
    spec = spec_of(new)
    ip, ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    if old is None:
        if ip and not ips:
            spec["clusterIPs"] = [ip]
        return
    old_spec = spec_of(old)
    old_ip, old_ips = old_spec.get("clusterIP") or "", old_spec.get("clusterIPs") or []
    if old_ips and not ips and old_ip == ip:
        spec["clusterIPs"] = ips = list(old_ips)
    if old_ip != ip:
        same = ips == old_ips
        if old_ip and not ip:
            if same:
                spec.pop("clusterIPs", None)
        elif same:
            spec["clusterIPs"] = [ip]


def patch_allocated_values(new: Obj, old: Obj) -> None:
    """Values the server allocated that an update left out are kept (patchAllocatedValues), so
    a PUT of a manifest without clusterIP or nodePort changes nothing."""
    spec, old_spec = spec_of(new), spec_of(old)
    if needs_cluster_ip(old) and needs_cluster_ip(new):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if needs_node_port(old) and needs_node_port(new):
        used_old = {_int(p.get("nodePort")) for p in _ports(old)} - {0}
        used_new = {_int(p.get("nodePort")) for p in _ports(new)} - {0}
        used = used_old & used_new
        by_name = {str(p.get("name") or ""): _int(p.get("nodePort")) for p in _ports(old)}
        for port in _ports(new):
            if not _int(port.get("nodePort")):
                value = by_name.get(str(port.get("name") or ""), 0)
                if value and value not in used:
                    port["nodePort"] = value
    if (
        needs_health_check_port(old)
        and needs_health_check_port(new)
        and not _int(spec.get("healthCheckNodePort"))
        and old_spec.get("healthCheckNodePort")
    ):
        spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


def drop_type_dependent_fields(new: Obj, old: Obj) -> None:
    """Fields a type change makes meaningless, wiped when the client left them as they were
    (the strategy's dropTypeDependentFields)."""
    spec, old_spec = spec_of(new), spec_of(old)

    def same(key: str) -> bool:
        return spec.get(key) == old_spec.get(key)

    if needs_cluster_ip(old) and not needs_cluster_ip(new):
        if same("clusterIP") and same("clusterIPs"):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if same("ipFamilies"):
            spec.pop("ipFamilies", None)
        if same("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    same_ports = [p.get("nodePort") for p in _ports(new)] == [
        p.get("nodePort") for p in _ports(old)
    ]
    if needs_node_port(old) and not needs_node_port(new) and same_ports:
        for port in _ports(new):
            port.pop("nodePort", None)
    hc_dropped = needs_health_check_port(old) and not needs_health_check_port(new)
    if hc_dropped and same("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if old_spec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
        if "allocateLoadBalancerNodePorts" in old_spec and same("allocateLoadBalancerNodePorts"):
            spec.pop("allocateLoadBalancerNodePorts", None)
        if same("loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
    inside = externally_accessible(old) and not externally_accessible(new)
    if inside and same("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)
    if spec.get("type") != "LoadBalancer":
        status = new.get("status")
        if isinstance(status, dict) and status.get("loadBalancer"):
            status["loadBalancer"] = {}


def externally_accessible(svc: Obj | None) -> bool:
    spec = spec_of(svc)
    kind = spec.get("type")
    return kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs"))
    )


def ip_family(ip: str) -> str | None:
    try:
        return "IPv4" if ipaddress.ip_address(ip).version == 4 else "IPv6"
    except ValueError:
        return None


def init_ip_family_fields(new: Obj, old: Obj | None) -> None:
    """``ipFamilyPolicy`` and ``ipFamilies`` of a Service (initIPFamilyFields, single-stack
    IPv4 cluster): the policy kept from the stored object on update, else SingleStack
    (RequireDualStack for a headless Service without selector); the families inferred from the
    cluster IPs, else the cluster's. Errors are the validator's."""
    spec = spec_of(new)
    if spec.get("type") == "ExternalName":
        return
    if not spec.get("ipFamilyPolicy"):
        old_policy = spec_of(old).get("ipFamilyPolicy") if old is not None else None
        if old_policy:
            spec["ipFamilyPolicy"] = old_policy
        elif is_headless(new) and not spec.get("selector"):
            spec["ipFamilyPolicy"] = "RequireDualStack"
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    if not spec.get("ipFamilies"):
        old_families = spec_of(old).get("ipFamilies") if old is not None else None
        families = [ip_family(ip) for ip in spec.get("clusterIPs") or [] if ip != "None"]
        if families and None not in families:
            spec["ipFamilies"] = families
        elif old_families and needs_cluster_ip(old):
            spec["ipFamilies"] = list(old_families)
        else:
            spec["ipFamilies"] = list(CLUSTER_FAMILIES)


# -- ranges --------------------------------------------------------------------------------------


class Full(Exception):
    """No free offset in the range."""


@dataclass(frozen=True)
class Range:
    """A range of values numbered by offset: ``base + offset`` for ``offset < size``."""

    base: int
    size: int
    text: str  # as kube names the range ("10.96.0.0/12", "30000-32767")
    static_size: int  # the lower band, used last

    def offset(self, value: int) -> int | None:
        offset = value - self.base
        return offset if 0 <= offset < self.size else None

    def next_free(self, bits: int, taken: set[int], rng: random.Random) -> int:
        """A free offset: random in the upper band first (scanning up from a random start,
        wrapping), then the lower band from its start (kube's static sub-range)."""
        lower, upper = self.static_size, self.size
        if upper > lower:
            start = rng.randrange(lower, upper)
            for first, last in ((start, upper), (lower, start)):
                for offset in range(first, last):
                    if not (bits >> offset) & 1 and offset not in taken:
                        return offset
        for offset in range(min(lower, upper)):
            if not (bits >> offset) & 1 and offset not in taken:
                return offset
        raise Full


def ip_range(cidr: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, Range]:
    network = ipaddress.ip_network(cidr, strict=True)
    total = network.num_addresses
    if network.version == 4:
        base, size = int(network.network_address) + 1, max(total - 2, 0)
    else:
        base, size = int(network.network_address) + 1, max(total - 1, 0)
    size = min(size, 1 << 24)
    return network, Range(base, size, str(network), min(max(16, size // 16), 256))


def port_range(first: int, last: int) -> Range:
    size = last - first + 1
    return Range(first, size, f"{first}-{last}", min(max(16, size // 32), 128))


def decode_bits(value: bytes | None) -> int:
    if not value:
        return 0
    body = orjson.loads(value)
    data = body.get("data") or ""
    return int.from_bytes(base64.b64decode(data), "big") if data else 0


def encode_bits(range_text: str, bits: int) -> bytes:
    data = bits.to_bytes((bits.bit_length() + 7) // 8, "big") if bits else b""
    return orjson.dumps(
        {
            "kind": "RangeAllocation",
            "apiVersion": "v1",
            "metadata": {"name": "", "creationTimestamp": None},
            "range": range_text,
            "data": base64.b64encode(data).decode(),
        }
    )


Change = Callable[[int], tuple[int, Any]]


class Bitmap:
    """One stored RangeAllocation, changed only by compare-and-swap."""

    def __init__(self, store: Store, key: str, rng: Range) -> None:
        self.store = store
        self.key = key
        self.range = rng

    async def change(self, change: Change, dry_run: bool = False) -> Any:
        """Run ``change`` (bits -> (new bits, result); it may raise) on the stored bitmap and
        store what it returns, retried on a lost race; a dry run stores nothing."""
        kv = await self.store.get(self.key)
        for _ in range(CAS_ATTEMPTS):
            bits = decode_bits(kv.value if kv else None)
            new_bits, result = change(bits)
            if dry_run or new_bits == bits:
                return result
            data = encode_bits(self.range.text, new_bits)
            try:
                if kv is None:
                    await self.store.create(self.key, data)
                else:
                    await self.store.update(self.key, data, kv.mod_revision)
                return result
            except (Conflict, KeyExists) as exc:
                kv = exc.current
            except NotFound:
                kv = None
        raise errors.internal(f"failed to update {self.key}: too many conflicts")

    async def release(self, offsets: set[int]) -> None:
        if not offsets:
            return
        mask = sum(1 << o for o in offsets)
        await self.change(lambda bits: (bits & ~mask, None))


# -- transactions ------------------------------------------------------------------------------


@dataclass
class Txn:
    """What one write allocated (released if the write fails) and what it frees (released once
    the write is stored)."""

    taken: list[tuple[Bitmap, set[int]]] = field(default_factory=list)
    freed: list[tuple[Bitmap, set[int]]] = field(default_factory=list)

    async def revert(self) -> None:
        taken, self.taken, self.freed = self.taken, [], []
        for bitmap, offsets in taken:
            await bitmap.release(offsets)

    async def commit(self) -> None:
        freed, self.taken, self.freed = self.freed, [], []
        for bitmap, offsets in freed:
            await bitmap.release(offsets)


def _invalid(svc: Obj, path: str, value: Any, detail: str) -> APIError:
    from kubelite.api.kinds.validation.fields import invalid

    name = str((svc.get("metadata") or {}).get("name") or "")
    return errors.invalid("Service", "", name, [invalid(path, value, detail)])


@dataclass(frozen=True)
class ServiceRanges:
    """The cluster IP range and node port range of a server (kube-apiserver's
    ``--service-cluster-ip-range`` and ``--service-node-port-range``)."""

    cidr: str = DEFAULT_SERVICE_CIDR
    node_ports: tuple[int, int] = DEFAULT_NODE_PORT_RANGE

    @classmethod
    def parse(cls, cidr: str, node_ports: str) -> ServiceRanges:
        """From the command line; ValueError with a one-line reason when either is malformed."""
        try:
            network = ipaddress.ip_network(cidr, strict=True)
        except ValueError:
            raise ValueError(f"--service-cluster-ip-range {cidr!r} is not a network in CIDR "
                             "notation (such as 10.96.0.0/12)") from None  # fmt: skip
        if network.num_addresses < 4:
            raise ValueError(f"--service-cluster-ip-range {cidr!r} is too small")
        first, sep, last = node_ports.partition("-")
        if not (sep and first.isdigit() and last.isdigit() and 0 < int(first) <= int(last) < 65536):
            raise ValueError(f"--service-node-port-range {node_ports!r} is not a port range "
                             "(such as 30000-32767)")  # fmt: skip
        return cls(str(network), (int(first), int(last)))

    @property
    def kubernetes_ip(self) -> str:
        """The first address of the range: the ``default/kubernetes`` Service's."""
        return str(ipaddress.ip_network(self.cidr).network_address + 1)


class ServiceAllocator:
    """The cluster IP and node port ranges of one server, over its store."""

    def __init__(
        self,
        store: Store,
        cidr: str = DEFAULT_SERVICE_CIDR,
        node_ports: tuple[int, int] = DEFAULT_NODE_PORT_RANGE,
        rng: random.Random | None = None,
    ) -> None:
        self.network, ips = ip_range(cidr)
        self.ips = Bitmap(store, IP_KEY, ips)
        self.ports = Bitmap(store, PORT_KEY, port_range(*node_ports))
        self.random = rng or random.Random()

    # -- cluster IPs ---------------------------------------------------------------------------

    def ip_offset(self, svc: Obj, ip: str) -> int:
        """The offset of a requested IP, or kube's 422 when it is not in the range."""
        spec = spec_of(svc)
        value = spec.get("clusterIPs") or [ip]
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            raise errors.internal(f"failed to parse service IP {errors.go_quote(ip)}") from None
        if address.version != self.network.version or address not in self.network:
            raise _invalid(
                svc, "spec.clusterIPs", value,
                f"failed to allocate IP {ip}: the provided network does not match the current "
                "range",
            )  # fmt: skip
        offset = self.ips.range.offset(int(address))
        if offset is None:
            raise _invalid(
                svc, "spec.clusterIPs", value,
                f"failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. "
                f"The range of valid IPs is {self.network}",
            )  # fmt: skip
        return offset

    def ip_of(self, offset: int) -> str:
        return str(ipaddress.ip_address(self.ips.range.base + offset))

    async def _allocate_ips(self, svc: Obj, old: Obj | None, txn: Txn, dry_run: bool) -> None:
        before = {o for ip in held_ips(old) if (o := self._held_ip_offset(ip)) is not None}
        after: set[int] = set()
        if needs_cluster_ip(svc):
            spec = spec_of(svc)
            requested = (spec.get("clusterIPs") or [spec.get("clusterIP") or ""])[0] or ""
            offset = self.ip_offset(svc, requested) if requested else None
            if offset is not None and offset in before:
                after.add(offset)
            else:

                def take(bits: int) -> tuple[int, int]:
                    if offset is not None:
                        if (bits >> offset) & 1:
                            raise _invalid(
                                svc, "spec.clusterIPs", spec.get("clusterIPs") or [requested],
                                f"failed to allocate IP {requested}: provided IP is already "
                                "allocated",
                            )  # fmt: skip
                        return bits | (1 << offset), offset
                    try:
                        chosen = self.ips.range.next_free(bits, set(), self.random)
                    except Full:
                        raise errors.internal(
                            "failed to allocate a serviceIP: range is full"
                        ) from None
                    return bits | (1 << chosen), chosen

                taken: int = await self.ips.change(take, dry_run)
                if not dry_run:
                    txn.taken.append((self.ips, {taken}))
                after.add(taken)
                ip = self.ip_of(taken)
                spec["clusterIP"] = ip
                spec["clusterIPs"] = [ip, *(spec.get("clusterIPs") or [])[1:]]
        freed = before - after
        if freed and not dry_run:
            txn.freed.append((self.ips, freed))

    def _held_ip_offset(self, ip: str) -> int | None:
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return None
        if address.version != self.network.version:
            return None
        return self.ips.range.offset(int(address))

    # -- node ports ----------------------------------------------------------------------------

    async def _allocate_ports(self, svc: Obj, old: Obj | None, txn: Txn, dry_run: bool) -> None:
        before = held_ports(old)
        rng = self.ports.range
        ports = _ports(svc)
        spec = spec_of(svc)

        def plan(bits: int) -> tuple[int, tuple[dict[int, int], int, set[int]]]:
            """(new bits, (nodePort by port index, health check port, offsets taken))."""
            taken: set[int] = set()
            assigned: dict[int, int] = {}
            value = bits

            def take(port: int, path: str) -> None:
                detail = reserve(port)
                if detail:
                    raise _invalid(svc, path, port, detail)

            def reserve(port: int) -> str:
                """Take ``port``; why it cannot be taken ("" when it was)."""
                nonlocal value
                offset = rng.offset(port)
                if offset is None:
                    return (
                        "provided port is not in the valid range. The range of valid ports is "
                        f"{rng.text}"
                    )
                if (value >> offset) & 1:
                    return "provided port is already allocated"
                value |= 1 << offset
                taken.add(offset)
                return ""

            def take_next(what: str) -> int:
                nonlocal value
                try:
                    offset = rng.next_free(value, set(), self.random)
                except Full:
                    raise errors.internal(f"failed to allocate {what}: range is full") from None
                value |= 1 << offset
                taken.add(offset)
                return rng.base + offset

            if needs_node_port(svc):
                allocate = should_allocate_node_ports(svc)
                if old is None:
                    shared: dict[int, int] = {}
                    for i, port in enumerate(ports):
                        asked = _int(port.get("nodePort"))
                        if not asked and not allocate:
                            continue
                        number = _int(port.get("port"))
                        have = shared.get(number, 0)
                        path = f"spec.ports[{i}].nodePort"
                        if not have:
                            requested = next(
                                (
                                    _int(p.get("nodePort"))
                                    for p in ports
                                    if _int(p.get("port")) == number and _int(p.get("nodePort"))
                                ),
                                0,
                            )
                            if requested:
                                take(requested, path)
                                chosen = requested
                            else:
                                chosen = take_next("a nodePort")
                            assigned[i] = shared[number] = chosen
                        elif asked != have:
                            if not asked:
                                assigned[i] = have
                            else:
                                take(asked, path)
                else:
                    done: set[int] = set()
                    for i, port in enumerate(ports):
                        asked = _int(port.get("nodePort"))
                        if not asked and not allocate:
                            continue
                        if asked:
                            if asked not in before and asked not in done:
                                take(asked, f"spec.ports[{i}].nodePort")
                                done.add(asked)
                        else:
                            assigned[i] = take_next("a nodePort")
            health = 0
            if needs_health_check_port(svc):
                asked = _int(spec.get("healthCheckNodePort"))
                if asked and asked not in before:
                    detail = reserve(asked)
                    if detail:
                        raise errors.internal(
                            f"failed to allocate requested HealthCheck NodePort {asked}: {detail}"
                        )
                elif not asked:
                    health = take_next("a HealthCheck NodePort 0")
            return value, (assigned, health, taken)

        if not needs_node_port(svc) and not needs_health_check_port(svc) and not before:
            return
        assigned, health, taken = await self.ports.change(plan, dry_run)
        if taken and not dry_run:
            txn.taken.append((self.ports, taken))
        for i, port in assigned.items():
            ports[i]["nodePort"] = port
        if health:
            spec["healthCheckNodePort"] = health
        freed = {o for p in before - held_ports(svc) if (o := rng.offset(p)) is not None}
        if freed and not dry_run:
            txn.freed.append((self.ports, freed))

    # -- the verbs -------------------------------------------------------------------------------

    async def allocate(self, svc: Obj, old: Obj | None, dry_run: bool) -> Txn:
        """Allocate what ``svc`` needs that ``old`` (the stored Service, None on create) does
        not hold, filling ``svc`` in place; the Txn frees what ``old`` held and ``svc`` no
        longer does once committed."""
        txn = Txn()
        try:
            await self._allocate_ips(svc, old, txn, dry_run)
            await self._allocate_ports(svc, old, txn, dry_run)
        except BaseException:
            await txn.revert()
            raise
        return txn

    async def release(self, svc: Obj) -> None:
        """A deleted Service's IPs and ports back to their ranges."""
        ips = {o for ip in held_ips(svc) if (o := self._held_ip_offset(ip)) is not None}
        await self.ips.release(ips)
        ports = {o for p in held_ports(svc) if (o := self.ports.range.offset(p)) is not None}
        await self.ports.release(ports)
