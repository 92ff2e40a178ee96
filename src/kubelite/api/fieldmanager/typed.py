"""Objects walked by their shape (structured-merge-diff's ``typed`` package): the field set an
applied configuration owns, the paths two versions differ in, the merge of a configuration into
a live object, and the removal of a set of paths.

Values are plain JSON (dicts, lists, scalars); :data:`MISSING` stands for an absent field, which
differs from a present ``null``. Each walker follows its structured-merge-diff counterpart
(tofieldset.go, compare.go, merge.go, remove.go), including where emptiness is a leaf ("both
sides empty or null" compares and merges as a single value) and the item order of a merged list.
Configurations are checked strictly (:class:`TypedError` for an undeclared field, a wrong type, a
duplicate or keyless item); live objects leniently (an undeclared field is untyped).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from kubelite.api.fieldmanager import fieldpath as fp
from kubelite.api.fieldmanager.fieldpath import FieldSet
from kubelite.api.fieldmanager.shapes import LIST, MAP, SCALAR, UNTYPED, UNTYPED_SHAPE, Shape

__all__ = [
    "MISSING",
    "Comparison",
    "TypedError",
    "compare",
    "ensure_named_fields",
    "merge",
    "remove_items",
    "to_set",
]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()


class TypedError(ValueError):
    """A value that does not fit its shape, with the path where (``.spec.foo: <what>``)."""

    def __init__(self, path: list[str], message: str) -> None:
        super().__init__(f"{fp.path_string(path)}: {message}" if path else message)


def _kind(shape: Shape, v: Any) -> int:
    """The kind a value is walked as: the shape's, or deduced when the shape is untyped."""
    if shape.kind != UNTYPED:
        return shape.kind
    if isinstance(v, list):
        return LIST
    if isinstance(v, dict) or v is None:
        return MAP
    return SCALAR


def _fits(kind: int, v: Any) -> bool:
    if v is None or v is MISSING:
        return True
    if kind == MAP:
        return isinstance(v, dict)
    if kind == LIST:
        return isinstance(v, list)
    return not isinstance(v, dict | list)


def _atomic(shape: Shape, kind: int) -> bool:
    return kind == SCALAR or shape.atomic or (kind == LIST and shape.kind == UNTYPED)


def _go_list(names: tuple[str, ...]) -> str:
    return "[" + " ".join(json.dumps(n) for n in names) + "]"


def item_element(shape: Shape, item: Any) -> str:
    """The path element of ``item`` in the associative list ``shape`` (its key fields, with
    schema defaults for missing ones, or its value for a set)."""
    if shape.keys == ("",):
        if isinstance(item, dict):
            raise ValueError("associative list without keys has an element that's a map type")
        if isinstance(item, list):
            raise ValueError("not supported: associative list with lists as elements")
        if item is None:
            raise ValueError("associative list without keys has an element that's an explicit null")
        return fp.value(item)
    if item is None:
        raise ValueError("associative list with keys may not have a null element")
    if not isinstance(item, dict):
        raise ValueError("associative list with keys may not have non-map elements")
    fields: dict[str, Any] = {}
    for name in shape.keys:
        if name in item:
            fields[name] = item[name]
        else:
            default = shape.item.key_default(name)
            if default is not None:
                fields[name] = default
    if not fields:
        raise ValueError(
            "associative list with keys has an element that omits all key fields "
            f"{_go_list(shape.keys)} (and doesn't have default values for any key fields)"
        )
    return fp.key(fields)


def _member(shape: Shape, name: str, strict: bool, path: list[str]) -> tuple[Shape, bool]:
    sub, declared = shape.member(name)
    if sub is None:
        if strict:
            raise TypedError([*path, fp.field(name)], "field not declared in schema")
        return UNTYPED_SHAPE, False
    return sub, declared


# -- the field set of a configuration ------------------------------------------------------------


def to_set(obj: Any, shape: Shape, *, strict: bool = True) -> FieldSet:
    """The paths ``obj`` sets (what an applier of it owns): every scalar, atomic value, list
    item and map key, and a declared struct field only when it is null or ``{}``."""
    out = FieldSet()
    _set_of(obj, shape, out, [], strict)
    return out


