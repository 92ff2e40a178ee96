"""go-cmp's ``cmp.Diff`` report, for the Go values kube diffs in its messages (a pod update's
``pod updates may not change fields other than ...`` carries ``cmp.Diff(oldSpec, newSpec)``).

Source: github.com/google/go-cmp v0.7 ``cmp/report_compare.go`` (``FormatDiff``,
``formatDiffList``, ``coalesceAdjacentRecords``, two context records around a change,
verbosity limits), ``report_reflect.go`` (``FormatValue``, ``FormatType``, ``formatString``),
``report_text.go`` (compact and expanded text, key alignment, ``... // N identical fields``) and
``compare.go`` (what is a leaf: nil slices and pointers, a differing side missing). go-cmp prints
either regular or non-breaking spaces after the ``-``/``+`` markers, at random per process; this
prints regular ones. Not reproduced: the specialized line diff go-cmp uses for strings and
primitive slices of 32 or more elements, and its minimal edit scripts for slices whose lengths
differ (a common prefix and suffix are paired, the middle removed then inserted).

Values are modelled as Go's: a :class:`GoType` says what a value is; a struct is a dict from
field name to value (every field), a slice or map a list or dict (None when nil), a pointer a
:class:`Ptr` (None when nil), scalars Python's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from kubelite.api.errors import go_quote

_IDENT, _REMOVED, _INSERTED = 0x20, 0x2D, 0x2B  # ' ', '-', '+' (0 is "unknown")
_MAX_COLUMN = 80
_CONTEXT = 2


@dataclass(frozen=True)
class GoType:
    """A Go type: kind is struct, slice, map, ptr, string, int, bool or leaf (compared by an
    Equal method, printed by its String method: resource.Quantity)."""

    name: str
    kind: str
    elem: GoType | None = None
    fields: tuple[tuple[str, GoType], ...] = ()


@dataclass(frozen=True)
class Ptr:
    value: Any


class _Missing:
    """One side of a record that does not exist (an inserted or removed element)."""


MISSING = _Missing()


def is_zero(t: GoType, v: Any) -> bool:
    if v is None or v is MISSING:
        return True
    if t.kind == "struct":
        return all(is_zero(ft, v.get(fn)) for fn, ft in t.fields)
    if t.kind in ("slice", "map", "ptr"):
        return False
    return v in ("", 0, False)


def semantic_equal(t: GoType, x: Any, y: Any) -> bool:
    """apiequality.Semantic.DeepEqual: as Go's DeepEqual, but a nil and an empty slice or map
    are equal."""
    if t.kind in ("slice", "map"):
        x, y = x or ([] if t.kind == "slice" else {}), y or ([] if t.kind == "slice" else {})
        assert t.elem is not None
        if t.kind == "map":
            return x.keys() == y.keys() and all(semantic_equal(t.elem, x[k], y[k]) for k in x)
        return len(x) == len(y) and all(
            semantic_equal(t.elem, a, b) for a, b in zip(x, y, strict=True)
        )
    if t.kind == "ptr":
        if x is None or y is None:
            return x is y
        assert t.elem is not None
        return semantic_equal(t.elem, x.value, y.value)
    if t.kind == "struct":
        return all(semantic_equal(ft, x.get(n), y.get(n)) for n, ft in t.fields)
    return bool(x == y)


# -- the compared tree (cmp's valueNode) -----------------------------------------------------


@dataclass
class Node:
    t: GoType
    x: Any
    y: Any
    records: list[tuple[str, Node]] = field(default_factory=list)
    same: int = 0
    diff: int = 0
    children: int = 0
    depth: int = 0

    def add(self, key: str, child: Node) -> None:
        self.records.append((key, child))
        self.same += child.same
        self.diff += child.diff
        self.children += child.children + 1
        self.depth = max(self.depth, child.depth + 1)


def compare(t: GoType, x: Any, y: Any) -> Node:
    node = Node(t, x, y)
    leaf: bool | None = None
    if x is MISSING or y is MISSING:
        leaf = x is y
    elif t.kind in ("string", "int", "bool", "leaf"):
        leaf = x == y
    elif t.kind in ("slice", "map", "ptr") and (x is None or y is None):
        leaf = x is None and y is None
    if leaf is not None:
        node.same, node.diff = (1, 0) if leaf else (0, 1)
        return node
    assert t.elem is not None or t.kind == "struct"
    if t.kind == "struct":
        for name, ft in t.fields:
            node.add(name, compare(ft, x.get(name), y.get(name)))
    elif t.kind == "ptr":
        assert t.elem is not None
        node.add("", compare(t.elem, x.value, y.value))
    elif t.kind == "map":
        assert t.elem is not None
        for key in sorted(set(x) | set(y)):
            node.add(key, compare(t.elem, x.get(key, MISSING), y.get(key, MISSING)))
    else:
        assert t.elem is not None
        for a, b in _edit_script(t.elem, x, y):
            node.add("", compare(t.elem, a, b))
    return node


def _similar(t: GoType, a: Any, b: Any) -> bool:
    probe = compare(t, a, b)
    return probe.same + 1 >= probe.diff


def _edit_script(t: GoType, xs: list[Any], ys: list[Any]) -> list[tuple[Any, Any]]:
    """Pairs of elements: a common prefix and suffix of similar ones, the rest removed then
    inserted (equal lengths pair index by index when similar)."""
    lo = 0
    while lo < len(xs) and lo < len(ys) and _similar(t, xs[lo], ys[lo]):
        lo += 1
    hi = 0
    while (
        hi < len(xs) - lo
        and hi < len(ys) - lo
        and _similar(t, xs[len(xs) - 1 - hi], ys[len(ys) - 1 - hi])
    ):
        hi += 1
    pairs = list(zip(xs[:lo], ys[:lo], strict=True))
    pairs += [(a, MISSING) for a in xs[lo : len(xs) - hi]]
    pairs += [(MISSING, b) for b in ys[lo : len(ys) - hi]]
    return pairs + list(zip(xs[len(xs) - hi :], ys[len(ys) - hi :], strict=True))


# -- text nodes (report_text.go) ---------------------------------------------------------------


class Text:
    def compact(self, d: int) -> tuple[str, Text]:
        raise NotImplementedError

    def expanded(self, d: int, n: int) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class Line(Text):
    text: str

    def compact(self, d: int) -> tuple[str, Text]:
        return self.text, self

    def expanded(self, d: int, n: int) -> str:
        return self.text


NIL, ELLIPSIS = Line("nil"), Line("...")


@dataclass
class Wrap(Text):
    prefix: str
    value: Text
    suffix: str = ""

    def compact(self, d: int) -> tuple[str, Text]:
        inner, value = self.value.compact(d)
        text = self.prefix + inner + self.suffix
        if isinstance(value, Line):
            return text, Line(text)
        return text, Wrap(self.prefix, value, self.suffix)

    def expanded(self, d: int, n: int) -> str:
        return self.prefix + self.value.expanded(d, n) + self.suffix


@dataclass
class Record:
    key: str = ""
    value: Text = ELLIPSIS
    diff: int = 0
    elide_comma: bool = False
    comment: str = ""


def _indent(d: int, n: int) -> str:
    marker = {_REMOVED: "- ", _INSERTED: "+ "}.get(d, "  ")
    return marker + "\t" * n


@dataclass
class Records(Text):
    items: list[Record] = field(default_factory=list)

    def ellipsis(self, comment: str = "") -> None:
        """AppendEllipsis: one ``...``; a later one's stats would merge into it."""
        if not self.items or self.items[-1].value != ELLIPSIS:
            self.items.append(Record(value=ELLIPSIS, elide_comma=True, comment=comment))

    def compact(self, d: int) -> tuple[str, Text]:
        out, multi, items = "", False, []
        for i, r in enumerate(self.items):
            if r.diff in (_REMOVED, _INSERTED) or r.comment:
                multi = True
            out += r.key + (": " if r.key else "")
            text, value = r.value.compact(d | r.diff)
            out += text
            items.append(Record(r.key, value, r.diff, r.elide_comma, r.comment))
            multi = multi or not isinstance(value, Line)
            if i < len(self.items) - 1:
                out += ", "
        if d in (_REMOVED, _INSERTED) and len(out.encode()) > _MAX_COLUMN:
            multi = True
        return out, (Records(items) if multi else Line(out))

    def expanded(self, d: int, n: int) -> str:
        keys = _align(self.items, lambda r: not r.key or not isinstance(r.value, Line))
        simple = (not r.diff and not r.key and isinstance(r.value, Line) for r in self.items)
        if self.items and all(simple):
            return self._batched(d, n)
        out = ""
        for i, r in enumerate(self.items):
            out += "\n" + _indent(d | r.diff, n + 1)
            out += (r.key + ": " if r.key else "") + " " * keys[i]
            out += r.value.expanded(d | r.diff, n + 1)
            out += "" if r.elide_comma else ","
            out += f" // {r.comment}" if r.comment else ""
        return out + "\n" + _indent(d, n)

    def _batched(self, d: int, n: int) -> str:
        out, batch = "", ""
        for r in self.items:
            line = r.value.expanded(d, n)
            if batch and len(batch) + len(line) + 2 > _MAX_COLUMN:
                out += "\n" + _indent(d, n + 1) + batch.rstrip(" ")
                batch = ""
            batch += line + ", "
        if batch:
            out += "\n" + _indent(d, n + 1) + batch.rstrip(" ")
        return out + "\n" + _indent(d, n)


