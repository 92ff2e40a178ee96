"""Values as kubelite's CEL carries them: Kubernetes' own types as one-key maps marked by type
(``{"@kubelite.quantity": "1.5"}``), the errors, and the helpers every library shares
(kinds, equality, list arguments)."""

from __future__ import annotations

import datetime
from typing import Any

_QUANTITY = "@kubelite.quantity"
_IP = "@kubelite.ip"
_CIDR = "@kubelite.cidr"
_URL = "@kubelite.url"
_SEMVER = "@kubelite.semver"
_FORMAT = "@kubelite.format"


class CompileError(ValueError):
    """The expression does not compile; ``str(exc)`` is cel-go's issues text."""


class EvalError(Exception):
    """A runtime error, in cel-go's text. ``kind`` is ``overload``, ``cost`` or ``other``."""

    def __init__(self, text: str, kind: str = "other") -> None:
        super().__init__(text)
        self.kind = kind


class _Fail(Exception):
    """Raised by a library function: the message is cel-go's (or kube's) error text."""


def _marked(value: Any, mark: str) -> Any:
    if isinstance(value, dict) and len(value) == 1 and mark in value:
        return value[mark]
    return None


def _no_overload() -> _Fail:
    return _Fail("no such overload")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return bool(a == b)


def _comparable(items: list[Any]) -> None:
    kinds = {_kind(i) for i in items}
    if len(kinds) > 1 and not kinds <= {"int", "double"}:
        raise _no_overload()
    if kinds & {"map", "list", "bool_list"}:
        raise _no_overload()


def type_name(value: Any) -> str:
    """cel-go's name of a value's type, as its error texts print it (``string.format``'s, a
    policy expression's result of the wrong type)."""
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, datetime.datetime):
        return "google.protobuf.Timestamp"
    if isinstance(value, datetime.timedelta):
        return "google.protobuf.Duration"
    return type(value).__name__


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if _marked(value, _QUANTITY) is not None:
        return "quantity"
    if _marked(value, _SEMVER) is not None:
        return "semver"
    return "map" if isinstance(value, dict) else type(value).__name__


def _list_arg(items: Any) -> list[Any]:
    if not isinstance(items, list):
        raise _no_overload()
    return items
