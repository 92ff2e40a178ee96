"""What a Service's spec needs and holds, and what the Service storage does to it before validation
(kubernetes ``pkg/registry/core/service/storage/alloc.go`` and ``strategy.go``): whether it
needs a cluster IP, node ports or a health check port; the IPs and ports it holds; clusterIP and
clusterIPs kept in step, values the server allocated kept when an update leaves them out, fields a
type change makes meaningless dropped, and the IP family fields set. No store here: allocation is
:mod:`kubelite.api.kinds.core.serviceallocation`'s."""

from __future__ import annotations

import ipaddress
from typing import Any

Obj = dict[str, Any]

#: The families a single-stack IPv4 server serves.
CLUSTER_FAMILIES = ("IPv4",)


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


def spec_ports(svc: Obj | None) -> list[Obj]:
    return [p for p in spec_of(svc).get("ports") or [] if isinstance(p, dict)]


def int_field(value: Any) -> int:
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
        found.update(int_field(p.get("nodePort")) for p in spec_ports(svc))
    if needs_health_check_port(svc):
        found.add(int_field(spec_of(svc).get("healthCheckNodePort")))
    found.discard(0)
    return found


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
        used_old = {int_field(p.get("nodePort")) for p in spec_ports(old)} - {0}
        used_new = {int_field(p.get("nodePort")) for p in spec_ports(new)} - {0}
        used = used_old & used_new
        by_name = {str(p.get("name") or ""): int_field(p.get("nodePort")) for p in spec_ports(old)}
        for port in spec_ports(new):
            if not int_field(port.get("nodePort")):
                value = by_name.get(str(port.get("name") or ""), 0)
                if value and value not in used:
                    port["nodePort"] = value
    if (
        needs_health_check_port(old)
        and needs_health_check_port(new)
        and not int_field(spec.get("healthCheckNodePort"))
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
    same_ports = [p.get("nodePort") for p in spec_ports(new)] == [
        p.get("nodePort") for p in spec_ports(old)
    ]
    if needs_node_port(old) and not needs_node_port(new) and same_ports:
        for port in spec_ports(new):
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
