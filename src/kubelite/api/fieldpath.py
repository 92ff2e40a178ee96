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
(fields by name, then keys, then values, then indexes). Sets are values: every operation returns
a new set and never changes its operands.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

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
    """The element of the associative-list item whose key fields are ``fields``."""
    return "k:" + orjson.dumps(dict(sorted(fields.items()))).decode()


def value(item: Any) -> str:
    """The element of the set item ``item`` (a scalar)."""
    return "v:" + orjson.dumps(item).decode()


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

    def child(self, element: str) -> FieldSet:
        """The subset below ``element``, created if absent (in place; for building)."""
        found = self.children.get(element)
        if found is None:
            found = self.children[element] = FieldSet()
        return found

    def prune(self) -> FieldSet:
        """Drop empty children (in place), and return self."""
        for element in [e for e, c in self.children.items() if c.prune().empty()]:
            del self.children[element]
        return self

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

    def with_prefix(self, element: str) -> FieldSet:
        """The paths below ``element``, without it (empty when there are none)."""
        return self.children.get(element) or _EMPTY

    def paths(self, prefix: Path = ()) -> Iterator[Path]:
        """Every path, shallower ones first, each level in sorted order (structured-merge-diff's
        ``Set.Iterate``)."""
        for element in sorted(self.members, key=sort_key):
            yield (*prefix, element)
        for element in sorted(self.children, key=sort_key):
            yield from self.children[element].paths((*prefix, element))

    def size(self) -> int:
        return len(self.members) + sum(c.size() for c in self.children.values())

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
        """The set a FieldsV1 document encodes; :class:`FieldsV1Error` when it is not one."""
        if not isinstance(document, dict):
            raise FieldsV1Error(f"expected an object, got {type(document).__name__}")
        out = cls()
        for element, body in document.items():
            if element == ".":
                continue
            if not isinstance(body, dict):
                raise FieldsV1Error(f"expected an object for {element!r}")
            _check_element(element)
            if not body or "." in body:
                out.members.add(element)
            if any(k != "." for k in body):
                sub = cls.from_fields_v1(body)
                if not sub.empty():
                    out.children[element] = sub
        return out


_EMPTY = FieldSet()


def _check_element(element: str) -> None:
    kind, sep, payload = element.partition(":")
    if not sep or kind not in "fkvi" or len(kind) != 1:
        raise FieldsV1Error(f"unknown path element {element!r}")
    if kind in "kv":
        try:
            parsed = json.loads(payload)
        except ValueError as exc:
            raise FieldsV1Error(f"bad path element {element!r}: {exc}") from None
        if kind == "k" and not isinstance(parsed, dict):
            raise FieldsV1Error(f"bad key {element!r}")
    elif kind == "i" and not payload.lstrip("-").isdigit():
        raise FieldsV1Error(f"bad index {element!r}")


# -- ordering and printing ---------------------------------------------------------------------

_RANK = {"f": 0, "k": 1, "v": 2, "i": 3}


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


def _go_value(item: Any) -> str:
    """A value as structured-merge-diff's ``value.ToString`` prints it (strings quoted)."""
    if isinstance(item, str):
        return json.dumps(item, ensure_ascii=False)
    if item is None:
        return "null"
    if isinstance(item, bool):
        return "true" if item else "false"
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
