"""Defaults: networking.k8s.io/v1: Ingress, NetworkPolicy, IngressClass
(pkg/apis/networking/v1/defaults.go)."""

from __future__ import annotations

from kubelite.api.kinds.rules import Defaulter, Kind

DEFAULTERS: dict[Kind, Defaulter] = {}
