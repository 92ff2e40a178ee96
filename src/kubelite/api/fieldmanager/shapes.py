"""What server-side apply needs to know of a kind's schema: which lists and maps are granular
(structured-merge-diff's schema, as kube-openapi's ``schemaconv`` derives it from OpenAPI).

A :class:`Shape` is one node: a scalar, a list (atomic, a set, or a map keyed by some of its
items' fields), a map (a struct with declared fields and/or a map of arbitrary keys; granular
or atomic), or *untyped* (deduced from the value: maps granular, lists atomic). Shapes are built
lazily from the raw schema on first use and cached, so recursive schemas (JSONSchemaProps) cost
nothing until walked.

Rules (kube-openapi ``pkg/schemaconv/smd.go``): ``x-kubernetes-list-type`` wins (``atomic``,
``set``, ``map`` with ``x-kubernetes-list-map-keys``); else ``x-kubernetes-patch-strategy``
``merge`` makes a map keyed by ``x-kubernetes-patch-merge-key`` (a set without one); every other
list is atomic. ``x-kubernetes-map-type: atomic`` makes a map atomic. An object with neither
properties nor additionalProperties, ``x-kubernetes-preserve-unknown-fields`` and a node without
a type are untyped; ``x-kubernetes-int-or-string`` is a scalar.

Built-in kinds come from the catalogue's OpenAPI definitions; a custom resource from its version's
``openAPIV3Schema`` with ``metadata`` as the standard ObjectMeta (as apiextensions-apiserver
builds its apply schema).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Final

from kubelite.api.catalogue import ResourceInfo, load_schema_definitions, parse_schema

__all__ = ["LIST", "MAP", "SCALAR", "UNTYPED", "Shape", "shape_of"]

SCALAR: Final = 0
LIST: Final = 1
MAP: Final = 2
UNTYPED: Final = 3

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_REF_PREFIX = "#/$defs/"
#: kube's OpenAPI defaults of list-map key fields that kubernetes-validate's schemas omit.
_KEY_DEFAULTS: Final = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.EndpointPort", "protocol"): "TCP",
    ("io.k8s.api.discovery.v1.EndpointPort", "protocol"): "TCP",
}
#: Struct fields that Go declares as values, not pointers, in the API types: the zero object of
#: a kind has them (so an object created by POST does not own them as added; §2 of the spec).
#: OpenAPI does not say which; these names are values wherever they occur, but for the pointers
#: listed after them.
_VALUE_STRUCTS: Final = frozenset(
    {"metadata", "spec", "status", "template", "strategy", "updateStrategy", "jobTemplate"}
)
_POINTER_STRUCTS: Final = frozenset({("io.k8s.api.core.v1.ReplicationControllerSpec", "template")})


class Shape:
    """One node of a kind's schema, as structured-merge-diff sees it."""

    __slots__ = (
        "_element",
        "_factory",
        "_fields",
        "_item",
        "_raw",
        "_zero",
        "atomic",
        "keys",
        "kind",
        "required",
    )

    def __init__(self, factory: _Factory, raw: Mapping[str, Any], kind: int) -> None:
        self._factory = factory
        self._raw = raw
        self.kind = kind
        self.atomic = False
        #: the key fields of an associative list ("" for a set); () for other lists
        self.keys: tuple[str, ...] = ()
        self.required: frozenset[str] = frozenset()
        self._fields: dict[str, Shape | None] = {}
        self._element: Shape | bool | None = False  # False: not resolved yet
        self._item: Shape | None = None
        self._zero: Any = None

    # -- maps ----------------------------------------------------------------------------------

    def field(self, name: str) -> Shape | None:
        """The declared field ``name`` of a struct; None when the struct does not declare it."""
        if name in self._fields:
            return self._fields[name]
        properties = self._raw.get("properties")
        sub = properties.get(name) if isinstance(properties, Mapping) else None
        found = self._factory.shape(sub) if sub is not None else None
        self._fields[name] = found
        return found

    def _field_owner(self) -> str:
        return str(self._raw.get("__definition__", ""))

    @property
    def element(self) -> Shape | None:
        """The shape of the values of keys the map does not declare (None: none allowed)."""
        if self._element is False:
            extra = self._raw.get("additionalProperties")
            if isinstance(extra, Mapping):
                self._element = self._factory.shape(extra)
            elif extra is True or self._raw.get("x-kubernetes-preserve-unknown-fields") is True:
                self._element = UNTYPED_SHAPE
            elif not self._raw.get("properties") and extra is None:
                self._element = UNTYPED_SHAPE  # a free-form object
            else:
                self._element = None
        return self._element  # type: ignore[return-value]

    def member(self, name: str) -> tuple[Shape | None, bool]:
        """(the shape of key ``name``, whether it is a declared struct field)."""
        if self.kind == UNTYPED:
            return UNTYPED_SHAPE, False
        declared = self.field(name)
        if declared is not None:
            return declared, True
        return self.element, False

    def key_default(self, name: str) -> Any:
        """The default of list-map key field ``name`` of this (item) struct, or None."""
        properties = self._raw.get("properties")
        sub = properties.get(name) if isinstance(properties, Mapping) else None
        if isinstance(sub, Mapping) and "default" in sub:
            return sub["default"]
        return _KEY_DEFAULTS.get((self._field_owner(), name))

    # -- lists ---------------------------------------------------------------------------------

    @property
    def item(self) -> Shape:
        if self._item is None:
            items = self._raw.get("items")
            self._item = self._factory.shape(items) if isinstance(items, Mapping) else UNTYPED_SHAPE
        return self._item

    # -- the zero value ------------------------------------------------------------------------

    def zero(self) -> dict[str, Any]:
        """The object a built-in kind's Go zero value encodes to: value-typed structs present,
        required fields present (null when not structs). A create is compared with it. Shared:
        never change it."""
        if self._zero is None:
            out: dict[str, Any] = {}
            properties = self._raw.get("properties")
            for name in properties if isinstance(properties, Mapping) else ():
                sub = self.field(name)
                if sub is None:
                    continue
                struct = sub.kind == MAP and not sub.atomic and bool(sub._raw.get("properties"))
                value = (
                    name in _VALUE_STRUCTS and (self._field_owner(), name) not in _POINTER_STRUCTS
                )
                if struct and (value or name in self.required):
                    out[name] = sub.zero()
                elif name in self.required:
                    out[name] = None
            self._zero = out
        zero: dict[str, Any] = self._zero
        return zero


