"""Kubernetes' URL library (library.URLs)."""

from __future__ import annotations

import urllib.parse
from typing import Any

from kubelite.api.cel.values import _URL, _Fail, _marked, _no_overload
from kubelite.api.errors import go_quote


def _parse_url(text: str) -> urllib.parse.SplitResult:
    if not text or text.startswith(" "):
        raise ValueError
    parts = urllib.parse.urlsplit(text)
    absolute = bool(parts.scheme) or text.startswith("/")
    if not absolute or " " in text or ("#" in text and not parts.scheme):
        raise ValueError
    parts.port  # noqa: B018 - raises for a bad port
    return parts


def _url(value: Any) -> dict[str, str]:
    if not isinstance(value, str):
        raise _no_overload()
    try:
        _parse_url(value)
    except ValueError:
        raise _Fail(
            f"URL parse error during conversion from string: parse {go_quote(value)}: "
            "invalid URI for request"
        ) from None
    return {_URL: value}


def _is_url(value: Any) -> bool:
    if not isinstance(value, str):
        raise _no_overload()
    try:
        _parse_url(value)
    except ValueError:
        return False
    return True


def _u(value: Any) -> urllib.parse.SplitResult:
    text = _marked(value, _URL)
    if text is None:
        raise _no_overload()
    return urllib.parse.urlsplit(str(text))


def _get_hostname(value: Any) -> str:
    netloc = _u(value).netloc.rpartition("@")[2]
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")]
    return netloc.partition(":")[0]


def _get_port(value: Any) -> str:
    netloc = _u(value).netloc.rpartition("@")[2]
    if netloc.startswith("["):
        rest = netloc[netloc.find("]") + 1 :]
        return rest[1:] if rest.startswith(":") else ""
    return netloc.partition(":")[2]


def _get_query(value: Any) -> dict[str, list[str]]:
    return urllib.parse.parse_qs(_u(value).query, keep_blank_values=True)
