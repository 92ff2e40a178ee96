"""The order of Kubernetes' own types: a quantity by its value, a semver by semver's
precedence (library.Quantity's and library.SemverLib's compareTo, isGreaterThan, isLessThan), and
the sort key of any value (sort, isSorted, min, max)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubelite.api.cel.quantity import _q
from kubelite.api.cel.semver import _semver_key, _v
from kubelite.api.cel.values import _QUANTITY, _SEMVER, _marked


def _key(value: Any) -> Any:
    q = _marked(value, _QUANTITY)
    if q is not None:
        return Decimal(q)
    s = _marked(value, _SEMVER)
    if s is not None:
        return _semver_key(s)
    return value


def _compare(a: Any, b: Any) -> int:
    if _marked(a, _SEMVER) is not None:
        x, y = _semver_key(_v(a)), _semver_key(_v(b))
    else:
        x, y = _q(a), _q(b)  # type: ignore[assignment]
    return (x > y) - (x < y)


def _greater(a: Any, b: Any) -> bool:
    return _compare(a, b) == 1


def _less(a: Any, b: Any) -> bool:
    return _compare(a, b) == -1
