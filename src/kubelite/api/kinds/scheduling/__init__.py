"""The scheduling.k8s.io group (kube's ``pkg/registry/scheduling``): PriorityClasses, with the
Priority admission plugin and the system classes every cluster has."""

from __future__ import annotations

from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.scheduling import priorityclasses

RESOURCES: tuple[Resource, ...] = (priorityclasses.RESOURCE,)
