"""cel-go's strings extension (ext.Strings, version 2 as kube has it)."""

from __future__ import annotations

from typing import Any

from kubelite.api.cel.values import _equal, _Fail, _no_overload


def _char_at(s: Any, index: Any) -> str:
    if not isinstance(s, str) or not isinstance(index, int):
        raise _no_overload()
    if index < 0 or index > len(s):
        raise _Fail(f"index out of range: {index}")
    return s[index] if index < len(s) else ""


def _index_of(target: Any, sub: Any, offset: Any = 0) -> int:
    if isinstance(target, list):  # kube's lists library
        for i, item in enumerate(target):
            if _equal(item, sub):
                return i
        return -1
    if not isinstance(target, str) or not isinstance(sub, str) or not isinstance(offset, int):
        raise _no_overload()
    if offset < 0 or offset > len(target):
        raise _Fail(f"index out of range: {offset}")
    return target.find(sub, offset)


def _last_index_of(target: Any, sub: Any, offset: Any = None) -> int:
    if isinstance(target, list):
        for i in range(len(target) - 1, -1, -1):
            if _equal(target[i], sub):
                return i
        return -1
    if not isinstance(target, str) or not isinstance(sub, str):
        raise _no_overload()
    if offset is None:
        return target.rfind(sub)
    if not isinstance(offset, int):
        raise _no_overload()
    if offset < 0 or offset > len(target):
        raise _Fail(f"index out of range: {offset}")
    return target.rfind(sub, 0, offset + len(sub))


def _substring(s: Any, start: Any, end: Any = None) -> str:
    if not isinstance(s, str):
        raise _no_overload()
    if end is None:
        end = len(s)
    if start < 0 or start > len(s):
        raise _Fail(f"index out of range: {start}")
    if end < 0 or end > len(s):
        raise _Fail(f"index out of range: {end}")
    if start > end:
        raise _Fail(f"invalid substring range. start: {start}, end: {end}")
    return s[start:end]


def _replace(s: Any, old: Any, new: Any, limit: Any = -1) -> str:
    if not all(isinstance(v, str) for v in (s, old, new)) or not isinstance(limit, int):
        raise _no_overload()
    return str(s.replace(old, new) if limit < 0 else s.replace(old, new, limit))


def _split(s: Any, sep: Any, limit: Any = -1) -> list[str]:
    from cel import stdlib

    if not isinstance(s, str) or not isinstance(sep, str) or not isinstance(limit, int):
        raise _no_overload()
    return stdlib.split(s, sep, limit)


def _join(items: Any, sep: Any = "") -> str:
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise _no_overload()
    return str(sep).join(items)


def _ascii(s: Any, upper: bool) -> str:
    if not isinstance(s, str):
        raise _no_overload()
    if upper:
        return "".join(chr(ord(c) - 32) if "a" <= c <= "z" else c for c in s)
    return "".join(chr(ord(c) + 32) if "A" <= c <= "Z" else c for c in s)


def _trim(s: Any) -> str:
    if not isinstance(s, str):
        raise _no_overload()
    return s.strip(
        " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
        "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
    )


def _reverse(value: Any) -> Any:
    if isinstance(value, str | list):
        return value[::-1]
    raise _no_overload()
