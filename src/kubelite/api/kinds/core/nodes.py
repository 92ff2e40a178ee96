"""Nodes (kube's pkg/registry/core/node): the status sent on create is kept."""

from __future__ import annotations

from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.core.defaults import default_node
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy

Obj = dict[str, Any]


class NodeStrategy(BuiltinStrategy):
    """Nodes: the status sent on create is kept (kubelets register with it)."""

    defaulters = (default_node,)

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        pass


RESOURCE = Resource("", "nodes", NodeStrategy())
