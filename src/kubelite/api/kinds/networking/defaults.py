"""Defaults: networking.k8s.io/v1: NetworkPolicy, IngressClass
(pkg/apis/networking/v1/defaults.go); discovery.k8s.io/v1 EndpointSlice
(pkg/apis/discovery/v1/defaults.go). Ingress has no defaults at networking.k8s.io/v1 (its
``pathType`` is required); only its pod-less fields, so nothing to do."""

from __future__ import annotations

from kubelite.api.kinds.core.poddefaults import ensure, items, set_if_nil, sub
from kubelite.api.kinds.rules import Obj


def default_network_policy(obj: Obj) -> None:
    """SetDefaults_NetworkPolicy (policyTypes: Ingress, plus Egress when egress rules are given)
    and SetDefaults_NetworkPolicyPort (protocol TCP)."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    for direction in ("ingress", "egress"):
        for rule in items(spec, direction):
            for port in items(rule, "ports"):
                set_if_nil(port, "protocol", "TCP")
    if not spec.get("policyTypes"):
        egress = spec.get("egress")
        has_egress = isinstance(egress, list) and len(egress) > 0
        spec["policyTypes"] = ["Ingress", "Egress"] if has_egress else ["Ingress"]


def default_ingress_class(obj: Obj) -> None:
    """SetDefaults_IngressClass: the parameters' scope is Cluster."""
    parameters = sub(sub(obj, "spec"), "parameters")
    if parameters is not None:
        set_if_nil(parameters, "scope", "Cluster")