def _align(items: list[Record], skip: Any) -> list[int]:
    """alignLens: pad the keys of consecutive single-line records to the longest."""
    lens = [0] * len(items)
    start, width = 0, 0
    for i, r in enumerate([*items, Record()]):
        if i == len(items) or skip(r):
            for j in range(start, i):
                lens[j] = width - len(items[j].key)
            start, width = i + 1, 0
        else:
            width = max(width, len(r.key))
    return lens


# -- formatting (report_compare.go, report_reflect.go) ---------------------------------------


@dataclass(frozen=True)
class _Opts:
    mode: int = 0
    types: str = "emit"  # emit, auto, elide
    level: int = 0
    limit: bool = False

    def verbosity(self) -> int:
        return min(max(self.level, 0), 16)

    def but(self, **changes: Any) -> _Opts:
        return dataclasses.replace(self, **changes)


def _go_string(s: str) -> str:
    """formatString: %q, or a raw string when shorter and printable."""
    quoted = go_quote(s)
    if len(quoted.encode()) == len(s.encode()) + 2:
        return quoted
    if all(c != "`" and c != "\n" and (c.isprintable() or c == "\t") for c in s):
        return f"`{s}`"
    return quoted


def _format_string(s: str, o: _Opts) -> Line:
    limit = (1 << o.verbosity()) << 5 if o.limit else len(s.encode())
    raw = s.encode()
    if len(raw) > limit + 3:
        return Line(_go_string(raw[:limit].decode(errors="replace")) + "...")
    return Line(_go_string(s))


