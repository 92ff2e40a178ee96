"""The field labels a kind's field selectors accept (``?fieldSelector=``), declared with the kind:
kube's per-kind ``GetAttrs`` and field label conversion funcs (e.g. kubernetes
``pkg/registry/core/pod/strategy.go`` ``ToSelectableFields``), as data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The field labels every kind accepts (apimachinery ``pkg/runtime``
#: DefaultMetaV1FieldSelectorConversion).
DEFAULT_FIELDS: tuple[str, ...] = ("metadata.name", "metadata.namespace")

#: kube's text for a label outside a kind's set, ``{label}`` the label as given, ``{quoted}`` Go's
#: ``%q`` of it: the conversion most kinds register, and runtime's default for kinds without one.
NOT_SUPPORTED = "field label not supported: {label}"
NOT_KNOWN = '{quoted} is not a known field selector: only "metadata.name", "metadata.namespace"'


@dataclass(frozen=True, slots=True)
class FieldLabel:
    """One field label a kind's field selectors accept, and where its value is read.

    ``paths`` are paths into the object as served (each a tuple of keys; a decimal key indexes a
    list); the first that holds a non-empty scalar gives the value, as a kind's GetAttrs falls
    back (an Event's ``source`` is ``source.component``, else ``reportingComponent``). None
    holding one: ``zero``, the Go zero value of the field (``false``, ``0``). No paths at all: a
    label the conversion accepts but GetAttrs never sets (Pod ``status.podIPs``): always ``zero``.
    """

    name: str
    paths: tuple[tuple[str, ...], ...]
    zero: str = ""

    @classmethod
    def at(cls, name: str, *paths: str, zero: str = "") -> FieldLabel:
        """``name`` read at the dotted ``paths`` (default: the label itself)."""
        dotted = paths or (name,)
        return cls(name, tuple(tuple(p.split(".")) for p in dotted if p), zero)

    def value(self, obj: Mapping[str, Any]) -> str:
        for path in self.paths:
            text = _scalar_text(_walk(obj, path))
            if text:
                return text
        return self.zero


DEFAULT_LABELS: tuple[FieldLabel, ...] = tuple(FieldLabel.at(f) for f in DEFAULT_FIELDS)


def _walk(node: Any, path: Sequence[str]) -> Any:
    for key in path:
        if isinstance(node, Mapping):
            node = node.get(key)
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def _scalar_text(value: Any) -> str:
    """A scalar as Go's fields.Set holds it; "" for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else ""
