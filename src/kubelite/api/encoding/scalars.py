"""The Go types :mod:`kubelite.api.encoding.decoding` reads a body into, one decoder each, and
Go's texts for a value they refuse: what ``encoding/json`` (decode.go, ``UnmarshalTypeError``)
and the types' own ``UnmarshalJSON`` say. Nothing here names a kind.

- A value of the wrong JSON type is an error worded as Go's ``encoding/json`` words it
  (``json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type
  int32``): the struct holding the field, the path of struct fields from the root (list indexes
  and map keys are not in it), the Go type. Integers out of their type's range, or not integral,
  are ``number <literal>``. Such an error is saved in the :class:`State` and decoding goes on;
  an error returned by a type's own ``UnmarshalJSON`` (IntOrString, Quantity, Time) is raised
  as :class:`Fatal` and ends it.
- ``resource.Quantity`` (apimachinery ``pkg/api/resource/quantity.go``) reads strings and
  numbers with ``ParseQuantity``'s errors (``quantities must match the regular expression
  '...'``, ``unable to parse quantity's suffix``), and is stored in canonical form, as kube
  re-encodes it (:mod:`kubelite.api.encoding.quantity`); ``intstr.IntOrString``
  (``pkg/util/intstr/intstr.go``) reads a string, or a number into an int32; ``metav1.Time`` and
  ``MicroTime`` (``pkg/apis/meta/v1/time.go``, ``micro_time.go``) parse RFC 3339 with
  ``time.Parse``'s errors (Go's ``time/format.go``); ``[]byte`` (``format: byte``) is standard
  base64 (``encoding/base64``: ``illegal base64 data at input byte N``).
- A ``metav1.Time``'s null is kept (:data:`NULL_KEPT`): Go encodes a zero Time as null
  (``creationTimestamp: null`` in a pod template). :data:`ZERO` holds the zero values a null
  in a map or a list becomes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kubelite.api.encoding import quantity

__all__ = [
    "INT_RANGES",
    "NULL_KEPT",
    "ZERO",
    "Dec",
    "Fatal",
    "Stack",
    "State",
    "base64_error",
    "decode_bool",
    "decode_bytes",
    "decode_int_or_string",
    "decode_integer",
    "decode_micro_time",
    "decode_number",
    "decode_quantity",
    "decode_time",
    "json_type",
    "named_string",
    "opaque",
    "quantity_error",
    "string_check",
    "time_error",
    "type_error",
]

INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class Fatal(Exception):
    """An error returned by a type's own UnmarshalJSON: decoding stops there."""


class State:
    """What decoding a body found: the first error saved, and whether a field was dropped."""

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
Dec = Callable[[Any, State, Stack, str], Any]


def json_type(value: Any) -> str:
    """A decoded JSON value's type as Go's errors name it (``string``, ``number``, ...)."""
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


def type_error(what: str, gotype: str, stack: Stack, struct: str) -> str:
    where = f"Go struct field {struct}.{'.'.join(stack)}" if struct or stack else "Go value"
    return f"json: cannot unmarshal {what} into {where} of type {gotype}"


def _number_text(value: Any) -> str:
    if type(value) is float:
        return repr(value) if value != int(value) or abs(value) < 1e16 else str(int(value))
    return str(value)


def decode_bool(value: Any, st: State, stack: Stack, struct: str) -> Any:
    if type(value) is not bool:
        st.save(type_error(json_type(value), "bool", stack, struct))
    return value


def decode_number(value: Any, st: State, stack: Stack, struct: str) -> Any:
    t = type(value)
    if t is not int and t is not float:
        st.save(type_error(json_type(value), "float64", stack, struct))
    return value


def decode_integer(gotype: str, name: str = "") -> Dec:
    """An integer of Go type ``gotype`` (its range), named ``name`` in errors (a named type:
    ``v1.Signal``) or ``gotype``."""
    low, high = INT_RANGES.get(gotype, INT_RANGES["int64"])
    gotype = name or gotype

    def dec(value: Any, st: State, stack: Stack, struct: str) -> Any:
        t = type(value)
        if t is int:
            if not low <= value <= high:
                st.save(type_error(f"number {value}", gotype, stack, struct))
        elif t is float:
            st.save(type_error(f"number {_number_text(value)}", gotype, stack, struct))
        else:
            st.save(type_error(json_type(value), gotype, stack, struct))
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


def decode_bytes(value: Any, st: State, stack: Stack, struct: str) -> Any:
    if type(value) is not str:
        st.save(type_error(json_type(value), "[]uint8", stack, struct))
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


def decode_quantity(value: Any, st: State, stack: Stack, struct: str) -> Any:
    """A Quantity field: read by its UnmarshalJSON and stored as its MarshalJSON writes it
    (``String()``: ``1024Mi`` is stored as ``1Gi``, the number ``1`` as ``"1"``)."""
    try:
        return str(quantity.parse_json(value))
    except quantity.QuantityError as exc:
        raise Fatal(str(exc)) from None


def decode_int_or_string(value: Any, st: State, stack: Stack, struct: str) -> Any:
    t = type(value)
    if t is str:
        return value
    if t is int:
        if not -(2**31) <= value <= 2**31 - 1:
            raise Fatal(type_error(f"number {value}", "int32", stack, struct))
        return value
    if t is float:
        raise Fatal(type_error(f"number {_number_text(value)}", "int32", stack, struct))
    raise Fatal(type_error(json_type(value), "int32", stack, struct))


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
    def dec(value: Any, st: State, stack: Stack, struct: str) -> Any:
        if type(value) is not str:
            # Time.UnmarshalJSON reads a string first (encoding/json's error, given context)
            raise Fatal(type_error(json_type(value), "string", stack, struct))
        problem = time_error(value, micro)
        if problem is not None:
            raise Fatal(problem)
        return value

    return dec


decode_time = _time(False)
decode_micro_time = _time(True)
#: metav1.Time is a struct: a null leaves it zero, and Go encodes a zero Time as null (kubectl
#: and kube-apiserver show ``creationTimestamp: null`` in templates), so its null is kept.
NULL_KEPT = frozenset([decode_time, decode_micro_time])


def opaque(value: Any, st: State, stack: Stack, struct: str) -> Any:
    return value


ZERO: dict[str, Any] = {
    "string": "",
    "bool": False,
    "int32": 0,
    "int64": 0,
    "float64": 0,
    "resource.Quantity": "0",
}


def named_string(name: str) -> Dec:
    """A string of a named Go type (``v1.PullPolicy``): its errors name that type."""

    def dec(value: Any, st: State, stack: Stack, struct: str) -> Any:
        if type(value) is not str:
            st.save(type_error(json_type(value), name, stack, struct))
        return value

    return dec


def string_check(value: Any, st: State, stack: Stack, struct: str) -> Any:
    """Marks a plain string field (checked inline by the struct decoder)."""
    if type(value) is not str:
        st.save(type_error(json_type(value), "string", stack, struct))
    return value
