"""The three-way merge behind ``update_three_way``: the caller's intended change (``base`` ->
``mine``) applied onto the ``latest`` object, refused only where someone else changed the same
field differently.

Objects are walked as nested dicts. A field is a path of dict keys; a value that is not a dict on
both sides (a scalar, or a list) is one field and is compared whole, so two different changes
inside one list (say, two containers of a Pod) are reported as a conflict on the list rather
than guessed at. For each field the caller changed (set, replaced or removed):

- latest still holds base's value there: take the caller's value;
- latest already holds the caller's value: nothing to do (both made the same change);
- otherwise: a conflict on that field.

``metadata.resourceVersion`` is never part of the caller's change: the result carries latest's,
so the write is checked against the object the merge was made on.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from kubelite.client.errors import MergeConflict
from kubelite.client.objects import Object, deep_copy


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final = _Missing()
Path = tuple[str, ...]
SERVER_OWNED: frozenset[Path] = frozenset({("metadata", "resourceVersion")})


def changes(before: Mapping[str, Any], after: Mapping[str, Any], at: Path = ()) -> Iterator[Path]:
    """The fields that differ between two objects, as paths to the outermost differing values
    (``MISSING`` on the side that lacks a key)."""
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, MISSING), after.get(key, MISSING)
        if old == new:
            continue
        if isinstance(old, dict) and isinstance(new, dict):
            yield from changes(old, new, (*at, key))
        else:
            yield (*at, key)


def value_at(obj: Any, path: Path) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return MISSING
        obj = obj[key]
    return obj


def _set(obj: Object, path: Path, value: Any) -> None:
    *parents, last = path
    for key in parents:
        child = obj.get(key)
        if not isinstance(child, dict):
            child = obj[key] = {}
        obj = child
    if value is MISSING:
        obj.pop(last, None)
    else:
        obj[last] = value


def three_way_merge(
    base: Mapping[str, Any], mine: Mapping[str, Any], latest: Mapping[str, Any]
) -> Object:
    """``latest`` with the change from ``base`` to ``mine`` applied; raises
    :class:`MergeConflict` naming every field both sides changed differently."""
    merged = deep_copy(latest)
    conflicts: list[str] = []
    for path in changes(base, mine):
        if path in SERVER_OWNED:
            continue
        wanted, theirs = value_at(mine, path), value_at(latest, path)
        if theirs == wanted:
            continue
        if theirs != value_at(base, path):
            conflicts.append(".".join(path))
            continue
        _set(merged, path, deep_copy({"v": wanted})["v"] if wanted is not MISSING else MISSING)
    if conflicts:
        raise MergeConflict(conflicts)
    return merged
