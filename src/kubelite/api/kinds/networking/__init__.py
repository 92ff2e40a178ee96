"""The networking.k8s.io group (kube's ``pkg/registry/networking``): Ingresses, IngressClasses
and NetworkPolicies, which differ from the default strategy only in tracking a generation and
in their defaults (:mod:`.defaults`: pkg/apis/networking/v1/defaults.go) and validation
(:mod:`.validation`: pkg/apis/networking/validation)."""

from __future__ import annotations

from kubelite.api.kinds.networking.defaults import default_ingress_class, default_network_policy
from kubelite.api.kinds.networking.validation import validate_ingress, validate_network_policy
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy

GROUP = "networking.k8s.io"

RESOURCES: tuple[Resource, ...] = (
    Resource(
        GROUP, "ingresses", BuiltinStrategy(validators=(validate_ingress,), tracks_generation=True)
    ),
    Resource(
        GROUP,
        "ingressclasses",
        BuiltinStrategy(defaulters=(default_ingress_class,), tracks_generation=True),
    ),
    Resource(
        GROUP,
        "networkpolicies",
        BuiltinStrategy(
            defaulters=(default_network_policy,),
            validators=(validate_network_policy,),
            tracks_generation=True,
        ),
    ),
)