def _format_type(t: GoType, s: Text, o: _Opts) -> Text:
    if o.types == "elide":
        return s
    if o.types == "auto" and (
        t.kind not in ("struct", "slice", "map") or s in (NIL,) or o.mode == _IDENT
    ):
        return s
    if isinstance(s, Wrap) and s.prefix.startswith(("{", "(")):
        return Wrap(t.name, s)
    return Wrap(t.name, Wrap("(", s, ")"))


def format_value(t: GoType, v: Any, o: _Opts) -> Text | None:
    """FormatValue."""
    if v is MISSING:
        return None
    if t.kind == "bool":
        return Line("true" if v else "false")
    if t.kind == "int":
        return Line(str(v or 0))
    if t.kind in ("string", "leaf"):
        return _format_string(v or "", o)
    if t.kind == "ptr":
        if v is None:
            return NIL
        assert t.elem is not None
        inner = format_value(t.elem, v.value, o)
        return Wrap("&", inner or NIL)
    if v is None and t.kind in ("slice", "map"):
        return NIL
    limit = -1
    child = o
    if o.limit:
        limit = ((1 << o.verbosity()) >> 1) << 2
        child = o.but(level=o.level - 1)
    items = Records()
    if t.kind == "struct":
        for name, ft in t.fields:
            value = v.get(name)
            if is_zero(ft, value):
                continue
            if len(items.items) == limit:
                items.ellipsis()
                break
            items.items.append(
                Record(name, format_value(ft, value, child.but(types="auto")) or NIL)
            )
    else:
        assert t.elem is not None
        pairs = sorted(v.items()) if t.kind == "map" else [("", e) for e in v]
        for key, value in pairs:
            if len(items.items) == limit:
                items.ellipsis()
                break
            shown = format_value(t.elem, value, child.but(types="elide")) or NIL
            items.items.append(Record(go_quote(key) if t.kind == "map" else "", shown))
    return _format_type(t, Wrap("{", items, "}"), o)


def _stats(name: str, identical: int, removed: int, inserted: int, modified: int) -> str:
    """diffStats.String."""
    counts = [(identical, "identical"), (removed, "removed"), (inserted, "inserted")]
    parts = [f"{n} {label}" for n, label in [*counts, (modified, "modified")] if n > 0]
    total = identical + removed + inserted + modified
    noun = name + ("s" if total > 1 else "")
    if noun.endswith("ys"):
        noun = noun[:-2] + "ies"
    if not parts:
        return ""
    if len(parts) <= 2:
        return " and ".join(parts) + " " + noun
    return ", ".join(parts[:-1]) + ", and " + parts[-1] + " " + noun


