"""Built-in kinds decoded as kube-apiserver decodes them: a JSON body read into the kind's Go
struct (sigs.k8s.io/json, ``UnmarshalCaseSensitivePreserveInts``), here walked by the kind's
OpenAPI definition in the catalogue. Nothing here names a kind.

What decoding into a Go struct does, and so what :func:`decode` does to a body:

- A value of the wrong JSON type is an error, worded as Go's ``encoding/json`` words it
  (``json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type
  int32``): the struct holding the field, the path of struct fields from the root (list indexes
  and map keys are not in it), the Go type. Integers out of their type's range, or not integral,
  are ``number <literal>``. The first such error is kept and decoding goes on, but an error
  returned by a type's own ``UnmarshalJSON`` (IntOrString, Quantity, Time) ends it and wins.
- ``resource.Quantity`` reads strings and numbers with ``ParseQuantity``'s errors (``quantities
  must match the regular expression '...'``, ``unable to parse quantity's suffix``), and is
  stored in canonical form, as kube re-encodes it (:mod:`kubelite.api.encoding.quantity`);
  ``intstr.IntOrString`` reads a string, or a number into an int32; ``metav1.Time`` and
  ``MicroTime`` parse RFC 3339 with ``time.Parse``'s errors; ``[]byte`` (``format: byte``) is
  standard base64 (``illegal base64 data at input byte N``).
- ``null`` means absent: the field is dropped (so defaults apply); in a map or a list it is the
  element type's zero value, as Go stores it. A ``metav1.Time``'s null is kept: Go encodes a
  zero Time as null (``creationTimestamp: null`` in a pod template).
- A field the struct does not declare is dropped (the strict-decoding complaint about it is
  :mod:`kubelite.api.machinery.validation`'s).
- The insides of ``RawExtension``, ``FieldsV1`` and untyped JSON are kept as they are.

kube-apiserver answers a decoding error on create and update with 400 BadRequest ``<Kind> in
version "<v>" cannot be handled as a <Kind>: <error>`` (endpoints/handlers create.go and
update.go, ``transformDecodeError``), and on a JSON or merge patch with 422 Invalid ``' "" is
invalid: patch: Invalid value: "<patched object>": <error>'`` (patch.go).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import orjson

from kubelite.api.catalogue import ResourceInfo, load_schema_definitions
from kubelite.api.encoding import jsoncodec, quantity
from kubelite.api.encoding.gotypes import NAMED_FIELDS
from kubelite.api.encoding.jsoncodec import MAX_DEPTH
from kubelite.api.errors import APIError, Cause, go_quote

__all__ = [
    "MAX_DEPTH",
    "DecodeError",
    "builtin",
    "check",
    "custom",
    "decode",
    "decode_error",
    "decodes",
    "depth_error",
    "json_depth",
    "patch_decode_error",
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

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class DecodeError(Exception):
    """A body that does not decode into its kind's Go struct; ``str()`` is Go's text."""


class _Fatal(Exception):
    """An error returned by a type's own UnmarshalJSON: decoding stops there."""


class _State:
    __slots__ = ("error", "unknown")

    def __init__(self) -> None:
        self.error: str | None = None
        #: whether a field the struct does not declare was dropped
        self.unknown = False

    def save(self, text: str) -> None:
        if self.error is None:
            self.error = text


Stack = list[str]
#: A compiled decoder: (value, state, field stack, name of the struct holding the field) ->
#: the decoded value (the same object, pruned in place, or a replacement).
Dec = Callable[[Any, _State, Stack, str], Any]


def _what(value: Any) -> str:
    t = type(value)
    if t is str:
        return "string"
    if t is bool:
        return "bool"
    if t is int or t is float:
        return "number"
    if t is dict:
        return "object"
    if t is list:
        return "array"
    return "null"


def _type_error(what: str, gotype: str, stack: Stack, struct: str) -> str:
    where = f"Go struct field {struct}.{'.'.join(stack)}" if struct or stack else "Go value"
    return f"json: cannot unmarshal {what} into {where} of type {gotype}"


def _number_text(value: Any) -> str:
    if type(value) is float:
        return repr(value) if value != int(value) or abs(value) < 1e16 else str(int(value))
    return str(value)


# --- scalars --------------------------------------------------------------------------------


