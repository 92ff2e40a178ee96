"""Kubernetes' quantity library (library.Quantity; k8s.io/apimachinery/pkg/api/resource)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kubelite.api.cel.values import _QUANTITY, _Fail, _marked, _no_overload
from kubelite.api.encoding import quantity


def parse_quantity(text: str) -> Decimal:
    """A quantity's exact value (raises ValueError with apimachinery's ParseQuantity message):
    the shared :mod:`kubelite.api.encoding.quantity`."""
    return quantity.parse(text).value


def _quantity_value(value: Decimal) -> dict[str, str]:
    normal = value.normalize()
    return {_QUANTITY: format(normal, "f") if normal == normal.to_integral() else str(normal)}


def _quantity(text: Any) -> dict[str, str]:
    if not isinstance(text, str):
        raise _no_overload()
    try:
        return _quantity_value(parse_quantity(text))
    except ValueError as exc:
        raise _Fail(str(exc)) from None


def _is_quantity(text: Any) -> bool:
    if not isinstance(text, str):
        raise _no_overload()
    try:
        parse_quantity(text)
    except ValueError:
        return False
    return True


def _q(value: Any) -> Decimal:
    q = _marked(value, _QUANTITY)
    if q is None:
        raise _no_overload()
    return Decimal(q)


def _q_operand(value: Any) -> Decimal:
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    return _q(value)


def _as_integer(value: Any) -> int:
    q = _q(value)
    if q != q.to_integral_value() or not -(2**63) <= q < 2**63:
        raise _Fail("cannot convert value to integer")
    return int(q)


def _is_integer(value: Any) -> bool:
    q = _q(value)
    return q == q.to_integral_value() and -(2**63) <= q < 2**63


def _sign(value: Any) -> int:
    q = _q(value)
    return (q > 0) - (q < 0)


def _add(a: Any, b: Any) -> dict[str, str]:
    return _quantity_value(_q(a) + _q_operand(b))


def _sub(a: Any, b: Any) -> dict[str, str]:
    return _quantity_value(_q(a) - _q_operand(b))


def _mul(a: Any, b: Any) -> dict[str, str]:
    if not isinstance(b, int) or isinstance(b, bool):
        raise _no_overload()
    return _quantity_value(_q(a) * b)


def _as_float(value: Any) -> float:
    return float(_q(value))
