"""Kubernetes' regex library (library.Regex), on RE2."""

from __future__ import annotations

import functools
from typing import Any

from kubelite.api.cel.values import _Fail, _no_overload


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    """RE2, as kube's library (and Go) uses: linear time, so a rule's pattern cannot stall the
    server, and Perl-only syntax (lookarounds, backreferences) is refused as Go refuses it."""
    import re2  # type: ignore[import-untyped]

    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise _Fail(f"error parsing regexp: {exc}: `{pattern}`") from None


def _find(s: Any, pattern: Any) -> str:
    if not isinstance(s, str) or not isinstance(pattern, str):
        raise _no_overload()
    match = _regex(pattern).search(s)
    return match.group(0) if match else ""


def _find_all(s: Any, pattern: Any, limit: Any = -1) -> list[str]:
    if not isinstance(s, str) or not isinstance(pattern, str) or not isinstance(limit, int):
        raise _no_overload()
    if limit == 0:
        return []
    out = [m.group(0) for m in _regex(pattern).finditer(s)]
    return out if limit < 0 else out[:limit]
