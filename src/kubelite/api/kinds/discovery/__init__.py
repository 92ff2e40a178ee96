"""The discovery group (kube's ``pkg/registry/discovery``): EndpointSlices."""

from __future__ import annotations

from kubelite.api.kinds.discovery import endpointslices
from kubelite.api.kinds.resource import Resource

RESOURCES: tuple[Resource, ...] = (endpointslices.RESOURCE,)