def _bool(value: Any, st: _State, stack: Stack, struct: str) -> Any:
    if type(value) is not bool:
        st.save(_type_error(_what(value), "bool", stack, struct))
    return value


def _number(value: Any, st: _State, stack: Stack, struct: str) -> Any:
    t = type(value)
    if t is not int and t is not float:
        st.save(_type_error(_what(value), "float64", stack, struct))
    return value


def _integer(gotype: str, name: str = "") -> Dec:
    """An integer of Go type ``gotype`` (its range), named ``name`` in errors (a named type:
    ``v1.Signal``) or ``gotype``."""
    low, high = _INT_RANGES.get(gotype, _INT_RANGES["int64"])
    gotype = name or gotype

    def dec(value: Any, st: _State, stack: Stack, struct: str) -> Any:
        t = type(value)
        if t is int:
            if not low <= value <= high:
                st.save(_type_error(f"number {value}", gotype, stack, struct))
        elif t is float:
            st.save(_type_error(f"number {_number_text(value)}", gotype, stack, struct))
        else:
            st.save(_type_error(_what(value), gotype, stack, struct))
        return value

    return dec


_B64 = {
    c: i for i, c in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
}


def base64_error(text: str) -> str | None:
    """Go's ``base64.StdEncoding.Decode`` complaint about ``text``, or None when it decodes."""
    src = text.encode()
    n = len(src)
    si = 0
    while si < n:
        j = 0
        while j < 4:
            if si == n:
                if j == 0:
                    return None
                return f"illegal base64 data at input byte {si - j}"
            c = src[si]
            si += 1
            if c in _B64:
                j += 1
                continue
            if c in (10, 13):  # newlines are skipped
                continue
            if c != 61:  # '='
                return f"illegal base64 data at input byte {si - 1}"
            if j in (0, 1):
                return f"illegal base64 data at input byte {si - 1}"
            if j == 2:
                while si < n and src[si] in (10, 13):
                    si += 1
                if si == n:
                    return f"illegal base64 data at input byte {n}"
                if src[si] != 61:
                    return f"illegal base64 data at input byte {si - 1}"
                si += 1
            while si < n and src[si] in (10, 13):
                si += 1
            if si < n:
                return f"illegal base64 data at input byte {si}"
            return None
    return None


def _bytes(value: Any, st: _State, stack: Stack, struct: str) -> Any:
    if type(value) is not str:
        st.save(_type_error(_what(value), "[]uint8", stack, struct))
    else:
        problem = base64_error(value)
        if problem is not None:
            st.save(problem)
    return value


def quantity_error(text: str) -> str | None:
    """``resource.ParseQuantity``'s error for ``text`` (already trimmed), or None."""
    try:
        quantity.parse(text)
    except quantity.QuantityError as exc:
        return str(exc)
    return None


def _quantity(value: Any, st: _State, stack: Stack, struct: str) -> Any:
    """A Quantity field: read by its UnmarshalJSON and stored as its MarshalJSON writes it
    (``String()``: ``1024Mi`` is stored as ``1Gi``, the number ``1`` as ``"1"``)."""
    try:
        return str(quantity.parse_json(value))
    except quantity.QuantityError as exc:
        raise _Fatal(str(exc)) from None


def _int_or_string(value: Any, st: _State, stack: Stack, struct: str) -> Any:
    t = type(value)
    if t is str:
        return value
    if t is int:
        if not -(2**31) <= value <= 2**31 - 1:
            raise _Fatal(_type_error(f"number {value}", "int32", stack, struct))
        return value
    if t is float:
        raise _Fatal(_type_error(f"number {_number_text(value)}", "int32", stack, struct))
    raise _Fatal(_type_error(_what(value), "int32", stack, struct))


_DIGITS = frozenset("0123456789")

# metav1.Time and MicroTime: time.Parse(RFC3339 / RFC3339Micro, s), with Go's ParseError texts.
_RFC3339 = "2006-01-02T15:04:05Z07:00"
_RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
#: The layout's numeric elements after the year: (literal before, element, fixed width,
#: range, the range error's name; the day is checked against its month at the end).
_TIME_FIELDS = (
    ("-", "01", True, 1, 12, "month"),
    ("-", "02", True, 0, 99, ""),
    ("T", "15", False, 0, 23, "hour"),
    (":", "04", True, 0, 59, "minute"),
    (":", "05", True, 0, 59, "second"),
)


