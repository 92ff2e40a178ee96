"""Sets of field paths, the currency of server-side apply (structured-merge-diff's ``fieldpath``).

A path is a tuple of *path elements*, each kept in its FieldsV1 spelling, so a set decodes from
and encodes to ``metadata.managedFields[].fieldsV1`` without translation:

- ``f:<name>``: a field of a struct or a key of a map (``f:data``, ``f:app.kubernetes.io/name``);
- ``k:<json>``: an item of an associative list with keys, the key fields as compact JSON sorted
  by name (``k:{"containerPort":80,"protocol":"TCP"}``);
- ``v:<json>``: an item of a set (``v:"a"``);
- ``i:<n>``: a list index (never produced for Kubernetes objects).

A :class:`FieldSet` is a trie: ``members`` are the elements owned at this level, ``children``
the subsets below elements. FieldsV1 writes a member as ``{}`` and a member that also has
children with a ``".": {}`` entry first; siblings are sorted as structured-merge-diff sorts them
(fields by name, then keys, then values, then indexes). Sets are values once built (``of``,
``insert``, decoding): the operations never change their operands, and may return one of them
unchanged, so a set is shared and never changed after it is built.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

from kubelite.api.errors import go_quote

__all__ = [
    "FieldSet",
    "FieldsV1Error",
    "Path",
    "field",
    "index",
    "key",
    "path_string",
    "value",
]

Path = tuple[str, ...]


class FieldsV1Error(ValueError):
    """A fieldsV1 document that is not a valid encoding of a set."""


def field(name: str) -> str:
    return "f:" + name


def key(fields: Mapping[str, Any]) -> str:
    """The element of the associative-list item whose key fields are ``fields`` (as
    structured-merge-diff writes it: names sorted and not HTML-escaped, values as its JSON)."""
    body = ",".join(_json_string(n, html=False) + ":" + _json(fields[n]) for n in sorted(fields))
    return "k:{" + body + "}"


def value(item: Any) -> str:
    """The element of the set item ``item`` (a scalar)."""
    return "v:" + _json(item)


def index(i: int) -> str:
    return f"i:{i}"


class FieldSet:
    """A set of paths (structured-merge-diff's ``fieldpath.Set``). Empty children are never
    kept, so a set is empty exactly when it has no members and no children."""

    __slots__ = ("children", "members")

    def __init__(
        self, members: set[str] | None = None, children: dict[str, FieldSet] | None = None
    ) -> None:
        self.members: set[str] = members if members is not None else set()
        self.children: dict[str, FieldSet] = children if children is not None else {}

    @classmethod
    def of(cls, *paths: Sequence[str]) -> FieldSet:
        out = cls()
        for path in paths:
            out.insert(path)
        return out

    # -- building ------------------------------------------------------------------------------

    def insert(self, path: Sequence[str]) -> None:
        """Add ``path`` (in place; only for sets being built)."""
        if not path:
            return
        node = self
        for element in path[:-1]:
            child = node.children.get(element)
            if child is None:
                child = node.children[element] = FieldSet()
            node = child
        node.members.add(path[-1])

    # -- reading -------------------------------------------------------------------------------

    def empty(self) -> bool:
        return not self.members and not self.children

    def has(self, path: Sequence[str]) -> bool:
        node: FieldSet | None = self
        for element in path[:-1]:
            node = node.children.get(element)  # type: ignore[union-attr]
            if node is None:
                return False
        return bool(path) and path[-1] in node.members  # type: ignore[union-attr]

    def paths(self, prefix: Path = ()) -> Iterator[Path]:
        """Every path, shallower ones first, each level in sorted order (structured-merge-diff's
        ``Set.Iterate``)."""
        for element in sorted(self.members, key=sort_key):
            yield (*prefix, element)
        for element in sorted(self.children, key=sort_key):
            yield from self.children[element].paths((*prefix, element))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSet):
            return NotImplemented
        return self.members == other.members and self.children == other.children

    def __repr__(self) -> str:
        return f"FieldSet({[path_string(p) for p in self.paths()]})"

    # -- algebra -------------------------------------------------------------------------------

    def union(self, other: FieldSet) -> FieldSet:
        if other.empty():
            return self
        if self.empty():
            return other
        children = dict(self.children)
        for element, sub in other.children.items():
            mine = children.get(element)
            children[element] = sub if mine is None else mine.union(sub)
        return FieldSet(self.members | other.members, children)

    def intersection(self, other: FieldSet) -> FieldSet:
        children: dict[str, FieldSet] = {}
        for element, sub in self.children.items():
            theirs = other.children.get(element)
            if theirs is not None:
                both = sub.intersection(theirs)
                if not both.empty():
                    children[element] = both
        return FieldSet(self.members & other.members, children)

    def difference(self, other: FieldSet) -> FieldSet:
        """The paths of self not in ``other`` (exact paths: a member of ``other`` does not take
        away the paths below it)."""
        if other.empty():
            return self
        children: dict[str, FieldSet] = {}
        for element, sub in self.children.items():
            theirs = other.children.get(element)
            rest = sub if theirs is None else sub.difference(theirs)
            if not rest.empty():
                children[element] = rest
        return FieldSet(self.members - other.members, children)

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """The paths of self neither in ``other`` nor below a member of ``other`` (how reset
        fields are taken out of every set)."""
        if other.empty():
            return self
        children: dict[str, FieldSet] = {}
        for element, sub in self.children.items():
            if element in other.members:
                continue
            theirs = other.children.get(element)
            rest = sub if theirs is None else sub.recursive_difference(theirs)
            if not rest.empty():
                children[element] = rest
        return FieldSet(self.members - other.members, children)

    # -- FieldsV1 ------------------------------------------------------------------------------

    def to_fields_v1(self) -> dict[str, Any]:
        """The FieldsV1 document of this set (as structured-merge-diff writes it)."""
        out: dict[str, Any] = {}
        for element in sorted(self.members | self.children.keys(), key=sort_key):
            sub = self.children.get(element)
            if sub is None:
                out[element] = {}
            else:
                body = sub.to_fields_v1()
                out[element] = {".": {}, **body} if element in self.members else body
        return out

    @classmethod
    def from_fields_v1(cls, document: Any) -> FieldSet:
        """The set a FieldsV1 document encodes; :class:`FieldsV1Error` when it is not one.

        As structured-merge-diff reads it (serialize.go ``readIterV1``): ``null`` is an empty
        object, elements are normalised (``k:{ "b":1,"a":2}`` is ``k:{"a":2,"b":1}``), elements
        of an unknown type (``r:x``) are dropped, and an element is a member when its object
        is empty, holds ``"."``, or holds only dropped elements."""
        if document is None:
            return cls()
        if not isinstance(document, dict):
            raise FieldsV1Error(f"expected an object, got {type(document).__name__}")
        out = cls()
        for element, body in document.items():
            if element == ".":
                continue
            if body is None:
                body = {}
            elif not isinstance(body, dict):
                raise FieldsV1Error(f"expected an object for {element!r}")
            canonical = _canonical(element)
            if canonical is None:
                continue
            sub = cls.from_fields_v1(body)
            if "." in body or sub.empty():
                out.members.add(canonical)
            if not sub.empty():
                out.children[canonical] = sub
        return out

    @staticmethod
    def check_fields_v1(document: Any) -> None:
        """Raise :class:`FieldsV1Error` unless ``document`` is a FieldsV1 encoding (what
        :meth:`from_fields_v1` accepts), without building the set."""
        if document is None:
            return
        if not isinstance(document, dict):
            raise FieldsV1Error(f"expected an object, got {type(document).__name__}")
        for element, body in document.items():
            if element == ".":
                continue
            if body is not None and not isinstance(body, dict):
                raise FieldsV1Error(f"expected an object for {element!r}")
            if not element.startswith("f:"):
                _canonical(element)
            if body:
                FieldSet.check_fields_v1(body)


_INDEX = re.compile(r"[+-]?[0-9]+")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _canonical(element: str) -> str | None:
    """``element`` as structured-merge-diff re-serialises it (serialize-pe.go
    ``DeserializePathElement``), None for an unknown element type (dropped)."""
    if element.encode("utf-8", "surrogatepass")[1:2] != b":":  # Go looks at the second byte
        raise FieldsV1Error(f"bad path element {element!r}: expected <type>:<value>")
    kind, payload = element[0], element[2:]
    if kind == "f":
        return element
    if kind == "i":
        if len(payload) > 20 or not _INDEX.fullmatch(payload):
            raise FieldsV1Error(f"bad index {element!r}")
        if not -(2**63) <= int(payload) < 2**63:
            raise FieldsV1Error(f"bad index {element!r}: out of range")
        return index(int(payload))
    if kind not in "kv":
        return None
    try:
        parsed = json.loads(payload, parse_constant=_reject_constant)
        if kind == "v":
            return value(parsed)
        if isinstance(parsed, dict):
            return key(parsed)
    except ValueError as exc:
        raise FieldsV1Error(f"bad path element {element!r}: {exc}") from None
    raise FieldsV1Error(f"bad key {element!r}: not an object")


# -- structured-merge-diff's JSON (json-iterator, ConfigCompatibleWithStandardLibrary) --------

_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_JSON_SPECIAL = re.compile('["\\\\\x00-\x1f\ud800-\udfff]')
_JSON_SPECIAL_HTML = re.compile('["\\\\\x00-\x1f<>&\u2028\u2029\ud800-\udfff]')


def _json_escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _JSON_SHORT:
        return _JSON_SHORT[ch]
    if "\ud800" <= ch <= "\udfff":
        return "\\ufffd"  # not a valid rune; Go has no such string
    return f"\\u{ord(ch):04x}"


def _json_string(text: str, html: bool = True) -> str:
    """A JSON string as json-iterator writes it: ``"``, ``\\``, ``\\n``, ``\\r``, ``\\t``
    escaped short, other control characters as ``\\u00XX``; with ``html`` (every value, but not
    the field names of a key) also ``<``, ``>``, ``&``, U+2028 and U+2029 as ``\\uXXXX``."""
    pattern = _JSON_SPECIAL_HTML if html else _JSON_SPECIAL
    return '"' + pattern.sub(_json_escape, text) + '"'


def _json(item: Any) -> str:
    """A value as structured-merge-diff writes it in a ``k:`` or ``v:`` element: compact, maps
    with sorted keys, strings HTML-escaped, numbers as Go's float64/int64 (``1.0`` is ``1``)."""
    if item is None:
        return "null"
    if item is True:
        return "true"
    if item is False:
        return "false"
    if isinstance(item, str):
        return _json_string(item)
    if isinstance(item, int):
        if -(2**63) <= item < 2**63:
            return str(item)
        try:
            return _json_float(float(item))  # beyond int64 Go decodes a float64
        except OverflowError:
            raise ValueError(f"unsupported value: {item}") from None
    if isinstance(item, float):
        return _json_float(item)
    if isinstance(item, list | tuple):
        return "[" + ",".join(_json(v) for v in item) + "]"
    if isinstance(item, Mapping):
        return "{" + ",".join(_json_string(k) + ":" + _json(item[k]) for k in sorted(item)) + "}"
    raise TypeError(f"not a JSON value: {type(item).__name__}")


def _float_digits(number: float) -> tuple[str, str, int]:
    """(sign, shortest decimal digits, decimal point position): ``number`` is
    ``sign 0.<digits> * 10**point``. ValueError for NaN and infinities (Go writes no JSON)."""
    if not math.isfinite(number):
        raise ValueError(f"unsupported value: {number}")
    sign = "-" if math.copysign(1.0, number) < 0 else ""
    if number == 0:
        return sign, "0", 1
    parts = Decimal(repr(abs(number))).as_tuple()
    digits = "".join(map(str, parts.digits))
    point = len(digits) + int(parts.exponent)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return sign, stripped.rstrip("0"), point


def _format_f(sign: str, digits: str, point: int) -> str:
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _format_e(sign: str, digits: str, point: int) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exponent = point - 1
    return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"


def _json_float(number: float) -> str:
    """json-iterator's ``WriteFloat64``: shortest digits, ``%e`` below 1e-6 and from 1e21
    (``e-07`` shortened to ``e-7``), else ``%f``."""
    sign, digits, point = _float_digits(number)
    magnitude = abs(number)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = _format_e(sign, digits, point)
        return text[:-2] + text[-1] if text[-4:-1] == "e-0" else text
    return _format_f(sign, digits, point)


# -- ordering and printing ---------------------------------------------------------------------


def sort_key(element: str) -> tuple[Any, ...]:
    """structured-merge-diff's order: fields (by name), then keys, then values, then indexes."""
    kind, payload = element[0], element[2:]
    if kind == "f":
        return (0, payload.encode())
    if kind == "k":
        fields = json.loads(payload)
        return (1, tuple((name.encode(), _value_key(v)) for name, v in sorted(fields.items())))
    if kind == "v":
        return (2, _value_key(json.loads(payload)))
    return (3, int(payload))


def _value_key(item: Any) -> tuple[Any, ...]:
    """structured-merge-diff's value order: numbers, strings, booleans, lists, maps, null."""
    if isinstance(item, bool):
        return (2, item)
    if isinstance(item, int | float):
        return (0, item)
    if isinstance(item, str):
        return (1, item.encode())
    if isinstance(item, list):
        return (3, tuple(_value_key(v) for v in item))
    if isinstance(item, dict):
        return (4, tuple((k.encode(), _value_key(v)) for k, v in sorted(item.items())))
    return (5,)


def _go_float(number: float) -> str:
    """Go's ``%v`` of a float64 (``%g`` with the shortest digits: ``1``, ``1.5``, ``1e+06``)."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    sign, digits, point = _float_digits(number)
    if number != 0 and not -4 <= point - 1 < 6:
        return _format_e(sign, digits, point)
    return _format_f(sign, digits, point)


def _go_value(item: Any) -> str:
    """A value as structured-merge-diff's ``value.ToString`` prints it (strings quoted)."""
    if isinstance(item, str):
        return go_quote(item)
    if item is None:
        return "null"
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, float):
        return _go_float(item)
    if isinstance(item, list):
        return "[" + ",".join(_go_value(v) for v in item) + "]"
    if isinstance(item, dict):
        return "".join(f"{k}={_go_value(v)}" for k, v in sorted(item.items()))
    return str(item)


def element_string(element: str) -> str:
    kind, payload = element[0], element[2:]
    if kind == "f":
        return "." + payload
    if kind == "k":
        fields = json.loads(payload)
        return "[" + ",".join(f"{k}={_go_value(v)}" for k, v in sorted(fields.items())) + "]"
    if kind == "v":
        return f"[={_go_value(json.loads(payload))}]"
    return f"[{payload}]"


def path_string(path: Sequence[str]) -> str:
    """A path as conflict messages print it: ``.spec.containers[name="app"].image``."""
    return "".join(element_string(e) for e in path)
