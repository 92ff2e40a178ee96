"""Kubernetes' lists library (library.Lists), cel-go's ext.Lists (version 3) and ext.Sets."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from kubelite.api.cel.ordering import _key
from kubelite.api.cel.quantity import _quantity_value
from kubelite.api.cel.values import (
    _QUANTITY,
    _comparable,
    _equal,
    _Fail,
    _list_arg,
    _marked,
    _no_overload,
)


def _is_sorted(items: Any) -> bool:
    keys = [_key(i) for i in _list_arg(items)]
    _comparable(items)
    return all(keys[i] <= keys[i + 1] for i in range(len(keys) - 1))


def _sum(items: Any) -> Any:
    items = _list_arg(items)
    if not items:
        return 0
    _comparable(items)
    if all(_marked(i, _QUANTITY) is not None for i in items):
        return _quantity_value(sum((Decimal(i[_QUANTITY]) for i in items), Decimal(0)))
    if any(isinstance(i, bool) or not isinstance(i, int | float) for i in items):
        from datetime import timedelta

        if all(isinstance(i, timedelta) for i in items):
            return sum(items, timedelta())
        raise _no_overload()
    total = sum(items)
    if isinstance(total, int) and not -(2**63) <= total < 2**63:
        raise _Fail("integer overflow")
    return total


def _extreme(name: str, pick: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        items = args[0] if len(args) == 1 and isinstance(args[0], list) else list(args)
        if not items:
            raise _Fail(f"{name} called on empty list")
        _comparable(items)
        return pick(items, key=_key)

    return run


def _slice(items: Any, start: Any, end: Any) -> list[Any]:
    items = _list_arg(items)
    if start < 0 or end < 0:
        raise _Fail(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise _Fail(
            f"cannot slice({start}, {end}), start index must be less than or equal to end index"
        )
    if end > len(items):
        raise _Fail(f"cannot slice({start}, {end}), list is length {len(items)}")
    return list(items[start:end])


def _flatten(items: Any, depth: Any = 1) -> list[Any]:
    from cel import stdlib

    if not isinstance(depth, int) or depth < 0:
        raise _Fail("level must be non-negative")
    return stdlib.flatten(_list_arg(items), depth)


def _distinct(items: Any) -> list[Any]:
    out: list[Any] = []
    for item in _list_arg(items):
        if not any(_equal(item, seen) for seen in out):
            out.append(item)
    return out


def _sort(items: Any) -> list[Any]:
    items = _list_arg(items)
    _comparable(items)
    return sorted(items, key=_key)


def _first(items: Any) -> Any:
    from cel import OptionalValue

    items = _list_arg(items)
    return OptionalValue.of(items[0]) if items else OptionalValue.none()


def _last(items: Any) -> Any:
    from cel import OptionalValue

    items = _list_arg(items)
    return OptionalValue.of(items[-1]) if items else OptionalValue.none()


def _range(n: Any) -> list[int]:
    if not isinstance(n, int) or isinstance(n, bool):
        raise _no_overload()
    return list(range(n))


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str) and isinstance(item, str):
        return item in container
    if isinstance(container, list):
        return any(_equal(i, item) for i in container)
    raise _no_overload()


# sets (cel-go ext.Sets)


def _sets_contains(a: Any, b: Any) -> bool:
    return all(any(_equal(x, y) for y in _list_arg(a)) for x in _list_arg(b))


def _sets_equivalent(a: Any, b: Any) -> bool:
    return _sets_contains(a, b) and _sets_contains(b, a)


def _sets_intersects(a: Any, b: Any) -> bool:
    return any(any(_equal(x, y) for y in _list_arg(b)) for x in _list_arg(a))
