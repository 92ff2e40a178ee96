"""Secrets (kube's pkg/registry/core/secret): ``stringData`` folded into ``data``, ``type``
defaulted to Opaque and kept on update, the data's keys and size validated."""

from __future__ import annotations

from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.core.defaults import fold_string_data
from kubelite.api.kinds.core.validation.configdata import validate_secret
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy

Obj = dict[str, Any]


class SecretStrategy(BuiltinStrategy):
    """Secrets: ``type`` defaults to Opaque, and an update that leaves it empty keeps the
    stored one."""

    defaulters = (fold_string_data,)
    validators = (validate_secret,)

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        super().default(info, obj)
        if not obj.get("type"):
            obj["type"] = "Opaque"

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        if not new.get("type") and old.get("type"):
            new["type"] = old["type"]
        super().prepare_for_update(info, new, old)


RESOURCE = Resource("", "secrets", SecretStrategy())
