"""The autoscaling group (kube's ``pkg/registry/autoscaling``): HorizontalPodAutoscalers."""

from __future__ import annotations

from kubelite.api.kinds.autoscaling import horizontalpodautoscalers
from kubelite.api.kinds.resource import Resource

RESOURCES: tuple[Resource, ...] = (horizontalpodautoscalers.RESOURCE,)