def _set_of(v: Any, shape: Shape, node: FieldSet, path: list[str], strict: bool) -> bool:
    """Fill ``node`` with the paths below ``v``; True when ``v``'s own path is a member."""
    kind = _kind(shape, v)
    if not _fits(kind, v):
        if strict:
            raise TypedError(path, f"expected {_KIND_NAMES[kind]}, got {_json(v)}")
        return True
    if _atomic(shape, kind):
        return True
    if v is None:
        return False
    if kind == LIST:
        elements: list[tuple[str, Any]] = []
        counts: dict[str, int] = {}
        for item in v:
            try:
                element = item_element(shape, item)
            except ValueError as exc:
                if strict:
                    raise TypedError(path, str(exc)) from None
                continue
            if element in counts and strict:
                raise TypedError(path, f"duplicate entries for key {fp.element_string(element)}")
            counts[element] = counts.get(element, 0) + 1
            elements.append((element, item))
        for element, item in elements:
            node.members.add(element)
            if counts[element] > 1:
                continue  # a duplicated item of a live object: owned as a whole, nothing below
            child = FieldSet()
            _set_of(item, shape.item, child, [*path, element], strict)
            if not child.empty():
                node.children[element] = child
        return False
    for name, sub_value in v.items():
        sub, declared = _member(shape, name, strict, path)
        element = fp.field(name)
        child = FieldSet()
        leaf = _set_of(sub_value, sub, child, [*path, element], strict)
        if not child.empty():
            node.children[element] = child
        if leaf or sub_value is None or sub_value == {} or not declared:
            node.members.add(element)
    return False


_KIND_NAMES = {SCALAR: "scalar", LIST: "list", MAP: "map", UNTYPED: "value"}


