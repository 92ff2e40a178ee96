"""Kubernetes' quantity library (library.Quantity; k8s.io/apimachinery/pkg/api/resource)."""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation, localcontext
from typing import Any

from kubelite.api.cel.values import _QUANTITY, _Fail, _marked, _no_overload

_QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_QUANTITY_FORMAT = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(text: str) -> Decimal:
    """A quantity's exact value (raises ValueError with apimachinery's message)."""
    match = _QUANTITY_RE.fullmatch(text.strip()) if text else None
    if not match or text != text.strip():
        raise ValueError(_QUANTITY_FORMAT)
    number, suffix = match.groups()
    if number.count(".") > 1 or number.strip("+-") in ("", "."):
        raise ValueError(_QUANTITY_FORMAT)
    try:
        value = Decimal(number)
    except InvalidOperation:
        raise ValueError(_QUANTITY_FORMAT) from None
    with localcontext() as ctx:
        ctx.prec = 80
        if suffix in _BINARY:
            value *= Decimal(2) ** _BINARY[suffix]
        elif suffix in _DECIMAL:
            value = value.scaleb(_DECIMAL[suffix])
        elif re.fullmatch(r"[eE][-+]?[0-9]+", suffix):
            value = value.scaleb(int(suffix[1:]))
        else:
            raise ValueError("unable to parse quantity's suffix")
        # kube keeps nano precision: anything finer is rounded up
        return value.quantize(Decimal("1e-9"), rounding=ROUND_CEILING)


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
