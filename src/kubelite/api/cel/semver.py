"""Kubernetes' semver library (library.SemverLib, version 1)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kubelite.api.cel.values import _SEMVER, _Fail, _marked, _no_overload

_SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def _normalize_semver(text: str) -> str:
    text = text.removeprefix("v")
    match = re.match(r"^(\d+(?:\.\d+){0,2})(.*)$", text, re.DOTALL)
    if not match:
        return text
    core, rest = match.groups()
    parts = [str(int(p)) for p in core.split(".")]
    return ".".join(parts + ["0"] * (3 - len(parts))) + rest


def _parse_semver(text: str, normalize: bool = False) -> str:
    if normalize:
        text = _normalize_semver(text)
    if not _SEMVER_RE.fullmatch(text):
        raise ValueError(text)
    return text


def _semver(value: Any, normalize: Any = False) -> dict[str, str]:
    if not isinstance(value, str) or not isinstance(normalize, bool):
        raise _no_overload()
    try:
        return {_SEMVER: _parse_semver(value, normalize)}
    except ValueError:
        raise _Fail("No Major.Minor.Patch elements found") from None


def _is_semver(value: Any, normalize: Any = False) -> bool:
    if not isinstance(value, str) or not isinstance(normalize, bool):
        raise _no_overload()
    try:
        _parse_semver(value, normalize)
    except ValueError:
        return False
    return True


def _v(value: Any) -> str:
    text = _marked(value, _SEMVER)
    if text is None:
        raise _no_overload()
    return str(text)


def _semver_key(text: str) -> tuple[Any, ...]:
    match = _SEMVER_RE.fullmatch(text)
    assert match is not None
    major, minor, patch, pre, _build = match.groups()
    pre_key: tuple[Any, ...] = (1,)
    if pre:
        pre_key = (0, *((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")))
    return (int(major), int(minor), int(patch), pre_key)


def _semver_part(index: int) -> Callable[[Any], int]:
    return lambda value: int(_v(value).split("-")[0].split("+")[0].split(".")[index])