def _json(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"))[:100]


# -- comparison ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Comparison:
    """What changed from one version of an object to the next."""

    added: FieldSet = field(default_factory=FieldSet)
    modified: FieldSet = field(default_factory=FieldSet)
    removed: FieldSet = field(default_factory=FieldSet)

    def changed(self) -> FieldSet:
        return self.modified.union(self.added)

    def without(self, reset: FieldSet) -> Comparison:
        """The comparison with the ``reset`` paths (and all below them) left out."""
        return Comparison(
            self.added.recursive_difference(reset),
            self.modified.recursive_difference(reset),
            self.removed.recursive_difference(reset),
        )


def compare(old: Any, new: Any, shape: Shape) -> Comparison:
    """The paths added, modified and removed from ``old`` to ``new``: every node that appears
    (added), every leaf that changes (modified), every node that goes (removed). Lenient; a
    keyless item of an associative list is a ValueError."""
    out = Comparison()
    _compare(old, new, shape, [], out)
    return out


def _compare(left: Any, right: Any, shape: Shape, path: list[str], out: Comparison) -> None:
    if left is not MISSING and right is not MISSING and _same(left, right):
        return
    k_left = None if left is MISSING else _kind(shape, left)
    k_right = None if right is MISSING else _kind(shape, right)
    fits_left = k_left is None or _fits(k_left, left)
    fits_right = k_right is None or _fits(k_right, right)
    if (
        k_left is not None
        and k_right is not None
        and (k_left != k_right or not fits_left or not fits_right)
    ):
        # a value that changes kind is walked as both (structured-merge-diff's compare): the
        # old one's children are removed, the new one's added, and the node is modified
        _one_side(left, shape, k_left, path, out, removed=True)
        _one_side(right, shape, k_right, path, out, removed=False)
        out.modified.insert(path)
        return
    kind = k_left if k_left is not None else k_right
    assert kind is not None
    leaf = not fits_left or not fits_right or _atomic(shape, kind)
    if not leaf:
        if kind == LIST:
            lv = left if isinstance(left, list) else []
            rv = right if isinstance(right, list) else []
            if not lv and not rv:
                leaf = True
            else:
                _compare_items(lv, rv, shape, path, out)
        else:
            lm = left if isinstance(left, dict) else {}
            rm = right if isinstance(right, dict) else {}
            if not lm and not rm:
                leaf = True
            else:
                for name, lv_ in lm.items():
                    rv_ = rm.get(name, MISSING)
                    if lv_ is rv_ or (type(lv_) is str and type(rv_) is str and lv_ == rv_):
                        continue  # unchanged (the commonest leaf, tested without a call)
                    if rv_ is not MISSING and _same(lv_, rv_):
                        continue  # equal values differ nowhere
                    sub, _ = _member(shape, name, False, path)
                    _compare(lv_, rv_, sub, [*path, "f:" + name], out)
                for name, rv_ in rm.items():
                    if name not in lm:
                        sub, _ = _member(shape, name, False, path)
                        _compare(MISSING, rv_, sub, [*path, "f:" + name], out)
    if leaf:
        target = out.added if left is MISSING else out.removed if right is MISSING else out.modified
        target.insert(path)
    elif left is MISSING:
        out.added.insert(path)
    elif right is MISSING:
        out.removed.insert(path)


def _one_side(
    value: Any, shape: Shape, kind: int, path: list[str], out: Comparison, *, removed: bool
) -> None:
    """The children of a granular ``value`` as all removed (or all added)."""
    if not _fits(kind, value) or _atomic(shape, kind) or not value:
        return
    pairs: list[tuple[str, Any, Shape]]
    if kind == MAP:
        pairs = [("f:" + k, v, _member(shape, k, False, path)[0]) for k, v in value.items()]
    else:
        pairs = [(e, items[0], shape.item) for e, items in _groups(shape, value).items()]
    for element, child, sub in pairs:
        if removed:
            _compare(child, MISSING, sub, [*path, element], out)
        else:
            _compare(MISSING, child, sub, [*path, element], out)


_NUMBERS: Final = (int, float)


def _same(a: Any, b: Any) -> bool:
    """structured-merge-diff's value equality: Python's, except that a boolean never equals a
    number (``True == 1`` in Python)."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return kind in _NUMBERS and type(b) in _NUMBERS and a == b
    if kind is dict or kind is list:
        if a != b:
            return False
        try:
            if orjson.dumps(a) == orjson.dumps(b):
                return True  # the same JSON: the same value (the common case, in C)
        except TypeError:
            pass
        return _deep_same(a, b)  # keys in another order, or a boolean standing for a number
    return bool(a == b)


def _deep_same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return (
            isinstance(b, dict) and a.keys() == b.keys() and all(_deep_same(a[k], b[k]) for k in a)
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_deep_same, a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _groups(shape: Shape, items: list[Any]) -> dict[str, list[Any]]:
    """The items of an associative list by path element (several when duplicated)."""
    found: dict[str, list[Any]] = {}
    for item in items:
        found.setdefault(item_element(shape, item), []).append(item)
    return found


def _compare_items(
    left: list[Any], right: list[Any], shape: Shape, path: list[str], out: Comparison
) -> None:
    """Items compared by key; duplicated items (a live object may have them) as
    structured-merge-diff does: duplicates on both sides are one atomic value, and items that
    become (or stop being) duplicated are added (removed) as a whole."""
    lg, rg = _groups(shape, left), _groups(shape, right)
    for element in [*lg, *(e for e in rg if e not in lg)]:
        ll, rl = lg.get(element, []), rg.get(element, [])
        where = [*path, element]
        if len(ll) <= 1 and len(rl) <= 1:
            _compare(ll[0] if ll else MISSING, rl[0] if rl else MISSING, shape.item, where, out)
        elif len(ll) >= 2 and len(rl) >= 2:
            if not _same(ll, rl):
                out.modified.insert(where)
        elif len(ll) >= 2:
            if rl:
                _compare(MISSING, rl[0], shape.item, where, out)
            out.removed.insert(where)
        else:
            if ll:
                _compare(ll[0], MISSING, shape.item, where, out)
            out.added.insert(where)


# -- merge ---------------------------------------------------------------------------------------


def merge(live: Any, config: Any, shape: Shape) -> Any:
    """``config`` merged into ``live``: the configuration's values win; granular maps are
    merged key by key and associative lists item by item (structured-merge-diff's order)."""
    if config is MISSING:
        return live
    if live is MISSING:
        return config
    k_live, k_config = _kind(shape, live), _kind(shape, config)
    if k_live != k_config or not _fits(k_live, live) or not _fits(k_config, config):
        return config
    if _atomic(shape, k_config):
        return config
    if k_config == LIST:
        if not live and not config:
            return config
        return _merge_items(live or [], config or [], shape)
    if not live and not config:
        return config
    live_map, config_map = live or {}, config or {}
    out: dict[str, Any] = {}
    for name, value in live_map.items():
        sub, _ = _member(shape, name, False, [])
        merged = merge(value, config_map.get(name, MISSING), sub)
        if merged is not MISSING:
            out[name] = merged
    for name, value in config_map.items():
        if name not in live_map:
            out[name] = value
    return out if out else MISSING


def _merge_items(live: list[Any], config: list[Any], shape: Shape) -> Any:
    """structured-merge-diff's list merge: live order, shared items in the configuration's
    order, configuration-only items after the configuration item before them."""
    r_pes = [item_element(shape, item) for item in config]
    r_seen = dict(zip(r_pes, config, strict=True))
    l_pes: list[str] = []
    l_seen: dict[str, Any] = {}
    for item in live:
        element = item_element(shape, item)
        l_pes.append(element)
        # duplicated live items are not merged into: the configuration's item replaces them
        l_seen[element] = None if element in l_seen else item
    shared = [pe for pe in r_pes if pe in l_seen]
    next_shared = shared.pop(0) if shared else None
    merged_rhs: set[str] = set()
    out: list[Any] = []
    li = ri = 0
    n_left, n_right = len(l_pes), len(r_pes)
    item_shape = shape.item

    def take(value: Any) -> None:
        if value is not MISSING:
            out.append(value)

    while li < n_left or ri < n_right:
        if li < n_left and ri < n_right:
            pe = l_pes[li]
            if pe == r_pes[ri]:
                merged_rhs.add(pe)
                take(merge(l_seen.get(pe, MISSING), r_seen[pe], item_shape))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if pe in r_seen and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < n_left:
            pe = l_pes[li]
            if pe not in r_seen:
                take(live[li])
                li += 1
                continue
            if pe in merged_rhs:
                li += 1
        if ri < n_right:
            pe = r_pes[ri]
            merged_rhs.add(pe)
            take(merge(l_seen.get(pe, MISSING), r_seen[pe], item_shape))
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.pop(0) if shared else None
    return out if out else MISSING


# -- removal -------------------------------------------------------------------------------------


def remove_items(v: Any, paths: FieldSet, shape: Shape) -> Any:
    """``v`` without the members of ``paths`` (a removed map key or list item goes with all
    below it). A map or list left with nothing is :data:`MISSING`; its parent drops it."""
    if paths.empty():
        return v
    kind = _kind(shape, v)
    if not _fits(kind, v) or _atomic(shape, kind) or not v:
        return v
    if kind == LIST:
        items: list[Any] = []
        for item in v:
            try:
                element = item_element(shape, item)
            except ValueError:
                items.append(item)
                continue
            if element in paths.members:
                continue
            below = paths.children.get(element)
            if below is not None:
                item = remove_items(item, below, shape.item)
                if item is MISSING:
                    item = {}
            items.append(item)
        return items if items else MISSING
    kept: dict[str, Any] = {}
    emptied = False  # structured-merge-diff leaves an emptied child as null, so this map stays
    for name, value in v.items():
        element = "f:" + name
        if element in paths.members:
            continue
        below = paths.children.get(element)
        if below is not None:
            sub, _ = _member(shape, name, False, [])
            value = remove_items(value, below, sub)
            if value is MISSING:
                emptied = True
                continue
        kept[name] = value
    return kept if kept or emptied else MISSING


def ensure_named_fields(paths: FieldSet, shape: Shape) -> FieldSet:
    """``paths`` with every declared struct field that has paths below it made a member
    (structured-merge-diff's ``EnsureNamedFieldsAreMembers``), so that removing the set removes
    such a field as a whole."""
    if not paths.children:
        return paths
    members = set(paths.members)
    children: dict[str, FieldSet] = {}
    for element, below in paths.children.items():
        sub: Shape = UNTYPED_SHAPE
        if element[0] == "f" and shape.kind in (MAP, UNTYPED):
            name = element[2:]
            declared = shape.field(name) if shape.kind == MAP else None
            if declared is not None:
                members.add(element)
                sub = declared
            elif shape.kind == MAP and shape.element is not None:
                sub = shape.element
        elif element[0] == "k" and shape.kind == LIST:
            sub = shape.item
        children[element] = ensure_named_fields(below, sub)
    return FieldSet(members, children)
