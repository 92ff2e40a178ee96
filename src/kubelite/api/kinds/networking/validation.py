"""Validation: Ingress, NetworkPolicy (pkg/apis/networking/validation)."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.validation.fields import (
    Obj,
    Typed,
    as_dict,
    as_list,
    as_str,
    forbidden,
    invalid,
    not_supported,
    required,
    selector_causes,
    too_many,
)
from kubelite.api.machinery.names import label_errors, path_segment_errors, subdomain_errors

# -- apimachinery util/validation -------------------------------------------------------------

_WILDCARD = re.compile(r"\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
WILDCARD_MESSAGE = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
    "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
    "alphanumeric character (e.g. '*.example.com', regex used for validation is "
    "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
PORT_RANGE = "must be between 1 and 65535, inclusive"


def wildcard_errors(host: str) -> list[str]:
    """IsWildcardDNS1123Subdomain."""
    errs = ["must be no more than 253 characters"] if len(host) > 253 else []
    if not _WILDCARD.fullmatch(host):
        errs.append(WILDCARD_MESSAGE)
    return errs


def port_name_errors(name: str) -> list[str]:
    """IsValidPortName (an IANA_SVC_NAME)."""
    errs: list[str] = []
    if len(name) > 15:
        errs.append("must be no more than 15 characters")
    if not re.fullmatch(r"[-a-z0-9]+", name):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", name):
        errs.append("must contain at least one letter (a-z)")
    if "--" in name:
        errs.append("must not contain consecutive hyphens")
    if name and (name[0] == "-" or name[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def port_number_errors(port: Any) -> list[str]:
    if isinstance(port, int) and not isinstance(port, bool) and not 1 <= port <= 65535:
        return [PORT_RANGE]
    return []


def is_ip(text: str) -> bool:
    """netutils.ParseIPSloppy: IPv4 may have leading zeros."""
    candidate = text
    if re.fullmatch(r"[0-9]+(\.[0-9]+){3}", text):
        candidate = ".".join(str(int(p)) for p in text.split("."))
    try:
        ipaddress.ip_address(candidate)
    except ValueError:
        return False
    return True


# -- Ingress ----------------------------------------------------------------------------------

_PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]  # sets.List(): sorted
_BAD_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
_BAD_SUFFIXES = ("/..", "/.")


def _backend_causes(backend: Obj, path: str) -> list[Cause]:
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    causes: list[Cause] = []
    if isinstance(resource, dict):
        group = resource.get("apiGroup")
        if isinstance(group, str):
            at = f"{path}.resource.apiGroup"
            causes += [invalid(at, group, m) for m in subdomain_errors(group)]
        for name in ("kind", "name"):
            value = as_str(resource.get(name))
            at = f"{path}.resource.{name}"
            if not value:
                causes.append(required(at))
            else:
                causes += [invalid(at, value, m) for m in path_segment_errors(value)]
        return causes
    if isinstance(service, dict):
        name = as_str(service.get("name"))
        if not name:
            causes.append(required(f"{path}.service.name"))
        else:
            # RelaxedServiceNameValidation: a DNS-1123 label, as Service names
            at = f"{path}.service.name"
            causes += [invalid(at, name, m) for m in label_errors(name)]
        port = as_dict(service.get("port"))
        port_name, number = as_str(port.get("name")), port.get("number") or 0
        if port_name and number:
            causes.append(invalid(path, "", "cannot set both port name & port number"))
        elif port_name:
            at = f"{path}.service.port.name"
            causes += [invalid(at, port_name, m) for m in port_name_errors(port_name)]
        elif number:
            at = f"{path}.service.port.number"
            causes += [invalid(at, number, m) for m in port_number_errors(number)]
        else:
            causes.append(required(path, "port name or number is required"))
        return causes
    return [invalid(path, "", "resource or service backend is required")]


def _http_path_causes(item: Obj, path: str) -> list[Cause]:
    path_type = item.get("pathType")
    if not isinstance(path_type, str):
        return [required(f"{path}.pathType", "pathType must be specified")]
    value = as_str(item.get("path"))
    causes: list[Cause] = []
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            causes.append(invalid(f"{path}.path", value, "must be an absolute path"))
        if value:
            for seq in _BAD_SEQUENCES:
                if seq in value:
                    causes.append(invalid(f"{path}.path", value, f"must not contain '{seq}'"))
            for suffix in _BAD_SUFFIXES:
                if value.endswith(suffix):
                    causes.append(invalid(f"{path}.path", value, f"cannot end with '{suffix}'"))
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            causes.append(invalid(f"{path}.path", value, "must be an absolute path"))
    else:
        causes.append(not_supported(f"{path}.pathType", Typed(path_type), _PATH_TYPES))
    return causes + _backend_causes(as_dict(item.get("backend")), f"{path}.backend")


def _rules_causes(rules: list[Any]) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(rules):
        rule = as_dict(rule)
        at = f"spec.rules[{i}]"
        host = as_str(rule.get("host"))
        if host:
            if is_ip(host):
                causes.append(invalid(f"{at}.host", host, "must be a DNS name, not an IP address"))
            errors = wildcard_errors(host) if "*" in host else subdomain_errors(host)
            causes += [invalid(f"{at}.host", host, m) for m in errors]
        http = rule.get("http")
        if isinstance(http, dict):
            paths = as_list(http.get("paths"))
            if not paths:
                causes.append(required(f"{at}.http.paths"))
            for j, item in enumerate(paths):
                causes += _http_path_causes(as_dict(item), f"{at}.http.paths[{j}]")
    return causes


def _tls_causes(tls: list[Any]) -> list[Cause]:
    causes: list[Cause] = []
    for i, item in enumerate(tls):
        item = as_dict(item)
        for j, host in enumerate(as_list(item.get("hosts"))):
            host = as_str(host)
            at = f"spec.tls[{i}].hosts[{j}]"
            errors = wildcard_errors(host) if "*" in host else subdomain_errors(host)
            causes += [invalid(at, host, m) for m in errors]
        secret = as_str(item.get("secretName"))
        if secret:
            at = f"spec.tls[{i}].secretName"
            causes += [invalid(at, secret, m) for m in subdomain_errors(secret)]
    return causes


def _invalid_wildcard_allowed(old: Obj | None) -> bool:
    """allowInvalidWildcardHostRule: a stored wildcard rule that is already invalid."""
    if old is None:
        return False
    for rule in as_list(as_dict(old.get("spec")).get("rules")):
        rule = as_dict(rule)
        if "*" in as_str(rule.get("host")) and _rules_causes([{"http": rule.get("http")}]):
            return True
    return False


def validate_ingress(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes: list[Cause] = []
    rules = spec.get("rules")
    default = spec.get("defaultBackend")
    if not rules and default is None:
        value = rules if isinstance(rules, list) else None
        causes.append(
            invalid("spec", value, "either `defaultBackend` or `rules` must be specified")
        )
    if isinstance(default, dict):
        causes += _backend_causes(default, "spec.defaultBackend")
    if isinstance(rules, list) and rules:
        if _invalid_wildcard_allowed(old):
            kept = [
                r if "*" not in as_str(as_dict(r).get("host")) else {"host": as_dict(r).get("host")}
                for r in rules
            ]
            causes += _rules_causes(kept)
        else:
            causes += _rules_causes(rules)
    causes += _tls_causes(as_list(spec.get("tls")))
    class_name = spec.get("ingressClassName")
    if isinstance(class_name, str):
        causes += [
            invalid("spec.ingressClassName", class_name, m) for m in subdomain_errors(class_name)
        ]
    if old is None:
        annotation = as_dict(as_dict(obj.get("metadata")).get("annotations")).get(
            "kubernetes.io/ingress.class"
        )
        if isinstance(annotation, str) and isinstance(class_name, str) and annotation != class_name:
            causes.append(
                invalid(
                    "annotations.kubernetes.io/ingress.class",
                    annotation,
                    "must match `ingressClassName` when both are specified",
                )
            )
    return causes


# -- NetworkPolicy ----------------------------------------------------------------------------


def _port_causes(port: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    protocol = port.get("protocol")
    if isinstance(protocol, str) and protocol not in ("TCP", "UDP", "SCTP"):
        causes.append(not_supported(f"{path}.protocol", Typed(protocol), ["TCP", "UDP", "SCTP"]))
    value, end = port.get("port"), port.get("endPort")
    if value is not None:
        if isinstance(value, int) and not isinstance(value, bool):
            causes += [invalid(f"{path}.port", value, m) for m in port_number_errors(value)]
            if isinstance(end, int):
                if end < value:
                    causes.append(
                        invalid(f"{path}.endPort", value, "must be greater than or equal to `port`")
                    )
                if end < 1:
                    causes.append(
                        invalid(f"{path}.endPort", end, "must be greater than or equal to 1")
                    )
                if end > 65535:
                    causes.append(
                        invalid(f"{path}.endPort", end, "must be less than or equal to 65535")
                    )
        else:
            if end is not None:
                causes.append(
                    invalid(
                        f"{path}.endPort", end, "may not be specified when `port` is non-numeric"
                    )
                )
            name = as_str(value)
            causes += [invalid(f"{path}.port", name, m) for m in port_name_errors(name)]
    elif end is not None:
        causes.append(
            invalid(f"{path}.endPort", end, "may not be specified when `port` is not specified")
        )
    return causes


def _cidr_causes(text: str, path: str, allowed: set[str]) -> list[Cause]:
    """IsValidCIDRForLegacyField (a CIDR, IPv4 leading zeros refused for new values)."""
    if text in allowed:
        return []
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return [
            invalid(
                path,
                text,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            )
        ]
    return []


def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _ip_block_causes(block: Obj, path: str, allowed: set[str]) -> list[Cause]:
    cidr = as_str(block.get("cidr"))
    if not cidr:
        return [required(f"{path}.cidr")]
    causes = _cidr_causes(cidr, f"{path}.cidr", allowed)
    net = _network(cidr)
    if net is None:
        return causes
    for i, text in enumerate(as_list(block.get("except"))):
        text = as_str(text)
        at = f"{path}.except[{i}]"
        causes += _cidr_causes(text, at, allowed)
        sub = _network(text)
        if sub is None:
            continue
        if (
            sub.version != net.version
            or sub.network_address not in net
            or net.prefixlen >= sub.prefixlen
        ):
            causes.append(invalid(at, text, "must be a strict subset of `cidr`"))
    return causes


def _peer_causes(peer: Obj, path: str, allowed: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    count = 0
    for name in ("podSelector", "namespaceSelector"):
        if isinstance(peer.get(name), dict):
            count += 1
            causes += selector_causes(peer[name], f"{path}.{name}")
    block = peer.get("ipBlock")
    if isinstance(block, dict):
        count += 1
        causes += _ip_block_causes(block, f"{path}.ipBlock", allowed)
    if count == 0:
        causes.append(required(path, "must specify a peer"))
    elif count > 1 and isinstance(block, dict):
        causes.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return causes


def _old_cidrs(old: Obj | None) -> set[str]:
    found: set[str] = set()
    if old is None:
        return found
    spec = as_dict(old.get("spec"))
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for rule in as_list(spec.get(direction)):
            for peer in as_list(as_dict(rule).get(peers)):
                block = as_dict(as_dict(peer).get("ipBlock"))
                if block:
                    found.add(as_str(block.get("cidr")))
                    found.update(as_str(e) for e in as_list(block.get("except")))
    return found


def validate_network_policy(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    allowed = _old_cidrs(old)
    causes = selector_causes(spec.get("podSelector"), "spec.podSelector")
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(as_list(spec.get(direction))):
            rule = as_dict(rule)
            at = f"spec.{direction}[{i}]"
            for j, port in enumerate(as_list(rule.get("ports"))):
                causes += _port_causes(as_dict(port), f"{at}.ports[{j}]")
            for j, peer in enumerate(as_list(rule.get(peers))):
                causes += _peer_causes(as_dict(peer), f"{at}.{peers}[{j}]", allowed)
    types = as_list(spec.get("policyTypes"))
    if len(types) > 2:
        return [*causes, too_many("spec.policyTypes", len(types), 2)]
    for i, ptype in enumerate(types):
        if ptype not in ("Ingress", "Egress"):
            causes.append(
                not_supported(f"spec.policyTypes[{i}]", Typed(as_str(ptype)), ["Ingress", "Egress"])
            )
    return causes
