"""``string.format`` of cel-go's strings extension (version 2, as kube has it; cel-go's
``ext/formatting.go``): ``"%s has %d replicas".format([name, 3])``.

Clauses: ``%s`` (any value: lists as ``[a, b]`` and maps as ``{"k":v}`` with keys sorted and
strings quoted, doubles in them with 6 decimals), ``%d`` (integers), ``%f`` and ``%.Nf``
(doubles, thousands grouped as the ``en_US`` locale groups them), ``%e`` (doubles; cel-go takes
the number as a width), ``%b`` (integers and bools), ``%x``/``%X`` (integers, strings, bytes),
``%o`` (integers) and ``%%``. Errors read as cel-go's (``error during formatting: decimal clause
can only be used on integers, was given double``).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from typing import Any

from kubelite.api.cel.values import _Fail, _marked, type_name
from kubelite.api.errors import go_quote

_PRECISION = 6


class _FormatError(Exception):
    pass


def _double_text(value: float) -> str:
    """cel-go's string(double)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    if "e" in text:
        mantissa, _, exponent = text.partition("e")
        sign = "-" if exponent.startswith("-") else "+"
        digits = exponent.lstrip("+-").rjust(2, "0")
        text = f"{mantissa.removesuffix('.0')}e{sign}{digits}"
    return text.removesuffix(".0") if text.endswith(".0") else text


def _duration_text(value: datetime.timedelta) -> str:
    seconds = value.total_seconds()
    return f"{seconds:g}s" if seconds != int(seconds) else f"{int(seconds)}s"


def _string(value: Any) -> str:
    """The ``%s`` clause (FormatString)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return str(value)
    if isinstance(value, float):
        return _double_text(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return "[" + ", ".join(_member(item) for item in value) + "]"
    if isinstance(value, dict):
        text = next((_marked(value, k) for k in value if str(k).startswith("@kubelite.")), None)
        if text is not None and len(value) == 1:
            return str(text)
        pairs = sorted((_key(k), _member(v)) for k, v in value.items())
        return "{" + ", ".join(f"{k}:{v}" for k, v in pairs) + "}"
    if isinstance(value, datetime.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, datetime.timedelta):
        return _duration_text(value)
    raise _FormatError(
        "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, "
        f"types, durations, and timestamps, was given {type_name(value)}"
    )


def _key(key: Any) -> str:
    if isinstance(key, str):
        return go_quote(key)
    if isinstance(key, bool | int):
        return _string(key)
    raise _FormatError(f"no formatting function for map key of type {type_name(key)}")


def _member(value: Any) -> str:
    """A list item or map value (clauseForType, then quoteForCEL)."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bytes):
        return "b" + go_quote(value.decode("utf-8", "replace"))
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return go_quote(_double_text(value))
        return f"{value:.{_PRECISION}f}"
    if isinstance(value, datetime.datetime):
        return f"timestamp({go_quote(_string(value))})"
    if isinstance(value, datetime.timedelta):
        return f"duration({go_quote(_string(value))})"
    return _string(value)


def _integer(value: Any, clause: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _FormatError(f"{clause}, was given {type_name(value)}")


def _double(value: Any, clause: str) -> float:
    if isinstance(value, float):
        return value
    if value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    raise _FormatError(f"{clause}, was given {type_name(value)}")


def _fixed(precision: int | None) -> Callable[[Any], str]:
    def run(value: Any) -> str:
        number = _double(value, "fixed-point clause can only be used on doubles")
        if math.isnan(number):
            return "NaN"
        if math.isinf(number):
            return "∞" if number > 0 else "-∞"
        return f"{number:,.{_PRECISION if precision is None else precision}f}"

    return run


def _scientific(width: int | None) -> Callable[[Any], str]:
    def run(value: Any) -> str:
        number = _double(value, "scientific clause can only be used on doubles")
        return f"{number:{_PRECISION if width is None else width}e}"

    return run


def _binary(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return format(_integer(value, "only integers and bools can be formatted as binary"), "b")


def _hex(upper: bool) -> Callable[[Any], str]:
    def run(value: Any) -> str:
        if isinstance(value, str | bytes):
            raw = value.encode() if isinstance(value, str) else value
            text = raw.hex()
        else:
            clause = "only integers, byte buffers, and strings can be formatted as hex"
            text = format(_integer(value, clause), "x")
        return text.upper() if upper else text

    return run


def _octal(value: Any) -> str:
    return format(_integer(value, "octal clause can only be used on integers"), "o")


def _decimal(value: Any) -> str:
    return str(_integer(value, "decimal clause can only be used on integers"))


def _clause(text: str, at: int) -> tuple[int, Callable[[Any], str]]:
    """The clause after the ``%`` at ``at``: (characters read, formatter)."""
    i = at
    precision: int | None = None
    if text[i] == ".":
        i += 1
        digits = ""
        while i < len(text) and text[i].isdigit():
            digits += text[i]
            i += 1
        if i >= len(text):
            raise _Fail(
                "could not parse formatting clause: error while parsing precision: could not "
                "find end of precision specifier"
            )
        precision = int(digits) if digits else 0
    letter = text[i]
    clauses: dict[str, Callable[[Any], str]] = {
        "s": _string, "d": _decimal, "f": _fixed(precision), "e": _scientific(precision),
        "b": _binary, "x": _hex(False), "X": _hex(True), "o": _octal,
    }  # fmt: skip
    found = clauses.get(letter)
    if found is None:
        raise _Fail(f'could not parse formatting clause: unrecognized formatting clause "{letter}"')
    return i + 1 - at, found


def string_format(text: Any, args: Any) -> str:
    """``text.format(args)``."""
    if not isinstance(text, str) or not isinstance(args, list):
        raise _Fail("no such overload")
    out: list[str] = []
    i = index = 0
    while i < len(text):
        char = text[i]
        if char != "%":
            out.append(char)
            i += 1
            continue
        if i + 1 < len(text) and text[i + 1] == "%":
            out.append("%")
            i += 2
            continue
        if index >= len(args):
            raise _Fail(f"index {index} out of range")
        if i + 1 >= len(text):
            raise _Fail("unexpected end of string")
        read, formatter = _clause(text, i + 1)
        try:
            out.append(formatter(args[index]))
        except _FormatError as exc:
            raise _Fail(f"error during formatting: {exc}") from None
        i += 1 + read
        index += 1
    return "".join(out)
