"""``resource.Quantity`` (k8s.io/apimachinery pkg/api/resource: quantity.go, amount.go,
suffix.go, math.go): parsed with ``ParseQuantity``'s rules and errors, held exactly (an integer
mantissa and a power of ten), printed in canonical form (``String()``/``CanonicalizeBytes``).

What kube does with a quantity, and so what this module does:

- ``ParseQuantity`` splits a number and a suffix (``Ki``..``Ei`` binary, ``n``..``E`` decimal,
  ``e<int>``/``E<int>`` exponent) and remembers which kind of suffix it saw (the ``Format``).
  A value that fits an int64 at a scale of nano or coarser is kept as it is (its "fast path");
  any other is rounded up (away from zero) to nano, and a binary one is capped at 2^63-1.
  A parsed text already in canonical form is kept verbatim (``q.s``: ``"+1"`` prints ``+1``).
- ``String()``: zero is ``0``; a decimal value is ``<m><suffix>`` with the largest exponent
  that is a multiple of 3 and leaves ``m`` whole (``1.5`` -> ``1500m``, ``1000m`` -> ``1``);
  a binary value is ``<m>Ki`` .. ``<m>Ei`` when it is whole and at least 1024 in magnitude,
  else printed as decimal (``1.5Gi`` -> ``1536Mi``, ``0.5Gi`` -> ``512Mi``, ``512`` stays).
- ``RoundUp(scale)``: rounds away from zero to ``10^scale`` (``SetDefaults_ResourceList``
  rounds every request and limit to milli: ``0.1m`` -> ``1m``).

:class:`Quantity` compares by value (``.value`` is the exact :class:`~decimal.Decimal`), and
``str()`` is kube's ``String()``; :func:`parse` raises :class:`QuantityError` with
``ParseQuantity``'s message, :func:`parse_or_none` answers None instead.
"""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Any

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "FORMAT_ERROR",
    "MILLI",
    "NANO",
    "NUMERIC_ERROR",
    "SUFFIX_ERROR",
    "Quantity",
    "QuantityError",
    "canonical",
    "parse",
    "parse_json",
    "parse_or_none",
]

DECIMAL_EXPONENT = "DecimalExponent"
BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
NANO = -9
MILLI = -3

FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
NUMERIC_ERROR = "unable to parse numeric part of quantity"
SUFFIX_ERROR = "unable to parse quantity's suffix"

