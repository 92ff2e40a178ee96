"""Built-in kinds decoded as kube-apiserver decodes them: a JSON body read into the kind's Go
struct (sigs.k8s.io/json, ``UnmarshalCaseSensitivePreserveInts``), here walked by the kind's
OpenAPI definition in the catalogue, compiled once per kind into a tree of decoders. Nothing
here names a kind.

What decoding into a Go struct does, and so what :func:`decode` does to a body:

- A value of the wrong JSON type is an error in Go's words; the first such error is kept and
  decoding goes on, but an error returned by a type's own ``UnmarshalJSON`` (IntOrString,
  Quantity, Time) ends it and wins. The decoders of the scalar and special types (Quantity,
  IntOrString, Time, ``[]byte``) and their texts are :mod:`kubelite.api.encoding.scalars`'; a
  field of a named Go type OpenAPI does not record (``v1.PullPolicy``) is found in
  :mod:`kubelite.api.encoding.gotypes`.
- ``null`` means absent: the field is dropped (so defaults apply); in a map or a list it is the
  element type's zero value, as Go stores it. A ``metav1.Time``'s null is kept: Go encodes a
  zero Time as null (``creationTimestamp: null`` in a pod template).
- A field the struct does not declare is dropped (the strict-decoding complaint about it is
  :mod:`kubelite.api.machinery.validation`'s).
- The insides of ``RawExtension``, ``FieldsV1`` and untyped JSON are kept as they are.

The answers to a body that does not decode (400 on create and update, 422 on a patch) are
:mod:`kubelite.api.encoding.decodeerrors`'.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import orjson

from kubelite.api.catalogue import ResourceInfo, load_schema_definitions
from kubelite.api.encoding.decodeerrors import decode_error, unrecognized
from kubelite.api.encoding.gotypes import NAMED_FIELDS
from kubelite.api.encoding.scalars import (
    INT_RANGES,
    NULL_KEPT,
    ZERO,
    Dec,
    Fatal,
    Stack,
    State,
    decode_bool,
    decode_bytes,
    decode_int_or_string,
    decode_integer,
    decode_micro_time,
    decode_number,
    decode_quantity,
    decode_time,
    json_type,
    named_string,
    opaque,
    string_check,
    type_error,
)

__all__ = [
    "DecodeError",
    "builtin",
    "check",
    "custom",
    "decode",
    "decodes",
]

_DEFS = "#/$defs/"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_TIME = _META + "Time"
_MICRO_TIME = _META + "MicroTime"
_OBJECT_META = _META + "ObjectMeta"
#: Definitions whose Go types read any JSON (their own UnmarshalJSON): kept as sent.
_OPAQUE_SUFFIXES = (
    ".FieldsV1",
    ".RawExtension",
    ".JSON",
    ".JSONSchemaPropsOrArray",
    ".JSONSchemaPropsOrBool",
    ".JSONSchemaPropsOrStringArray",
)


class DecodeError(Exception):
    """A body that does not decode into its kind's Go struct; ``str()`` is Go's text."""


def _go_name(ref: str) -> tuple[str, str]:
    """A definition's Go struct name and type string: ``DeploymentSpec``, ``v1.DeploymentSpec``."""
    parts = ref.split(".")
    return parts[-1], ".".join(parts[-2:])


def _types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str) and x != "null"}
    return set()