def format_diff(node: Node, o: _Opts) -> Text | None:
    """FormatDiff."""
    if o.mode == _IDENT:
        o = o.but(level=1, limit=True)
    elif not o.limit or o.verbosity() < 3:
        o = o.but(level=3, limit=True)
    t = node.t
    if node.depth == 0:
        if o.mode == _REMOVED:
            return format_value(t, node.x, o)
        if o.mode == _INSERTED:
            return format_value(t, node.y, o)
        if node.diff == 0:
            return format_value(t, node.y, o)
        shown = Records()
        for mark, value in ((_REMOVED, node.x), (_INSERTED, node.y)):
            text = format_value(t, value, o.but(types="elide"))
            if text is not None:
                shown.items.append(Record(value=text, diff=mark))
        return _format_type(t, shown, o.but(types="emit"))
    if t.kind == "ptr":
        inner = format_diff(node.records[0][1], o)
        return Wrap("&", inner or NIL)
    return _format_type(t, _format_diff_list(node, o), o)


def _format_diff_list(node: Node, o: _Opts) -> Text:
    kind = node.t.kind
    name = {"struct": "field", "map": "entry"}.get(kind, "element")
    o = o.but(types="auto" if kind == "struct" else "elide")
    limit = -1
    if o.limit:
        v = o.verbosity()
        limit = ((1 << v) >> 1) << 2 if o.mode == _IDENT else (1 << v) << 1
        o = o.but(level=o.level - 1)

    def key_of(key: str) -> str:
        return go_quote(key) if kind == "map" else key

    items = Records()
    if o.mode:
        more = False
        for key, r in node.records:
            if len(items.items) == limit:
                more = True
                break
            if kind == "struct":
                x_zero, y_zero = is_zero(r.t, r.x), is_zero(r.t, r.y)
                zero = {_IDENT: x_zero or y_zero, _REMOVED: x_zero, _INSERTED: y_zero}[o.mode]
                if zero:
                    continue
            out = format_diff(r, o)
            if out is not None:
                items.items.append(Record(key_of(key), out))
        if more:
            items.ellipsis()
        return Wrap("{", items, "}")

    groups: list[list[tuple[str, Node]]] = []
    for key, r in node.records:
        if groups and (groups[-1][0][1].diff == 0) == (r.diff == 0):
            groups[-1].append((key, r))
        else:
            groups.append([(key, r)])
    diffs, dropped = 0, [0, 0, 0, 0]
    for i, group in enumerate(groups):
        if 0 <= limit <= diffs:
            _count(group, dropped)
            continue
        if group[0][1].diff == 0:
            lo = min(_CONTEXT, len(group)) if i != 0 else 0
            hi = min(_CONTEXT, len(group) - lo) if i != len(groups) - 1 else 0
            if len(group) - (lo + hi) == 1:
                hi += 1
            ident = o.but(mode=_IDENT)
            for key, r in group[:lo]:
                items.items.append(Record(key_of(key), format_diff(r, ident) or NIL))
            if len(group) > lo + hi:
                items.ellipsis(_stats(name, len(group) - lo - hi, 0, 0, 0))
            for key, r in group[len(group) - hi :]:
                items.items.append(Record(key_of(key), format_diff(r, ident) or NIL))
            continue
        for key, r in group:
            if r.children == r.depth:
                for mark in (_REMOVED, _INSERTED):
                    out = format_diff(r, o.but(mode=mark))
                    if out is not None:
                        items.items.append(Record(key_of(key), out, mark))
            else:
                items.items.append(Record(key_of(key), format_diff(r, o) or NIL))
        diffs += len(group)
    if dropped != [0, 0, 0, 0]:
        items.ellipsis(_stats(name, *dropped))
    return Wrap("{", items, "}")


def _count(group: list[tuple[str, Node]], dropped: list[int]) -> None:
    for _, r in group:
        if r.diff == 0:
            dropped[0] += 1
        elif r.y is MISSING:
            dropped[1] += 1
        elif r.x is MISSING:
            dropped[2] += 1
        else:
            dropped[3] += 1


def diff(t: GoType, x: Any, y: Any) -> str:
    """``cmp.Diff(x, y)``: empty when equal."""
    node = compare(t, x, y)
    if node.diff == 0:
        return ""
    text = format_diff(node, _Opts())
    assert text is not None
    _, compacted = text.compact(0)
    return _indent(0, 0) + compacted.expanded(0, 0) + "\n"


__all__ = ["MISSING", "GoType", "Ptr", "diff", "is_zero", "semantic_equal"]