def _time_quote(text: str) -> str:
    """Go's time.quote: ``"`` and ``\\`` escaped, bytes outside printable ASCII as ``\\xNN``."""
    out = ['"']
    for ch in text:
        if ch < " " or ch >= "\x80":
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "replace"))
        else:
            out.append("\\" + ch if ch in '"\\' else ch)
    out.append('"')
    return "".join(out)


#: The common well-formed time (what servers and kubectl write): no error, no parse.
_PLAIN_TIME = re.compile(
    r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\dZ"
)


def time_error(text: str, micro: bool = False) -> str | None:
    """``time.Parse``'s error for ``text`` against RFC 3339 (or RFC3339Micro), or None."""
    if not micro and _PLAIN_TIME.fullmatch(text) and text[8:10] <= "28":
        return None  # a day every month has: the full check could only agree
    layout = _RFC3339_MICRO if micro else _RFC3339
    head = f"parsing time {_time_quote(text)}"

    def cannot(elem: str, rest: str) -> str:
        return f"{head} as {_time_quote(layout)}: cannot parse {_time_quote(rest)} as " + (
            _time_quote(elem)
        )

    def num(rest: str, fixed: bool) -> tuple[int, str] | None:
        if not rest or rest[0] not in _DIGITS:
            return None
        if len(rest) < 2 or rest[1] not in _DIGITS:
            return None if fixed else (int(rest[0]), rest[1:])
        return int(rest[:2]), rest[2:]

    value = text
    if len(value) < 4 or value[0] not in _DIGITS:
        return cannot("2006", value)
    if not all(c in _DIGITS for c in value[:4]):
        return cannot("2006", value[4:])
    year, value = int(value[:4]), value[4:]
    got: dict[str, int] = {}
    for literal, elem, fixed, low, high, name in _TIME_FIELDS:
        if not value.startswith(literal):
            return cannot(literal, value)
        value = value[len(literal) :]
        parsed = num(value, fixed)
        if parsed is None:
            return cannot(elem, value)
        got[elem], value = parsed
        if name and not low <= got[elem] <= high:
            return f"{head}: {name} out of range"
    if micro:
        if len(value) < 7:
            return cannot(".000000", value)
        if value[0] not in ".," or not all(c in _DIGITS for c in value[1:7]):
            return cannot(".000000", value[7:])
        value = value[7:]
    elif len(value) >= 2 and value[0] in ".," and value[1] in _DIGITS:
        i = 2
        while i < len(value) and value[i] in _DIGITS:
            i += 1
        value = value[i:]
    if value.startswith("Z"):
        value = value[1:]
    else:
        if len(value) < 6 or value[3] != ":":
            return cannot("Z07:00", value)
        zone, value = value[:6], value[6:]
        hours, minutes = num(zone[1:3], True), num(zone[4:6], True)
        if hours is None or minutes is None:
            return cannot("Z07:00", value)
        if hours[0] > 24:
            return f"{head}: time zone offset hour out of range"
        if minutes[0] > 60:
            return f"{head}: time zone offset minute out of range"
        if zone[0] not in "+-":
            return cannot("Z07:00", value)
    if value:
        return f"{head}: extra text: {_time_quote(value)}"
    month, day = got["01"], got["02"]
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if day < 1 or day > _DAYS[month - 1] or (month == 2 and day == 29 and not leap):
        return f"{head}: day out of range"
    return None


def _time(micro: bool) -> Dec:
    def dec(value: Any, st: _State, stack: Stack, struct: str) -> Any:
        if type(value) is not str:
            # Time.UnmarshalJSON reads a string first (encoding/json's error, given context)
            raise _Fatal(_type_error(_what(value), "string", stack, struct))
        problem = time_error(value, micro)
        if problem is not None:
            raise _Fatal(problem)
        return value

    return dec


_TIME_DEC = _time(False)
_MICRO_TIME_DEC = _time(True)
#: metav1.Time is a struct: a null leaves it zero, and Go encodes a zero Time as null (kubectl
#: and kube-apiserver show ``creationTimestamp: null`` in templates), so its null is kept.
_NULL_KEPT = frozenset([_TIME_DEC, _MICRO_TIME_DEC])