class _Compiler:
    def __init__(self, definitions: dict[str, Any]) -> None:
        self.definitions = definitions
        self.structs: dict[str, tuple[Dec, str]] = {}
        #: named Go types' underlying types (``v1.Capability``: ``string``), for zero values
        self.underlying: dict[str, str] = {}

    def node(self, schema: dict[str, Any]) -> tuple[Dec, str]:
        """The decoder of ``schema`` and its Go type string."""
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS):
            return self.ref(ref[len(_DEFS) :])
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            return self.node(all_of[0])
        types = _types(schema)
        if "object" in types or "properties" in schema:
            properties = schema.get("properties")
            additional = schema.get("additionalProperties")
            if isinstance(additional, dict):
                return self.map(additional)
            if isinstance(properties, dict):
                return self.struct("", "", properties)
            return opaque, "map[string]interface {}"
        if "array" in types:
            items = schema.get("items")
            if isinstance(items, dict):
                return self.list(items)
            return opaque, "[]interface {}"
        fmt = schema.get("format")
        if "string" in types:
            if fmt == "byte":
                return decode_bytes, "[]uint8"
            return string_check, "string"
        if "integer" in types:
            gotype = fmt if fmt in INT_RANGES else "int64"
            return decode_integer(gotype), gotype
        if "boolean" in types:
            return decode_bool, "bool"
        if "number" in types:
            return decode_number, "float64"
        return opaque, "interface {}"

    def ref(self, name: str) -> tuple[Dec, str]:
        if name in self.structs:
            return self.structs[name]
        short, gotype = _go_name(name)
        if name == _QUANTITY:
            return decode_quantity, gotype
        if name == _INT_OR_STRING:
            return decode_int_or_string, gotype
        if name in (_TIME, _MICRO_TIME):
            return (decode_micro_time if name == _MICRO_TIME else decode_time), gotype
        if name.endswith(_OPAQUE_SUFFIXES):
            return opaque, gotype
        definition = self.definitions.get(name)
        if not isinstance(definition, dict):
            return opaque, gotype
        properties = definition.get("properties")
        types = _types(definition)
        if not isinstance(properties, dict):
            if "object" in types and not isinstance(definition.get("additionalProperties"), dict):
                properties = {}  # a struct without fields
            else:
                found = self.node(definition)
                self.structs[name] = (found[0], gotype)
                return self.structs[name]
        return self.struct(name, gotype, properties, short)

    def struct(
        self, name: str, gotype: str, properties: dict[str, Any], short: str = ""
    ) -> tuple[Dec, str]:
        fields: dict[str, Dec] = {}

        def dec(value: Any, st: State, stack: Stack, struct: str) -> Any:
            if type(value) is not dict:
                st.save(type_error(json_type(value), gotype or "struct {}", stack, struct))
                return value
            drop: list[str] | None = None
            for key, item in value.items():
                field = fields.get(key)
                if item is None and field in NULL_KEPT:
                    continue
                if field is None or item is None:
                    if drop is None:
                        drop = []
                    drop.append(key)
                    if field is None:
                        st.unknown = True
                    continue
                if field is string_check:
                    if type(item) is not str:
                        stack.append(key)
                        st.save(type_error(json_type(item), "string", stack, short))
                        stack.pop()
                    continue
                stack.append(key)
                new = field(item, st, stack, short)
                stack.pop()
                if new is not item:
                    value[key] = new
            if drop:
                for key in drop:
                    del value[key]
            return value

        if name:
            self.structs[name] = (dec, gotype)
        package, _, struct_name = name.rpartition(".")
        named = NAMED_FIELDS.get(package, {}).get(struct_name, {})
        for key, schema in properties.items():
            if isinstance(schema, dict):
                goname = named.get(key)
                fields[key] = (self.named(schema, goname) if goname else self.node(schema))[0]
        return dec, gotype

    def named(self, schema: dict[str, Any], goname: str) -> tuple[Dec, str]:
        """A field of a named Go type that OpenAPI does not record (:mod:`.gotypes`): a named
        string or integer, a slice of them, a named map (``v1.ResourceList``)."""
        types = _types(schema)
        items = schema.get("items")
        if "array" in types and isinstance(items, dict):
            element = goname[2:] if goname.startswith("[]") else ""
            item = self.named(items, element) if element else self.node(items)
            return self.list(items, item, goname)
        additional = schema.get("additionalProperties")
        if "object" in types and isinstance(additional, dict):
            return self.map(additional, goname)
        if "string" in types and schema.get("format") != "byte":
            self.underlying[goname] = "string"
            return named_string(goname), goname
        if "integer" in types:
            fmt = schema.get("format")
            self.underlying[goname] = fmt if fmt in INT_RANGES else "int64"
            return decode_integer(self.underlying[goname], goname), goname
        return self.node(schema)

    def map(self, schema: dict[str, Any], name: str = "") -> tuple[Dec, str]:
        item, item_type = self.node(schema)
        gotype = name or f"map[string]{item_type}"
        zero = self.zero(item_type)
        strings = item is string_check

        def dec(value: Any, st: State, stack: Stack, struct: str) -> Any:
            if type(value) is not dict:
                st.save(type_error(json_type(value), gotype, stack, struct))
                return value
            if strings:
                for key, element in value.items():
                    if type(element) is not str:
                        if element is None:
                            value[key] = ""
                        else:
                            st.save(type_error(json_type(element), "string", stack, struct))
                return value
            for key, element in value.items():
                if element is None:
                    value[key] = zero()
                    continue
                new = item(element, st, stack, struct)
                if new is not element:
                    value[key] = new
            return value

        return dec, gotype

    def list(
        self, schema: dict[str, Any], named: tuple[Dec, str] | None = None, name: str = ""
    ) -> tuple[Dec, str]:
        item, item_type = named or self.node(schema)
        gotype = name or f"[]{item_type}"
        zero = self.zero(item_type)

        def dec(value: Any, st: State, stack: Stack, struct: str) -> Any:
            if type(value) is not list:
                st.save(type_error(json_type(value), gotype, stack, struct))
                return value
            for index, element in enumerate(value):
                if element is None:
                    value[index] = zero()
                    continue
                new = item(element, st, stack, struct)
                if new is not element:
                    value[index] = new
            return value

        return dec, gotype

    def zero(self, gotype: str) -> Callable[[], Any]:
        """Go's zero value of an element type, as encoded (a nil slice or map is null)."""
        gotype = self.underlying.get(gotype, gotype)
        if gotype in ZERO:
            value = ZERO[gotype]
            return lambda: value
        if gotype.startswith(("[]", "map[", "*")) or gotype.endswith("interface {}"):
            return lambda: None
        return dict  # a struct: every field at its zero value, omitted