class _Factory:
    """Shapes of one schema document (OpenAPI definitions, or one CRD schema), cached by node."""

    def __init__(self, definitions: Mapping[str, Any], document: Any = None) -> None:
        self.definitions = definitions
        self.document = document  # keeps the nodes (cached by id) alive
        self.cache: dict[int, Shape] = {}

    def shape(self, node: Any) -> Shape:
        if not isinstance(node, Mapping):
            return UNTYPED_SHAPE
        found = self.cache.get(id(node))
        if found is None:
            found = self.cache[id(node)] = self._build(self._flatten(node))
        return found

    def _flatten(self, node: Mapping[str, Any]) -> dict[str, Any]:
        """The node with its ``$ref`` and ``allOf`` chain folded in (outer keys win)."""
        out: dict[str, Any] = {}
        pending: list[Mapping[str, Any]] = [node]
        seen = 0
        while pending and seen < 32:
            current = pending.pop(0)
            seen += 1
            for k, v in current.items():
                if k == "properties" and isinstance(out.get(k), dict) and isinstance(v, Mapping):
                    out[k] = {**v, **out[k]}
                else:
                    out.setdefault(k, v)
            ref = current.get("$ref")
            if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
                name = ref[len(_REF_PREFIX) :]
                target = self.definitions.get(name)
                if isinstance(target, Mapping):
                    out.setdefault("__definition__", name)
                    pending.append(target)
            pending.extend(n for n in current.get("allOf") or () if isinstance(n, Mapping))
        out.pop("$ref", None)
        return out

    def _build(self, raw: dict[str, Any]) -> Shape:
        types = raw.get("type")
        kinds = {types} if isinstance(types, str) else set(types or ())
        kinds.discard("null")
        if raw.get("x-kubernetes-int-or-string") is True:
            return Shape(self, raw, SCALAR)
        if "array" in kinds:
            shape = Shape(self, raw, LIST)
            list_type = raw.get("x-kubernetes-list-type")
            strategy = str(raw.get("x-kubernetes-patch-strategy") or "").split(",")
            if list_type == "map":
                shape.keys = tuple(raw.get("x-kubernetes-list-map-keys") or ())
            elif list_type == "set":
                shape.keys = ("",)
            elif list_type is None and "merge" in strategy:
                merge_key = raw.get("x-kubernetes-patch-merge-key")
                shape.keys = (merge_key,) if isinstance(merge_key, str) else ("",)
            shape.atomic = not shape.keys
            return shape
        if "object" in kinds or "properties" in raw or "additionalProperties" in raw:
            shape = Shape(self, raw, MAP)
            shape.atomic = raw.get("x-kubernetes-map-type") == "atomic"
            shape.required = frozenset(raw.get("required") or ())
            if raw.get("x-kubernetes-embedded-resource") is True:
                shape._fields.update(apiVersion=_STRING, kind=_STRING, metadata=self._object_meta())
            return shape
        if kinds:
            return Shape(self, raw, SCALAR)
        return UNTYPED_SHAPE

    def _object_meta(self) -> Shape:
        return _builtin_factory().shape(load_schema_definitions()[_OBJECT_META])


UNTYPED_SHAPE = Shape(_Factory({}), {}, UNTYPED)
_STRING = Shape(_Factory({}), {"type": "string"}, SCALAR)


@functools.cache
def _builtin_factory() -> _Factory:
    return _Factory(load_schema_definitions())


def _custom_shape(schema_text: str) -> Shape:
    root_node = {**parse_schema(schema_text), "type": "object"}
    factory = _Factory({}, root_node)
    root = factory.shape(root_node)
    root._fields.update(apiVersion=_STRING, kind=_STRING, metadata=factory._object_meta())
    return root


_BY_SCHEMA: dict[str, Shape] = {}


def shape_of(info: ResourceInfo) -> Shape:
    """The shape of ``info``'s objects (untyped when the kind has no schema); remembered per
    schema (a write asks for it every time)."""
    key = info.schema or info.schema_ref
    found = _BY_SCHEMA.get(key)
    if found is None:
        found = _shape(info)
        if len(_BY_SCHEMA) < 4096:
            _BY_SCHEMA[key] = found
    return found


def _shape(info: ResourceInfo) -> Shape:
    if info.schema:
        return _custom_shape(info.schema)
    if info.schema_ref:
        node = load_schema_definitions().get(info.schema_ref)
        if node is not None:
            return _builtin_factory().shape(node)
    return UNTYPED_SHAPE
