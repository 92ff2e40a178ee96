"""Service defaults and validation: ``SetDefaults_Service`` (pkg/apis/core/v1/defaults.go) and
``ValidateService`` / ``ValidateServiceUpdate`` (pkg/apis/core/validation/validation.go): ports,
type rules, ExternalName, session affinity, traffic policies, the cluster IP fields and their
immutability, on a single-stack IPv4 cluster.

The defaulter is run by :class:`kubelite.api.kinds.core.services.ServiceStrategy`. Allocation
(cluster IPs, node ports) is :mod:`kubelite.api.kinds.core.serviceallocation`'s and runs after
this validation, so the fields it fills (``healthCheckNodePort``) are not required here.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.core.servicefields import (
    CLUSTER_FAMILIES,
    externally_accessible,
    is_headless,
)
from kubelite.api.kinds.validation.fields import (
    Struct,
    Typed,
    forbidden,
    invalid,
    label_causes,
    not_supported,
    required,
)
from kubelite.api.machinery.names import label_errors, subdomain_errors

Obj = dict[str, Any]

TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]
PROTOCOLS = ["SCTP", "TCP", "UDP"]
AFFINITIES = ["ClientIP", "None"]
TRAFFIC_POLICIES = ["Cluster", "Local"]
FAMILIES = ["IPv4", "IPv6"]
FAMILY_POLICIES = ["PreferDualStack", "RequireDualStack", "SingleStack"]
PORT_RANGE = "must be between 1 and 65535, inclusive"
INVALID_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
KUBELET_PORT = 10250
DEFAULT_CLIENT_IP_TIMEOUT = 10800


# -- defaults ----------------------------------------------------------------------------------


def default_service(obj: Obj) -> None:
    """SetDefaults_Service."""
    spec = obj.get("spec")
    if spec is None:
        spec = obj["spec"] = {}
    if not isinstance(spec, dict):
        return
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    if spec["sessionAffinity"] == "ClientIP":
        config = spec.get("sessionAffinityConfig")
        client = config.get("clientIP") if isinstance(config, dict) else None
        if not isinstance(client, dict) or client.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {
                "clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_TIMEOUT}
            }
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    cluster_ip = spec.get("clusterIP")
    if isinstance(cluster_ip, str) and cluster_ip and not spec.get("clusterIPs"):
        spec["clusterIPs"] = [cluster_ip]  # stored before clusterIPs existed: kube's normalising
    ports = spec.get("ports")
    for port in ports if isinstance(ports, list) else []:
        if not isinstance(port, dict):
            continue
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port")
    if externally_accessible(obj) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in (
        "NodePort",
        "LoadBalancer",
        "ClusterIP",
    ):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


# -- validation --------------------------------------------------------------------------------


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _port_name_errors(name: str) -> list[str]:
    """IsValidPortName."""
    found = []
    if len(name) > 15:
        found.append("must be no more than 15 characters")
    if not re.fullmatch(r"[-a-z0-9]+", name):
        found.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", name):
        found.append("must contain at least one letter (a-z)")
    if "--" in name:
        found.append("must not contain consecutive hyphens")
    if name.startswith("-") or name.endswith("-"):
        found.append("must not begin or end with a hyphen")
    return found


def _port_causes(port: Any, path: str, require_name: bool, names: set[str]) -> list[Cause]:
    if not isinstance(port, dict):
        return [invalid(path, port, "must be an object")]
    causes: list[Cause] = []
    name = port.get("name") or ""
    if require_name and not name:
        causes.append(required(f"{path}.name"))
    elif name:
        causes += [invalid(f"{path}.name", name, m) for m in label_errors(str(name))]
        if name in names:
            causes.append(
                Cause("FieldValueDuplicate", f'Duplicate value: "{name}"', f"{path}.name")
            )
        names.add(name)
    number = _int(port.get("port"))
    if not 1 <= number <= 65535:
        causes.append(invalid(f"{path}.port", number, PORT_RANGE))
    protocol = port.get("protocol") or ""
    if not protocol:
        causes.append(required(f"{path}.protocol"))
    elif protocol not in PROTOCOLS:
        causes.append(not_supported(f"{path}.protocol", Typed(protocol), PROTOCOLS))
    target = port.get("targetPort")
    if isinstance(target, str):
        causes += [invalid(f"{path}.targetPort", target, m) for m in _port_name_errors(target)]
    elif not 1 <= _int(target) <= 65535:
        causes.append(invalid(f"{path}.targetPort", _int(target), PORT_RANGE))
    node_port = port.get("nodePort")
    if node_port and not 1 <= _int(node_port) <= 65535:
        causes.append(invalid(f"{path}.nodePort", _int(node_port), PORT_RANGE))
    return causes


def _cluster_ip_causes(spec: Obj, svc: Obj, old: Obj | None) -> list[Cause]:
    """ValidateServiceClusterIPsRelatedFields, on a single-stack IPv4 cluster."""
    causes: list[Cause] = []
    ip, ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    if ip:
        if not ips:
            causes.append(required("spec.clusterIPs"))
        elif ips[0] != ip:
            causes.append(invalid("spec.clusterIPs", ips, "first value must match `clusterIP`"))
    elif ips:
        causes.append(
            invalid("spec.clusterIPs", ips, "must be empty when `clusterIP` is not specified")
        )
    families = spec.get("ipFamilies") or []
    seen: set[str] = set()
    for i, family in enumerate(families):
        if family not in FAMILIES:
            causes.append(not_supported(f"spec.ipFamilies[{i}]", Typed(str(family)), FAMILIES))
        elif family not in CLUSTER_FAMILIES:
            causes.append(
                invalid(f"spec.ipFamilies[{i}]", Typed(family), "not configured on this cluster")
            )
        if family in seen:
            causes.append(
                Cause(
                    "FieldValueDuplicate", f'Duplicate value: "{family}"', f"spec.ipFamilies[{i}]"
                )
            )
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in FAMILY_POLICIES:
        causes.append(not_supported("spec.ipFamilyPolicy", Typed(str(policy)), FAMILY_POLICIES))
    headless = is_headless(svc)
    if (
        policy == "RequireDualStack"
        and len(CLUSTER_FAMILIES) < 2
        and not (headless and not spec.get("selector"))
    ):
        causes.append(
            invalid(
                "spec.ipFamilyPolicy",
                Typed(policy),
                "this cluster is not configured for dual-stack services",
            )
        )
    bad = False
    for i, value in enumerate(ips):
        if i == 0 and value == "None":
            if len(ips) > 1:
                bad = True
                causes.append(
                    invalid("spec.clusterIPs", ips, "'None' must be the first and only value")
                )
            continue
        try:
            ipaddress.ip_address(str(value))
        except ValueError:
            if old is None or value not in (old.get("spec") or {}).get("clusterIPs", []):
                bad = True
                causes.append(invalid(f"spec.clusterIPs[{i}]", value, INVALID_IP))
    if len(ips) > 2:
        causes.append(invalid("spec.clusterIPs", ips, "may only hold up to 2 values"))
    if bad:
        return causes
    if len(ips) > 1:
        versions = {ipaddress.ip_address(str(v)).version for v in ips if v != "None"}
        if len(versions) != len(ips):
            causes.append(
                invalid(
                    "spec.clusterIPs", ips, "may specify no more than one IP for each IP family"
                )
            )
        if policy == "SingleStack":
            causes.append(
                invalid(
                    "spec.ipFamilyPolicy",
                    Typed(policy),
                    "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs "
                    "are specified",
                )
            )
    if not headless:
        for i, value in enumerate(ips[: len(families)]):
            version = ipaddress.ip_address(str(value)).version
            if families[i] == "IPv4" and version == 6:
                causes.append(
                    invalid(
                        f"spec.clusterIPs[{i}]",
                        value,
                        f"expected an IPv4 value as indicated by `ipFamilies[{i}]`",
                    )
                )
            if families[i] == "IPv6" and version == 4:
                causes.append(
                    invalid(
                        f"spec.clusterIPs[{i}]",
                        value,
                        f"expected an IPv6 value as indicated by `ipFamilies[{i}]`",
                    )
                )
    elif len(families) > 1 and policy == "SingleStack":
        causes.append(
            invalid(
                "spec.ipFamilyPolicy",
                Typed(policy),
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are "
                "specified",
            )
        )
    return causes


def _immutable_ip_causes(spec: Obj, old_spec: Obj) -> list[Cause]:
    """validateUpgradeDowngradeClusterIPs."""
    if "ExternalName" in (spec.get("type"), old_spec.get("type")):
        return []
    old_ips, ips = old_spec.get("clusterIPs") or [], spec.get("clusterIPs") or []
    if old_ips[:1] == ["None"] and ips[:1] == ["None"]:
        return []
    causes: list[Cause] = []
    if len(old_ips) == len(ips):
        for i, value in enumerate(old_ips):
            if value != ips[i]:
                causes.append(invalid(f"spec.clusterIPs[{i}]", ips, "may not change once set"))
    elif len(old_ips) > len(ips):
        if not ips:
            causes.append(invalid("spec.clusterIPs[0]", ips, "primary clusterIP can not be unset"))
        elif ips[0] != old_ips[0]:
            causes.append(invalid("spec.clusterIPs[0]", ips, "may not change once set"))
        if len(ips) == 1 and spec.get("ipFamilyPolicy") != "SingleStack":
            causes.append(
                invalid(
                    "spec.clusterIPs[0]",
                    ips,
                    "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the secondary "
                    "clusterIP",
                )
            )
    elif old_ips and ips[0] != old_ips[0]:
        causes.append(invalid("spec.clusterIPs[0]", ips, "may not change once set"))
    return causes


def validate_service(obj: Obj, old: Obj | None) -> list[Cause]:
    """ValidateService (and ValidateServiceUpdate's cluster IP rules when ``old`` is given)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    causes: list[Cause] = []
    kind = spec.get("type") or ""
    ports = spec.get("ports") or []
    headless = is_headless(obj)
    ips = spec.get("clusterIPs") or []
    if not ports and not headless and kind != "ExternalName":
        causes.append(required("spec.ports"))
    if kind == "LoadBalancer":
        if headless:
            causes.append(
                invalid(
                    "spec.clusterIPs[0]", ips[0] if ips else "None",
                    "may not be set to 'None' for LoadBalancer services",
                )
            )  # fmt: skip
        for i, port in enumerate(ports):
            if isinstance(port, dict) and _int(port.get("port")) == KUBELET_PORT:
                causes.append(
                    invalid(
                        f"spec.ports[{i}]", KUBELET_PORT,
                        f"may not expose port {KUBELET_PORT} externally since it is used by "
                        "kubelet",
                    )
                )  # fmt: skip
    elif kind == "NodePort" and headless:
        causes.append(
            invalid(
                "spec.clusterIPs[0]", ips[0] if ips else "None",
                "may not be set to 'None' for NodePort services",
            )
        )  # fmt: skip
    elif kind == "ExternalName":
        if ips or spec.get("clusterIP"):
            causes.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if spec.get("ipFamilies"):
            causes.append(forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            causes.append(
                forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services")
            )
        cname = str(spec.get("externalName") or "").removesuffix(".")
        if cname:
            causes += [invalid("spec.externalName", cname, m) for m in subdomain_errors(cname)]
        else:
            causes.append(required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        causes += _port_causes(port, f"spec.ports[{i}]", len(ports) > 1, names)
    if spec.get("selector") is not None:
        causes += label_causes(spec.get("selector"), "spec.selector")
    affinity = spec.get("sessionAffinity") or ""
    if not affinity:
        causes.append(required("spec.sessionAffinity"))
    elif affinity not in AFFINITIES:
        causes.append(not_supported("spec.sessionAffinity", Typed(affinity), AFFINITIES))
    elif affinity == "ClientIP":
        config = spec.get("sessionAffinityConfig") or {}
        client = config.get("clientIP") if isinstance(config, dict) else None
        timeout = client.get("timeoutSeconds") if isinstance(client, dict) else None
        if timeout is None:
            causes.append(required("spec.sessionAffinityConfig.clientIP.timeoutSeconds"))
        elif not 0 < _int(timeout) <= 86400:
            causes.append(
                invalid(
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    _int(timeout),
                    "must be greater than 0 and less than 86400",
                )
            )
    elif spec.get("sessionAffinityConfig") is not None:
        causes.append(
            forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None")
        )
    if kind != "ExternalName":
        causes += _cluster_ip_causes(spec, obj, old)
    for i, ip in enumerate(spec.get("externalIPs") or []):
        try:
            ipaddress.ip_address(str(ip))
        except ValueError:
            causes.append(invalid(f"spec.externalIPs[{i}]", ip, INVALID_IP))
    if not kind:
        causes.append(required("spec.type"))
    elif kind not in TYPES:
        causes.append(not_supported("spec.type", Typed(str(kind)), TYPES))
    if kind == "ClusterIP":
        for i, port in enumerate(ports):
            if isinstance(port, dict) and _int(port.get("nodePort")):
                causes.append(
                    forbidden(
                        f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"
                    )
                )
    node_ports: set[tuple[str, int]] = set()
    numbers: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        protocol, node_port = str(port.get("protocol") or ""), _int(port.get("nodePort"))
        if node_port:
            if (protocol, node_port) in node_ports:
                causes.append(
                    Cause(
                        "FieldValueDuplicate",
                        f"Duplicate value: {node_port}",
                        f"spec.ports[{i}].nodePort",
                    )
                )
            node_ports.add((protocol, node_port))
        number = _int(port.get("port"))
        if (protocol, number) in numbers:
            causes.append(_duplicate_port(f"spec.ports[{i}]", protocol, number))
        numbers.add((protocol, number))
    causes += _traffic_policy_causes(obj, spec)
    if old is not None:
        causes += _immutable_ip_causes(spec, old.get("spec") or {})
    return causes


def _duplicate_port(path: str, protocol: str, number: int) -> Cause:
    """``field.Duplicate(path, core.ServicePort{Protocol, Port})``: the internal type has no
    JSON tags, so it renders with Go's field names."""
    from kubelite.api.kinds.validation.fields import go_json

    value = Struct(
        Name="", Protocol=protocol, AppProtocol=None, Port=number, TargetPort=0, NodePort=0
    )
    return Cause("FieldValueDuplicate", f"Duplicate value: {go_json(value)}", path)


def _traffic_policy_causes(svc: Obj, spec: Obj) -> list[Cause]:
    causes: list[Cause] = []
    external = spec.get("externalTrafficPolicy") or ""
    if not externally_accessible(svc):
        if external:
            causes.append(
                invalid(
                    "spec.externalTrafficPolicy",
                    Typed(str(external)),
                    "may only be set for externally-accessible services",
                )
            )
    elif not external:
        causes.append(required("spec.externalTrafficPolicy"))
    elif external not in TRAFFIC_POLICIES:
        causes.append(
            not_supported("spec.externalTrafficPolicy", Typed(str(external)), TRAFFIC_POLICIES)
        )
    health = _int(spec.get("healthCheckNodePort"))
    needs_health = spec.get("type") == "LoadBalancer" and external == "Local"
    if not needs_health and health:
        causes.append(
            invalid(
                "spec.healthCheckNodePort",
                health,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is "
                "'Local'",
            )
        )
    elif health and not 1 <= health <= 65535:
        causes.append(invalid("spec.healthCheckNodePort", health, PORT_RANGE))
    internal = spec.get("internalTrafficPolicy")
    if internal is None:
        if spec.get("type") in ("ClusterIP", "NodePort", "LoadBalancer"):
            causes.append(required("spec.internalTrafficPolicy"))
    elif internal not in TRAFFIC_POLICIES:
        causes.append(
            not_supported("spec.internalTrafficPolicy", Typed(str(internal)), TRAFFIC_POLICIES)
        )
    return causes