#: suffix.go: the decimal SI suffixes by power of ten, and the binary ones by power of two.
_DECIMAL_SUFFIXES = {
    "n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}  # fmt: skip
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_NAMES = {power: name for name, power in _DECIMAL_SUFFIXES.items()}
_BINARY_NAMES = {power: name for name, power in _BINARY_SUFFIXES.items()}
_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
#: quantity.go ``maxAllowed``: the cap of a binary quantity's magnitude.
_MAX_ALLOWED = _INT64_MAX


class QuantityError(ValueError):
    """A text ``ParseQuantity`` refuses; ``str()`` is its error text."""


def _int32(value: int) -> int:
    """Go's ``int32(x)`` of an int64: wraps around."""
    return (value + 2**31) % 2**32 - 2**31


def _round_up(mantissa: int, exponent: int, scale: int) -> tuple[int, int, bool]:
    """``mantissa * 10^exponent`` rounded away from zero to a multiple of ``10^scale``
    (inf.RoundUp): the new (mantissa, exponent) and whether nothing was lost."""
    if exponent >= scale:
        return mantissa, exponent, True
    shift = scale - exponent
    magnitude = -mantissa if mantissa < 0 else mantissa
    if shift > len(str(magnitude)):  # less than one unit of 10^scale: not 0, so it is 1
        quotient, exact = (1, False) if magnitude else (0, True)
    else:
        quotient, remainder = divmod(magnitude, 10**shift)
        exact = remainder == 0
        quotient += 0 if exact else 1
    return (-quotient if mantissa < 0 else quotient), scale, exact


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    """math.go removeInt64Factors: ``value`` divided by ``base`` while it divides evenly."""
    negative = value < 0
    result = -value if negative else value
    times = 0
    while result >= base and result % base == 0:
        times += 1
        result //= base
    return (-result if negative else result), times


class Quantity:
    """A parsed quantity: exactly ``mantissa * 10**exponent``, its ``format`` (``DecimalSI``,
    ``BinarySI`` or ``DecimalExponent``), and the text it keeps when it parsed already in
    canonical form. Ordered and equal by value; ``str()`` is kube's ``String()``."""

    __slots__ = ("_text", "exponent", "format", "mantissa")

    def __init__(self, mantissa: int, exponent: int, fmt: str, text: str | None = None) -> None:
        self.mantissa = mantissa
        self.exponent = exponent
        self.format = fmt
        self._text = text

    @property
    def value(self) -> Decimal:
        """The exact value (built from digits: no context rounding)."""
        m = self.mantissa
        return Decimal((1 if m < 0 else 0, tuple(int(d) for d in str(abs(m))), self.exponent))

    def sign(self) -> int:
        return (self.mantissa > 0) - (self.mantissa < 0)

    def is_zero(self) -> bool:
        return self.mantissa == 0

    def cmp(self, other: Quantity) -> int:
        """``Cmp``: -1, 0 or 1."""
        a, b = self.value, other.value
        return (a > b) - (a < b)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.cmp(other) == 0

    def __lt__(self, other: Quantity) -> bool:
        return self.cmp(other) < 0

    def __le__(self, other: Quantity) -> bool:
        return self.cmp(other) <= 0

    def __gt__(self, other: Quantity) -> bool:
        return self.cmp(other) > 0

    def __ge__(self, other: Quantity) -> bool:
        return self.cmp(other) >= 0

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, {self.format})"

    def __str__(self) -> str:
        if self._text is None:
            self._text = self.canonical()
        return self._text

    def canonical(self) -> str:
        """``CanonicalizeBytes``: the canonical text, ignoring a kept parsed text."""
        m, e = self.mantissa, self.exponent
        if m == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI:
            whole, fraction = (abs(m) * 10**e, 0) if e >= 0 else divmod(abs(m), 10**-e)
            if fraction or whole < 1024:
                fmt = DECIMAL_SI  # small or fractional binary values print as decimal
            else:
                number, times = _remove_factors(whole, 1024)
                sign = "-" if m < 0 else ""
                return f"{sign}{number}{_BINARY_NAMES.get(times * 10, '')}"
        elif fmt != DECIMAL_SI:
            fmt = DECIMAL_EXPONENT
        m, times = _remove_factors(m, 10)
        e += times
        extra = e % 3  # lower the exponent to a multiple of 3 (amount.go AsCanonicalBytes)
        m *= 10**extra
        e -= extra
        if fmt == DECIMAL_SI:
            return f"{m}{_DECIMAL_NAMES.get(e, '')}"
        return f"{m}e{e}" if e else str(m)

    def round_up(self, scale: int) -> tuple[Quantity, bool]:
        """``RoundUp(scale)``: this quantity rounded away from zero to ``10^scale`` (itself
        when already that coarse, keeping its text), and whether that was exact."""
        if self.exponent >= scale:
            return self, True
        mantissa, exponent, exact = _round_up(self.mantissa, self.exponent, scale)
        return Quantity(mantissa, exponent, self.format), exact

    def scaled_value(self, scale: int) -> int:
        """``ScaledValue``: the value in units of ``10^scale``, rounded away from zero."""
        mantissa, exponent, _ = _round_up(self.mantissa, self.exponent, scale)
        shift = exponent - scale  # not negative once rounded
        result = mantissa * pow(10, shift) if shift <= 20 else _INT64_MAX + 1
        if not _INT64_MIN <= result <= _INT64_MAX:
            return _INT64_MAX if mantissa > 0 else _INT64_MIN  # past int64 (Go wraps around)
        return result

    def milli_value(self) -> int:
        """``MilliValue``."""
        return self.scaled_value(MILLI)

    def int_value(self) -> int:
        """``Value``: the value rounded away from zero to a whole number."""
        return self.scaled_value(0)


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """quantity.go parseQuantityString: (positive, value, num, denom, suffix)."""
    positive = True
    pos, end = 0, len(text)
    if end and text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    if pos >= end:
        return positive, text, num, "", ""
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(FORMAT_ERROR)
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """suffix.go interpret: (base, exponent, format)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body and all(c in _DIGITS for c in body):
            parsed = int(digits)
            if _INT64_MIN <= parsed <= _INT64_MAX:
                return 10, _int32(parsed), DECIMAL_EXPONENT
    raise QuantityError(SUFFIX_ERROR)


@functools.lru_cache(maxsize=4096)
def parse(text: str) -> Quantity:
    """``ParseQuantity(text)`` (the caller trims, as UnmarshalJSON does). Raises
    :class:`QuantityError` with its message. Quantities are immutable: cached."""
    if not text:
        raise QuantityError(FORMAT_ERROR)
    if text == "0":
        return Quantity(0, 0, DECIMAL_SI, "0")
    positive, value, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)
    mantissa = 1
    if fmt == BINARY_SI:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - exponent * 3 // 10 - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = 18 - len(num) - len(denom)
    if precision >= 0:
        scale -= len(denom)
        if scale >= NANO:
            shifted = num + denom
            result = int(shifted) * mantissa
            if result <= _INT64_MAX:  # int64Multiply did not overflow: the int64 amount
                if not positive:
                    result = -result
                if fmt == BINARY_SI:
                    canonical = exponent % 10 == 0 and int(shifted) & 7 != 0
                else:
                    canonical = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return Quantity(result, scale, fmt, text if canonical else None)
    if not any(c in _DIGITS for c in value):
        raise QuantityError(NUMERIC_ERROR)  # inf.Dec reads no digits (".Ei")
    amount = int(value.lstrip("+-").replace(".", "") or "0")
    amount_scale = -len(denom)
    if base == 10:
        amount_scale += exponent
    else:
        amount <<= exponent
    if amount:  # non-zero values round up to the smallest representable one (nano)
        amount, amount_scale, _ = _round_up(amount, amount_scale, NANO)
    if fmt == BINARY_SI and amount > _MAX_ALLOWED * 10 ** max(0, -amount_scale):
        amount, amount_scale = _MAX_ALLOWED, 0  # binary amounts are at scale 0 or finer
    if fmt == BINARY_SI and amount and amount_scale < 0 and amount < 10**-amount_scale:
        fmt = DECIMAL_SI  # between 0 and 1: "This avoids rounding and hopefully confusion"
    return Quantity(amount if positive else -amount, amount_scale, fmt)


def parse_or_none(value: Any) -> Quantity | None:
    """A JSON value read as a Quantity field reads it (:func:`parse_json`), or None."""
    try:
        return parse_json(value)
    except QuantityError:
        return None


def parse_json(value: Any) -> Quantity:
    """``Quantity.UnmarshalJSON`` of a decoded JSON value: a string (trimmed) or a number (its
    JSON text); anything else is its JSON text, which does not parse."""
    t = type(value)
    if t is str:
        return parse(value.strip())
    if t is int:
        return parse(str(value))
    if t is float:
        return parse(_float_text(value))
    if t is bool:
        return parse("true" if value else "false")
    raise QuantityError(FORMAT_ERROR)  # null is the caller's; objects and arrays never match


def _float_text(value: float) -> str:
    """A float's JSON text as Go's encoder would have read it back (integral ones whole)."""
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def canonical(value: Any) -> str | None:
    """The canonical text of a quantity field's value, None when it is not a quantity."""
    found = parse_or_none(value)
    return None if found is None else str(found)
