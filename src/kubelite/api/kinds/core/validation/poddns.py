"""Validation: a pod's DNS settings and host names (pkg/apis/core/validation).

Sources: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go``: ``validatePodDNSConfig``
(RelaxedDNSSearchValidation is GA: searches may hold ``_`` and be ``.``),
``ValidateHostAliases``, and ``ValidatePodSpec``'s ``serviceAccountName`` and ``nodeName``
checks; apimachinery's ``IsValidIP`` and ``IsDNS1123SubdomainWithUnderscore``.
"""

from __future__ import annotations

import re
from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.core.validation.services import INVALID_IP
from kubelite.api.kinds.networking.validation import is_ip
from kubelite.api.kinds.validation.fields import as_dict, as_list, as_str, invalid, required
from kubelite.api.machinery.metavalidation import regex_error, subdomain_errors

Obj = dict[str, Any]


_SEARCH_FMT = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SEARCH_FMT = f"{_SEARCH_FMT}(\\.{_SEARCH_FMT})*"
_SEARCH_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' "
    "or '.', and must start and end with an alphanumeric character"
)


def _search_errors(search: str) -> list[str]:
    """IsDNS1123SubdomainWithUnderscore (RelaxedDNSSearchValidation, GA)."""
    errs = ["must be no more than 253 characters"] if len(search) > 253 else []
    if not re.fullmatch(_SEARCH_FMT, search):
        errs.append(regex_error(_SEARCH_MSG, _SEARCH_FMT, "example.com"))
    return errs


def dns_config_causes(spec: Obj, path: str) -> list[Cause]:
    """validatePodDNSConfig."""
    config = spec.get("dnsConfig")
    at = f"{path}.dnsConfig"
    if spec.get("dnsPolicy") == "None":
        if not isinstance(config, dict):
            return [required(at, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not as_list(config.get("nameservers")):
            return [
                required(
                    f"{at}.nameservers",
                    "must provide at least one DNS nameserver when `dnsPolicy` is None",
                )
            ]
    if not isinstance(config, dict):
        return []
    causes: list[Cause] = []
    servers = [as_str(s) for s in as_list(config.get("nameservers"))]
    if len(servers) > 3:
        causes.append(
            invalid(f"{at}.nameservers", servers, "must not have more than 3 nameservers")
        )
    for i, server in enumerate(servers):
        if not is_ip(server):
            causes.append(invalid(f"{at}.nameservers[{i}]", server, INVALID_IP))
    searches = [as_str(s) for s in as_list(config.get("searches"))]
    if len(searches) > 32:
        causes.append(
            invalid(f"{at}.searches", searches, "must not have more than 32 search paths")
        )
    if len(" ".join(searches)) > 2048:
        causes.append(
            invalid(
                f"{at}.searches",
                searches,
                "must not have more than 2048 characters (including spaces) in the search list",
            )
        )
    for i, search in enumerate(searches):
        if search != ".":
            trimmed = search.removesuffix(".")
            causes += [invalid(f"{at}.searches[{i}]", trimmed, m) for m in _search_errors(trimmed)]
    for i, option in enumerate(as_list(config.get("options"))):
        if not as_str(as_dict(option).get("name")):
            causes.append(required(f"{at}.options[{i}]", "must not be empty"))
    return causes


def host_aliases_causes(aliases: Any, path: str) -> list[Cause]:
    """ValidateHostAliases."""
    causes: list[Cause] = []
    for i, raw in enumerate(as_list(aliases)):
        alias = as_dict(raw)
        ip = as_str(alias.get("ip"))
        if not is_ip(ip):
            causes.append(invalid(f"{path}[{i}].ip", ip, INVALID_IP))
        for j, name in enumerate(as_list(alias.get("hostnames"))):
            at = f"{path}[{i}].hostnames[{j}]"
            causes += [invalid(at, as_str(name), m) for m in subdomain_errors(as_str(name))]
    return causes


def names_causes(spec: Obj, path: str) -> list[Cause]:
    """ValidateServiceAccountName and ValidateNodeName (DNS subdomains)."""
    causes: list[Cause] = []
    for key in ("serviceAccountName", "nodeName"):
        value = as_str(spec.get(key))
        if value:
            causes += [invalid(f"{path}.{key}", value, m) for m in subdomain_errors(value)]
    return causes


__all__ = ["dns_config_causes", "host_aliases_causes", "names_causes"]