def _opaque(value: Any, st: _State, stack: Stack, struct: str) -> Any:
    return value


_ZERO: dict[str, Any] = {
    "string": "",
    "bool": False,
    "int32": 0,
    "int64": 0,
    "float64": 0,
    "resource.Quantity": "0",
}


# --- compiling a definition -----------------------------------------------------------------


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
            return _opaque, "map[string]interface {}"
        if "array" in types:
            items = schema.get("items")
            if isinstance(items, dict):
                return self.list(items)
            return _opaque, "[]interface {}"
        fmt = schema.get("format")
        if "string" in types:
            if fmt == "byte":
                return _bytes, "[]uint8"
            return _string_check, "string"
        if "integer" in types:
            gotype = fmt if fmt in _INT_RANGES else "int64"
            return _integer(gotype), gotype
        if "boolean" in types:
            return _bool, "bool"
        if "number" in types:
            return _number, "float64"
        return _opaque, "interface {}"

    def ref(self, name: str) -> tuple[Dec, str]:
        if name in self.structs:
            return self.structs[name]
        short, gotype = _go_name(name)
        if name == _QUANTITY:
            return _quantity, gotype
        if name == _INT_OR_STRING:
            return _int_or_string, gotype
        if name in (_TIME, _MICRO_TIME):
            return (_MICRO_TIME_DEC if name == _MICRO_TIME else _TIME_DEC), gotype
        if name.endswith(_OPAQUE_SUFFIXES):
            return _opaque, gotype
        definition = self.definitions.get(name)
        if not isinstance(definition, dict):
            return _opaque, gotype
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

        def dec(value: Any, st: _State, stack: Stack, struct: str) -> Any:
            if type(value) is not dict:
                st.save(_type_error(_what(value), gotype or "struct {}", stack, struct))
                return value
            drop: list[str] | None = None
            for key, item in value.items():
                field = fields.get(key)
                if item is None and field in _NULL_KEPT:
                    continue
                if field is None or item is None:
                    if drop is None:
                        drop = []
                    drop.append(key)
                    if field is None:
                        st.unknown = True
                    continue
                if field is _string_check:
                    if type(item) is not str:
                        stack.append(key)
                        st.save(_type_error(_what(item), "string", stack, short))
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
            return _named_string(goname), goname
        if "integer" in types:
            fmt = schema.get("format")
            self.underlying[goname] = fmt if fmt in _INT_RANGES else "int64"
            return _integer(self.underlying[goname], goname), goname
        return self.node(schema)

    def map(self, schema: dict[str, Any], name: str = "") -> tuple[Dec, str]:
        item, item_type = self.node(schema)
        gotype = name or f"map[string]{item_type}"
        zero = self.zero(item_type)
        strings = item is _string_check

        def dec(value: Any, st: _State, stack: Stack, struct: str) -> Any:
            if type(value) is not dict:
                st.save(_type_error(_what(value), gotype, stack, struct))
                return value
            if strings:
                for key, element in value.items():
                    if type(element) is not str:
                        if element is None:
                            value[key] = ""
                        else:
                            st.save(_type_error(_what(element), "string", stack, struct))
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

        def dec(value: Any, st: _State, stack: Stack, struct: str) -> Any:
            if type(value) is not list:
                st.save(_type_error(_what(value), gotype, stack, struct))
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
        if gotype in _ZERO:
            value = _ZERO[gotype]
            return lambda: value
        if gotype.startswith(("[]", "map[", "*")) or gotype.endswith("interface {}"):
            return lambda: None
        return dict  # a struct: every field at its zero value, omitted


def _named_string(name: str) -> Dec:
    """A string of a named Go type (``v1.PullPolicy``): its errors name that type."""

    def dec(value: Any, st: _State, stack: Stack, struct: str) -> Any:
        if type(value) is not str:
            st.save(_type_error(_what(value), name, stack, struct))
        return value

    return dec


def _string_check(value: Any, st: _State, stack: Stack, struct: str) -> Any:
    """Marks a plain string field (checked inline by the struct decoder)."""
    if type(value) is not str:
        st.save(_type_error(_what(value), "string", stack, struct))
    return value


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
    state = _State()
    try:
        new = _compiled(schema_ref)(value, state, [], "")
    except _Fatal as fatal:
        raise DecodeError(str(fatal)) from None
    if state.error is not None:
        raise DecodeError(state.error)
    return new, state.unknown


