"""The flowcontrol.apiserver.k8s.io group (kube's ``pkg/registry/flowcontrol``): FlowSchemas and
PriorityLevelConfigurations, with their defaults (:mod:`.defaults`), validation
(:mod:`.validation`) and the bootstrap objects every cluster has (:mod:`.bootstrap`). API
Priority and Fairness itself is the server's (:mod:`kubelite.server.flowcontrol`)."""

from __future__ import annotations

from kubelite.api.kinds.flowcontrol.defaults import default_flow_schema, default_priority_level
from kubelite.api.kinds.flowcontrol.validation import (
    validate_flow_schema,
    validate_priority_level,
)
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.strategy import STATUS_KEEPS_METADATA

GROUP = "flowcontrol.apiserver.k8s.io"
_STATUS_KEEPS = (*STATUS_KEEPS_METADATA, "generateName")

RESOURCES: tuple[Resource, ...] = (
    Resource(
        GROUP,
        "flowschemas",
        BuiltinStrategy(
            defaulters=(default_flow_schema,),
            validators=(validate_flow_schema,),
            tracks_generation=True,
            status_keeps=_STATUS_KEEPS,
        ),
    ),
    Resource(
        GROUP,
        "prioritylevelconfigurations",
        BuiltinStrategy(
            defaulters=(default_priority_level,),
            validators=(validate_priority_level,),
            tracks_generation=True,
            status_keeps=_STATUS_KEEPS,
        ),
    ),
)