@functools.cache
def _compiled(schema_ref: str) -> Dec:
    compiler = _Compiler(load_schema_definitions())
    dec, _ = compiler.ref(schema_ref)
    return dec


def builtin(info: ResourceInfo | None) -> bool:
    """Whether ``info`` is decoded here: a kind with a definition in the catalogue (custom
    resources are pruned by their own schema)."""
    return info is not None and bool(info.schema_ref) and not info.schema


def custom(info: ResourceInfo | None) -> bool:
    """Whether ``info`` is a custom resource, whose ``metadata`` alone is decoded here."""
    return info is not None and bool(info.schema)


def decodes(info: ResourceInfo | None) -> bool:
    """Whether :func:`check` decodes anything of ``info``'s objects."""
    return builtin(info) or custom(info)


def check(info: ResourceInfo, obj: dict[str, Any]) -> bool:
    """Decode ``obj`` in place as ``info``'s Go struct: unknown fields and nulls dropped;
    :class:`DecodeError` (Go's text) for a value Go would not read. A custom resource's
    ``metadata`` is read into a ``metav1.ObjectMeta`` on its own, as apiextensions-apiserver's
    unstructuredSchemaCoercer does (objectmeta.GetObjectMetaWithOptions, malformed fields not
    dropped for a request), so its errors name ``ObjectMeta.<field>``. Returns whether a field
    the struct does not declare was dropped (what strict decoding calls an unknown field)."""
    if builtin(info):
        return _run(info.schema_ref, obj)[1]
    if custom(info) and obj.get("metadata") is not None:
        obj["metadata"], unknown = _run(_OBJECT_META, obj["metadata"])
        return unknown
    return False


def _run(schema_ref: str, value: Any) -> tuple[Any, bool]:
    state = State()
    try:
        new = _compiled(schema_ref)(value, state, [], "")
    except Fatal as fatal:
        raise DecodeError(str(fatal)) from None
    if state.error is not None:
        raise DecodeError(state.error)
    return new, state.unknown


def _type_meta_error(obj: dict[str, Any]) -> str | None:
    """The serializer's first read (``apiVersion`` and ``kind`` into an anonymous struct)."""
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if value is not None and type(value) is not str:
            return (
                "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{json_type(value)} into Go struct field .{key} of type string"
            )
    return None


def decode(info: ResourceInfo | None, obj: dict[str, Any], raw: bytes = b"") -> bool:
    """A create or update body decoded in place for ``info`` (the kind the storage serves);
    400 BadRequest with kube-apiserver's text when it does not decode. ``raw``: the body as
    sent (quoted in the message when its ``apiVersion``/``kind`` are not strings). Returns
    whether an unknown field was dropped (see :func:`check`)."""
    if info is None or not decodes(info):
        return False
    problem = _type_meta_error(obj) if builtin(info) else None
    if problem is not None:
        raise unrecognized(info, problem, raw or orjson.dumps(obj))
    try:
        return check(info, obj)
    except DecodeError as exc:
        raise decode_error(info, obj, str(exc)) from None