# --- the answers ----------------------------------------------------------------------------


def _claimed(info: ResourceInfo, obj: dict[str, Any]) -> tuple[str, str]:
    """The kind and version a body claims, defaulted from ``info`` (gvkWithDefaults)."""
    kind = obj.get("kind")
    api_version = obj.get("apiVersion")
    claimed_kind = kind if isinstance(kind, str) and kind else info.kind
    version = info.version
    if isinstance(api_version, str) and api_version:
        version = api_version.rpartition("/")[2] or info.version
    return claimed_kind, version


def summarize(raw: bytes, limit: int = 30) -> str:
    """apiserver's summarizeData: the body's start (hex unless it starts with ``{``)."""
    if not raw:
        return "<empty>"
    cut = raw[:limit]
    text = cut.decode("utf-8", "replace") if raw[:1] == b"{" else cut.hex()
    return text + " ..." if len(raw) > limit else text


def _unrecognized(info: ResourceInfo, reason: str, raw: bytes) -> APIError:
    return APIError(
        400,
        "BadRequest",
        f"the object provided is unrecognized (must be of type {info.kind}): {reason} "
        f"({summarize(raw)})",
    )


def _type_meta_error(obj: dict[str, Any]) -> str | None:
    """The serializer's first read (``apiVersion`` and ``kind`` into an anonymous struct)."""
    for key in ("apiVersion", "kind"):
        value = obj.get(key)
        if value is not None and type(value) is not str:
            return (
                "couldn't get version/kind; json parse error: json: cannot unmarshal "
                f"{_what(value)} into Go struct field .{key} of type string"
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
        raise _unrecognized(info, problem, raw or orjson.dumps(obj))
    try:
        return check(info, obj)
    except DecodeError as exc:
        raise decode_error(info, obj, str(exc)) from None


def decode_error(info: ResourceInfo, obj: dict[str, Any], reason: str) -> APIError:
    """400 BadRequest: ``<Kind> in version "<v>" cannot be handled as a <Kind>: <reason>``."""
    kind, version = _claimed(info, obj)
    return APIError(
        400,
        "BadRequest",
        f"{kind} in version {go_quote(version)} cannot be handled as a {info.kind}: {reason}",
    )


def go_json(value: Any) -> str:
    """``json.Marshal`` of a decoded map: keys sorted, compact, ``<``, ``>``, ``&`` escaped."""
    text = jsoncodec.dumps(value, orjson.OPT_SORT_KEYS).decode()
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def patch_decode_error(patched: dict[str, Any], reason: str) -> APIError:
    """422 Invalid for a patch whose result does not decode (patch.go): ``' "" is invalid:
    patch: Invalid value: "<patched object>": <reason>'``."""
    message = f"Invalid value: {go_quote(go_json(patched))}: {reason}"
    return APIError(
        422,
        "Invalid",
        f' "" is invalid: patch: {message}',
        {"causes": [Cause("FieldValueInvalid", message, "patch").as_dict()]},
    )


# --- nesting depth --------------------------------------------------------------------------

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def json_depth(raw: bytes, limit: int = MAX_DEPTH) -> tuple[int, str]:
    """The deepest nesting of arrays and objects in JSON text (strings skipped), counted up to
    ``limit + 1``, and the bracket that went past ``limit`` (``""`` when none did)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub(b"", raw)):
        c = match.group()
        if c == b"[" or c == b"{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth > limit:
                    return depth, c.decode()
        else:
            depth -= 1
    return deepest, ""


def depth_error(kind: str, raw: bytes, bracket: str) -> APIError:
    """400 for a body nested deeper than Go's JSON scanner allows: the serializer's first read
    (apiVersion and kind, encoding/json) fails with the scanner's syntax error."""
    reason = (
        "couldn't get version/kind; json parse error: "
        f"invalid character '{bracket or '{'}' exceeded max depth"
    )
    return APIError(
        400,
        "BadRequest",
        f"the object provided is unrecognized (must be of type {kind}): {reason} "
        f"({summarize(raw)})",
    )
