"""CEL as Kubernetes has it: the environment of kube-apiserver's CEL (CRD validation rules now,
admission policies later) over the ``common-expression-language`` package (Rust, imported on
first use).

That package parses and evaluates CEL but does not type-check, has no cost estimator and no
``.?``/``[?`` syntax, and knows only the functions registered on a ``cel.Context`` when it
evaluates. This module adds what kube-apiserver has:

- :func:`compile_expression` parses, then checks every function and variable the expression
  references against the environment (a ``compilation failed`` for anything undeclared, in
  cel-go's texts: ``ERROR: <input>:1:4: undeclared reference to 'foo' (in container '')``);
  the optional-field syntax ``a.?b`` and ``a[?k]`` is rewritten to calls before parsing;
- the CEL extensions kube enables (strings, lists, sets, math, encoders) and Kubernetes'
  libraries (lists, regex, urls, quantity, ip, cidr, format, semver) as Python functions
  registered on one shared context; values of Kubernetes' own types (a quantity, an IP, ...)
  travel through CEL as one-key maps (``{"@kubelite.quantity": "1.5"}``), compared by their
  canonical form;
- :func:`evaluate` runs a compiled expression, turning the library's errors into cel-go's texts
  (``no such key: x``, ``division by zero``, ``no such overload``, ...) in :class:`EvalError`;
- a cost guard standing for kube's cost limits (the Rust library exposes no cost): see
  :func:`estimated_cost`.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, InvalidOperation, localcontext
from typing import Any

from kubelite.api.errors import go_quote

#: kube's limits (k8s.io/apiserver/pkg/apis/cel/config.go)
PER_CALL_LIMIT = 1_000_000
RUNTIME_BUDGET = 10_000_000
STATIC_CRD_LIMIT = 100_000_000
#: the guard standing for the static cost estimate: no rule longer than this is compiled
MAX_EXPRESSION_LENGTH = 10_000

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


# --- the libraries --------------------------------------------------------------------------


def _marked(value: Any, mark: str) -> Any:
    if isinstance(value, dict) and len(value) == 1 and mark in value:
        return value[mark]
    return None


def _no_overload() -> _Fail:
    return _Fail("no such overload")


# strings (cel-go ext.Strings, version 2 as kube has it)


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


# lists (kube's library.Lists and cel-go ext.Lists version 3)


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


def _key(value: Any) -> Any:
    q = _marked(value, _QUANTITY)
    if q is not None:
        return Decimal(q)
    s = _marked(value, _SEMVER)
    if s is not None:
        return _semver_key(s)
    return value


def _list_arg(items: Any) -> list[Any]:
    if not isinstance(items, list):
        raise _no_overload()
    return items


def _is_sorted(items: Any) -> bool:
    keys = [_key(i) for i in _list_arg(items)]
    _comparable(items)
    return all(keys[i] <= keys[i + 1] for i in range(len(keys) - 1))


def _sum(items: Any) -> Any:
    items = _list_arg(items)
    if not items:
        return 0
    _comparable(items)
    if all(_marked(i, _QUANTITY) is not None for i in items):
        return _quantity_value(sum((Decimal(i[_QUANTITY]) for i in items), Decimal(0)))
    if any(isinstance(i, bool) or not isinstance(i, int | float) for i in items):
        from datetime import timedelta

        if all(isinstance(i, timedelta) for i in items):
            return sum(items, timedelta())
        raise _no_overload()
    total = sum(items)
    if isinstance(total, int) and not -(2**63) <= total < 2**63:
        raise _Fail("integer overflow")
    return total


def _extreme(name: str, pick: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        items = args[0] if len(args) == 1 and isinstance(args[0], list) else list(args)
        if not items:
            raise _Fail(f"{name} called on empty list")
        _comparable(items)
        return pick(items, key=_key)

    return run


def _slice(items: Any, start: Any, end: Any) -> list[Any]:
    items = _list_arg(items)
    if start < 0 or end < 0:
        raise _Fail(f"cannot slice({start}, {end}), negative indexes not supported")
    if start > end:
        raise _Fail(
            f"cannot slice({start}, {end}), start index must be less than or equal to end index"
        )
    if end > len(items):
        raise _Fail(f"cannot slice({start}, {end}), list is length {len(items)}")
    return list(items[start:end])


def _flatten(items: Any, depth: Any = 1) -> list[Any]:
    from cel import stdlib

    if not isinstance(depth, int) or depth < 0:
        raise _Fail("level must be non-negative")
    return stdlib.flatten(_list_arg(items), depth)


def _distinct(items: Any) -> list[Any]:
    out: list[Any] = []
    for item in _list_arg(items):
        if not any(_equal(item, seen) for seen in out):
            out.append(item)
    return out


def _sort(items: Any) -> list[Any]:
    items = _list_arg(items)
    _comparable(items)
    return sorted(items, key=_key)


def _first(items: Any) -> Any:
    from cel import OptionalValue

    items = _list_arg(items)
    return OptionalValue.of(items[0]) if items else OptionalValue.none()


def _last(items: Any) -> Any:
    from cel import OptionalValue

    items = _list_arg(items)
    return OptionalValue.of(items[-1]) if items else OptionalValue.none()


def _range(n: Any) -> list[int]:
    if not isinstance(n, int) or isinstance(n, bool):
        raise _no_overload()
    return list(range(n))


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str) and isinstance(item, str):
        return item in container
    if isinstance(container, list):
        return any(_equal(i, item) for i in container)
    raise _no_overload()


# sets (cel-go ext.Sets)


def _sets_contains(a: Any, b: Any) -> bool:
    return all(any(_equal(x, y) for y in _list_arg(a)) for x in _list_arg(b))


def _sets_equivalent(a: Any, b: Any) -> bool:
    return _sets_contains(a, b) and _sets_contains(b, a)


def _sets_intersects(a: Any, b: Any) -> bool:
    return any(any(_equal(x, y) for y in _list_arg(b)) for x in _list_arg(a))


# regex (kube's library.Regex)


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


# quantity (kube's library.Quantity; k8s.io/apimachinery/pkg/api/resource)

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


def _compare(a: Any, b: Any) -> int:
    if _marked(a, _SEMVER) is not None:
        x, y = _semver_key(_v(a)), _semver_key(_v(b))
    else:
        x, y = _q(a), _q(b)  # type: ignore[assignment]
    return (x > y) - (x < y)


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


# ip and cidr (kube's library.IP and library.CIDR)


def _parse_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if "%" in text:
        raise ValueError(f"IP address {go_quote(text)} with zone value is not allowed")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(
            f"IP Address {go_quote(text)} parse error during conversion from string: "
            f"ParseAddr({go_quote(text)}): unable to parse IP"
        ) from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise ValueError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return address


def _ip_of(value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    text = _marked(value, _IP)
    if text is None:
        raise _no_overload()
    return ipaddress.ip_address(text)


def _ip(value: Any) -> dict[str, str]:
    cidr = _marked(value, _CIDR)
    if cidr is not None:  # <cidr>.ip()
        return {_IP: cidr.split("/")[0]}
    if not isinstance(value, str):
        raise _no_overload()
    try:
        return {_IP: str(_parse_ip(value))}
    except ValueError as exc:
        raise _Fail(str(exc)) from None


def _is_ip(value: Any) -> bool:
    if not isinstance(value, str):
        raise _no_overload()
    try:
        _parse_ip(value)
    except ValueError:
        return False
    return True


def _ip_is_canonical(value: Any) -> bool:
    if not isinstance(value, str):
        raise _no_overload()
    try:
        return str(_parse_ip(value)) == value
    except ValueError as exc:
        raise _Fail(str(exc)) from None


def _family(value: Any) -> int:
    return _ip_of(value).version


def _parse_cidr(text: str) -> str:
    try:
        address, _, bits = text.partition("/")
        if not bits.isdigit() or (len(bits) > 1 and bits[0] == "0") or "%" in address:
            raise ValueError
        parsed = ipaddress.ip_address(address)
        if int(bits) > parsed.max_prefixlen:
            raise ValueError
        if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
            raise _Fail(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    except ValueError:
        raise _Fail(
            f"network address parse error during conversion from string: "
            f"netip.ParsePrefix({go_quote(text)}): bad prefix"
        ) from None
    return f"{parsed}/{int(bits)}"


def _cidr(value: Any) -> dict[str, str]:
    if not isinstance(value, str):
        raise _no_overload()
    return {_CIDR: _parse_cidr(value)}


def _is_cidr(value: Any) -> bool:
    if not isinstance(value, str):
        raise _no_overload()
    try:
        _parse_cidr(value)
    except _Fail:
        return False
    return True


def _network(value: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    text = _marked(value, _CIDR)
    if text is None:
        raise _no_overload()
    return ipaddress.ip_network(text, strict=False)


def _contains_ip(cidr: Any, ip: Any) -> bool:
    address = _ip_of(_ip(ip)) if isinstance(ip, str) else _ip_of(ip)
    network = _network(cidr)
    return address.version == network.version and address in network


def _contains_cidr(cidr: Any, other: Any) -> bool:
    inner = _network(_cidr(other) if isinstance(other, str) else other)
    outer = _network(cidr)
    return inner.version == outer.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def _masked(cidr: Any) -> dict[str, str]:
    return {_CIDR: str(_network(cidr))}


def _prefix_length(cidr: Any) -> int:
    return _network(cidr).prefixlen


def _ip_predicate(test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: bool(test(_ip_of(value)))


def _is_global_unicast(address: Any) -> bool:
    if address.is_multicast or address.is_loopback or address.is_link_local:
        return False
    if address.is_unspecified:
        return False
    return not (address.version == 4 and address == ipaddress.IPv4Address("255.255.255.255"))


def _is_link_local_multicast(address: Any) -> bool:
    if address.version == 4:
        return address in ipaddress.IPv4Network("224.0.0.0/24")
    return bool(address.is_multicast and (address.packed[1] & 0x0F) == 0x02)


# urls (kube's library.URLs)


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


# semver (kube's library.SemverLib, version 1)

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


def _greater(a: Any, b: Any) -> bool:
    return _compare(a, b) == 1


def _less(a: Any, b: Any) -> bool:
    return _compare(a, b) == -1


# format (kube's library.Format)


def _format_errors(name: str, text: str) -> list[str]:
    from kubelite.api import metavalidation, names

    def prefixed(s: str) -> str:
        return s[:-1] + "a" if s.endswith("-") else s

    if name in ("dns1123Label", "dns1123LabelPrefix"):
        return names.label_errors(prefixed(text) if name.endswith("Prefix") else text)
    if name in ("dns1123Subdomain", "dns1123SubdomainPrefix"):
        return names.subdomain_errors(prefixed(text) if name.endswith("Prefix") else text)
    if name in ("dns1035Label", "dns1035LabelPrefix"):
        value = prefixed(text) if name.endswith("Prefix") else text
        out = ["must be no more than 63 characters"] if len(value) > 63 else []
        if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", value):
            out.append(names.DNS1035_MESSAGE)
        return out
    if name == "qualifiedName":
        return metavalidation.qualified_name_errors(text)
    if name == "labelValue":
        return metavalidation.label_value_errors(text)
    if name == "uri":
        return [] if _is_url(text) else [f"parse {go_quote(text)}: invalid URI for request"]
    if name == "uuid":
        ok = re.fullmatch(
            r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", text
        )
        return [] if ok else ["does not match the UUID format"]
    if name == "byte":
        import base64
        import binascii

        try:
            base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return ["invalid base64"]
        return []
    if name == "date":
        import datetime

        try:
            datetime.date.fromisoformat(text)
        except ValueError:
            return ["invalid date"]
        return [] if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else ["invalid date"]
    if name == "datetime":
        import datetime

        ok = re.fullmatch(
            r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", text
        )
        try:
            if ok:
                datetime.datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
        except ValueError:
            ok = None
        return [] if ok else ["invalid datetime"]
    raise _no_overload()


FORMATS = (
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
)


def _format_named(name: Any) -> Any:
    from cel import OptionalValue

    if not isinstance(name, str):
        raise _no_overload()
    return OptionalValue.of({_FORMAT: name}) if name in FORMATS else OptionalValue.none()


def _validate(fmt: Any, text: Any) -> Any:
    from cel import OptionalValue

    name = _marked(fmt, _FORMAT)
    if name is None or not isinstance(text, str):
        raise _no_overload()
    errors = _format_errors(name, text)
    return OptionalValue.of(errors) if errors else OptionalValue.none()


# string() of kube's types (native string() handles CEL's own)


def _string(value: Any) -> str:
    for mark in (_IP, _CIDR, _URL, _SEMVER):
        text = _marked(value, mark)
        if text is not None:
            return str(text)
    raise _no_overload()


# optional field selection, the target of the ``.?`` and ``[?`` rewrite


def _opt_select(target: Any, key: Any) -> Any:
    from cel import OptionalValue

    if isinstance(target, OptionalValue):
        if not target.has_value():
            return target
        target = target.value()
    if isinstance(target, dict):
        return OptionalValue.of(target[key]) if key in target else OptionalValue.none()
    if isinstance(target, list) and isinstance(key, int) and not isinstance(key, bool):
        return OptionalValue.of(target[key]) if 0 <= key < len(target) else OptionalValue.none()
    raise _no_overload()


def _entries(target: Any) -> list[list[Any]]:
    """A two-variable comprehension's range: [index, value] of a list, [key, value] of a map."""
    if isinstance(target, list):
        return [[index, value] for index, value in enumerate(target)]
    marked = isinstance(target, dict) and any(str(k).startswith("@kubelite.") for k in target)
    if isinstance(target, dict) and not marked:
        return [[key, value] for key, value in target.items()]
    raise _no_overload()


def _to_map(pairs: Any) -> dict[Any, Any]:
    return {pair[0]: pair[1] for pair in _list_arg(pairs)}


def _merge_maps(maps: Any) -> dict[Any, Any]:
    """transformMapEntry's result: cel-go's mapInsert of each entry (types.mutableMap.Insert)."""
    out: dict[Any, Any] = {}
    for entry in _list_arg(maps):
        if not isinstance(entry, dict):
            raise _no_overload()
        for key, value in entry.items():
            if key in out:
                shown = str(key).lower() if isinstance(key, bool) else str(key)
                raise _Fail(f"insert failed: key {shown} already exists")
            out[key] = value
    return out


def _math(name: str) -> Callable[..., Any]:
    from cel import stdlib

    func = stdlib.EXTENSIONS["math"][name]

    def run(*args: Any) -> Any:
        try:
            return func(*args)
        except (TypeError, ValueError) as exc:
            raise _Fail(str(exc) or "no such overload") from None

    return run


def _functions() -> dict[str, Callable[..., Any]]:
    from cel import stdlib

    funcs: dict[str, Callable[..., Any]] = {
        # strings
        "charAt": _char_at,
        "indexOf": _index_of,
        "lastIndexOf": _last_index_of,
        "lowerAscii": lambda s: _ascii(s, False),
        "upperAscii": lambda s: _ascii(s, True),
        "replace": _replace,
        "split": _split,
        "substring": _substring,
        "trim": _trim,
        "join": _join,
        "strings.quote": stdlib.quote,
        "reverse": _reverse,
        # lists
        "isSorted": _is_sorted,
        "sum": _sum,
        "min": _extreme("min", min),
        "max": _extreme("max", max),
        "slice": _slice,
        "flatten": _flatten,
        "distinct": _distinct,
        "sort": _sort,
        "first": _first,
        "last": _last,
        "lists.range": _range,
        "contains": _contains,
        # sets
        "sets.contains": _sets_contains,
        "sets.equivalent": _sets_equivalent,
        "sets.intersects": _sets_intersects,
        # encoders
        "base64.encode": stdlib.base64_encode,
        "base64.decode": stdlib.base64_decode,
        # regex
        "find": _find,
        "findAll": _find_all,
        # urls
        "url": _url,
        "isURL": _is_url,
        "getScheme": lambda u: _u(u).scheme,
        "getHost": lambda u: _u(u).netloc.rpartition("@")[2],
        "getHostname": _get_hostname,
        "getPort": _get_port,
        "getEscapedPath": lambda u: _u(u).path,
        "getQuery": _get_query,
        # quantity
        "quantity": _quantity,
        "isQuantity": _is_quantity,
        "sign": _sign,
        "isGreaterThan": _greater,
        "isLessThan": _less,
        "compareTo": _compare,
        "asApproximateFloat": _as_float,
        "asInteger": _as_integer,
        "isInteger": _is_integer,
        "add": _add,
        "sub": _sub,
        "mul": _mul,
        # ip and cidr
        "ip": _ip,
        "isIP": _is_ip,
        "ip.isCanonical": _ip_is_canonical,
        "family": _family,
        "isUnspecified": _ip_predicate(lambda a: a.is_unspecified),
        "isLoopback": _ip_predicate(lambda a: a.is_loopback),
        "isLinkLocalMulticast": _ip_predicate(_is_link_local_multicast),
        "isLinkLocalUnicast": _ip_predicate(lambda a: a.is_link_local and not a.is_multicast),
        "isGlobalUnicast": _ip_predicate(_is_global_unicast),
        "cidr": _cidr,
        "isCIDR": _is_cidr,
        "containsIP": _contains_ip,
        "containsCIDR": _contains_cidr,
        "masked": _masked,
        "prefixLength": _prefix_length,
        # semver
        "semver": _semver,
        "isSemver": _is_semver,
        "major": _semver_part(0),
        "minor": _semver_part(1),
        "patch": _semver_part(2),
        # format
        "format.named": _format_named,
        "validate": _validate,
        "string": _string,
        # the optional-syntax rewrite
        _OPT_SELECT: _opt_select,
        # the macro rewrites
        _ENTRIES: _entries,
        _TO_MAP: _to_map,
        _MERGE_MAPS: _merge_maps,
    }
    for name in stdlib.EXTENSIONS["math"]:
        funcs[name] = _math(name)
    for name in FORMATS:
        funcs[f"format.{name}"] = functools.partial(lambda n: {_FORMAT: n}, name)
    return funcs


_ENTRIES = "kubeliteEntries"
_TO_MAP = "kubeliteToMap"
_MERGE_MAPS = "kubeliteMergeMaps"
#: cel-go's two-variable comprehension macros (ext.TwoVarComprehensions) and their arities
_TWO_VARIABLE = {
    "all": (3,), "exists": (3,), "existsOne": (3,), "exists_one": (3,),
    "transformList": (3, 4), "transformMap": (3, 4), "transformMapEntry": (3, 4),
}  # fmt: skip


#: functions and macros of the Rust library itself (cel-rust 0.14)
_NATIVE = frozenset(
    {
        "has", "all", "exists", "exists_one", "existsOne", "map", "filter",
        "size", "int", "uint", "double", "string", "bytes", "bool", "timestamp", "duration",
        "dyn", "type", "contains", "startsWith", "endsWith", "matches",
        "getFullYear", "getMonth", "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek",
        "getHours", "getMinutes", "getSeconds", "getMilliseconds",
        "optional.of", "optional.none", "optional.ofNonZeroValue",
        "hasValue", "value", "or", "orValue",
    }
)  # fmt: skip
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter", *_TWO_VARIABLE})
_TYPE_NAMES = frozenset(
    {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type",
     "dyn", "true", "false", "null", "in"}
)  # fmt: skip
_OPT_SELECT = "kubeliteOptionalSelect"


class _Activation(threading.local):
    values: dict[str, Any] = {}  # noqa: RUF012 - per thread, replaced on every evaluation


_activation = _Activation()


@functools.cache
def _context() -> Any:
    """The one context: every function, and the variables of the evaluation under way (an
    evaluation runs to its end without yielding, so one per thread is enough)."""
    import logging

    import cel

    # a library function's error is the rule's runtime error, reported to the client: the
    # package's log line for it would be noise in the server's log
    logging.getLogger("cel").addFilter(lambda record: "_Fail" not in record.getMessage())
    context = cel.Context(functions={n: _guarded(f) for n, f in _functions().items()})
    context.set_variable_resolver(lambda name: _activation.values.get(name))
    return context


def _guarded(func: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        try:
            return func(*args)
        except _Fail:
            raise
        except (TypeError, KeyError, IndexError, AttributeError, AssertionError):
            raise _Fail("no such overload") from None

    return call


@functools.cache
def known_functions() -> frozenset[str]:
    return frozenset(_functions()) | _NATIVE


# --- compiling ------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>//[^\n]*)
    |(?P<string>[rR]?[bB]?[rR]?('''(?:\\.|[^\\])*?'''|\"\"\"(?:\\.|[^\\])*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"))
    |(?P<number>\d[\w.]*)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<punct>\.\?|\[\?|&&|\|\||==|!=|<=|>=|.)""",
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    pos: int


def _tokens(source: str) -> list[_Token]:
    out: list[_Token] = []
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup or "punct"
        if kind in ("space", "comment"):
            continue
        out.append(_Token(kind, match.group(), match.start()))
    return out


def _rewrite_optionals(source: str) -> str:
    """``a.?b`` -> ``a.kubeliteOptionalSelect("b")``, ``a[?k]`` -> the same call with ``k``."""
    tokens = _tokens(source)
    if not any(t.text in (".?", "[?") for t in tokens):
        return source
    pieces: list[str] = []
    last = 0
    closers: list[bool] = []  # per open bracket: is it a rewritten [? (closes with ')')
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.text == ".?" and i + 1 < len(tokens) and tokens[i + 1].kind == "ident":
            name = tokens[i + 1]
            pieces.append(source[last : tok.pos])
            pieces.append(f'.{_OPT_SELECT}("{name.text}")')
            last = name.pos + len(name.text)
            i += 2
            continue
        if tok.text == "[?":
            pieces.append(source[last : tok.pos])
            pieces.append(f".{_OPT_SELECT}(")
            last = tok.pos + 2
            closers.append(True)
        elif tok.text == "[":
            closers.append(False)
        elif tok.text == "]" and closers and closers.pop():
            pieces.append(source[last : tok.pos])
            pieces.append(")")
            last = tok.pos + 1
        i += 1
    pieces.append(source[last:])
    return "".join(pieces)


class _MacroRewrite:
    """cel-go's macros the Rust library lacks, rewritten to ones it has, token by token (so a
    string literal holding the same text is left alone), each argument rewritten in turn (so
    nested uses expand inside out):

    - ``cel.bind(x, init, body)`` (ext.Bindings) -> ``[init].map(x, body)[0]``: ``init``
      evaluated once and ``x`` scoped to ``body`` as a comprehension variable, shadowing an
      outer ``x`` exactly as cel-go's comprehension accumulator does;
    - ``t.all(i, v, p)`` and the other two-variable comprehensions (ext.TwoVarComprehensions)
      -> a one-variable comprehension over ``t``'s [index or key, value] pairs, ``i`` and ``v``
      bound from the pair as above; ``transformMap`` and ``transformMapEntry`` build their map
      from the list the comprehension makes.

    The pair variable's name (``kl__e0``, ...) is one the source does not hold anywhere, so it
    shadows nothing of the user's. ``offsets`` maps a position of the rewritten text back to the
    source, for cel-go's issue texts."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.tokens = _tokens(source)
        self.issues: list[tuple[int, str]] = []
        self.prefix = "kl__e"
        while self.prefix in source:
            self.prefix = "_" + self.prefix
        self.count = 0
        self.closing: dict[int, int] = {}
        opened: list[int] = []
        for i, tok in enumerate(self.tokens):
            if tok.kind == "punct" and tok.text in ("(", "[", "{", "[?"):
                opened.append(i)
            elif tok.kind == "punct" and tok.text in (")", "]", "}") and opened:
                self.closing[opened.pop()] = i
        self.pieces: list[tuple[str, int, bool]] = []  # text, source position, copied?

    def run(self) -> str:
        self._emit_range(0, len(self.tokens), 0, len(self.source))
        return "".join(text for text, _, _ in self.pieces)

    def source_position(self, pos: int) -> int:
        at = 0
        for text, origin, copied in self.pieces:
            if pos < at + len(text):
                return origin + (pos - at) if copied else origin
            at += len(text)
        return len(self.source)

    def _end(self, i: int) -> int:
        return self.tokens[i].pos + len(self.tokens[i].text)

    def _copy(self, start: int, end: int) -> None:
        if end > start:
            self.pieces.append((self.source[start:end], start, True))

    def _insert(self, text: str, origin: int) -> None:
        self.pieces.append((text, origin, False))

    def _emit_range(self, lo: int, hi: int, start: int, end: int) -> None:
        """Tokens lo..hi (source text start..end), their macros rewritten."""
        cursor = start
        i = lo
        while i < hi:
            done = self._bind(i, cursor) if i + 3 < hi else None
            if done is None and i + 2 < hi:
                done = self._two_variable(i, cursor)
            if done is None:
                i += 1
                continue
            cursor, i = done
        self._copy(cursor, end)

    def _arguments(self, open_index: int) -> list[tuple[int, int]]:
        """The token ranges of a call's arguments (between its parentheses)."""
        close = self.closing.get(open_index, len(self.tokens))
        args: list[tuple[int, int]] = []
        first = j = open_index + 1
        while j < close:
            if j in self.closing:
                j = self.closing[j] + 1
                continue
            if self.tokens[j].text == ",":
                args.append((first, j))
                first = j + 1
            j += 1
        if first < close or args:
            args.append((first, close))
        return args

    def _argument(self, arg: tuple[int, int]) -> None:
        lo, hi = arg
        if lo < hi:
            self._emit_range(lo, hi, self.tokens[lo].pos, self._end(hi - 1))

    def _name(self, arg: tuple[int, int], message: str) -> str:
        lo, hi = arg
        if hi == lo + 1 and self.tokens[lo].kind == "ident":
            return self.tokens[lo].text
        at = self.tokens[hi - 2].pos if hi - lo >= 3 and self.tokens[hi - 2].text == "." else None
        self.issues.append((at if at is not None else self.tokens[min(lo, hi)].pos, message))
        return "_"

    def _bound(self, name: str, value: str, origin: int, body: Callable[[], None]) -> None:
        """``body`` with ``name`` bound to the expression ``value`` (text of the rewrite)."""
        self._insert(f"[{value}].map({name}, ", origin)
        body()
        self._insert(")[0]", origin)

    def _bind(self, i: int, cursor: int) -> tuple[int, int] | None:
        toks = self.tokens
        if not (
            toks[i].text == "cel"
            and toks[i].kind == "ident"
            and (i == 0 or toks[i - 1].text not in (".", ".?"))
            and toks[i + 1].text == "."
            and toks[i + 2].text == "bind"
            and toks[i + 3].text == "("
        ):
            return None
        args = self._arguments(i + 3)
        if len(args) != 3:
            return None
        close = self.closing.get(i + 3, len(toks) - 1)
        name = self._name(args[0], "cel.bind() variable names must be simple identifiers")
        self._copy(cursor, toks[i].pos)
        self._insert("[", toks[i].pos)
        self._argument(args[1])
        self._insert(f"].map({name}, ", toks[i].pos)
        self._argument(args[2])
        self._insert(")[0]", toks[i].pos)
        return self._end(close), close + 1

    def _two_variable(self, i: int, cursor: int) -> tuple[int, int] | None:
        toks = self.tokens
        macro = toks[i + 1].text
        if not (
            toks[i].text == "."
            and toks[i + 1].kind == "ident"
            and macro in _TWO_VARIABLE
            and toks[i + 2].text == "("
        ):
            return None
        args = self._arguments(i + 2)
        if len(args) not in _TWO_VARIABLE[macro]:
            return None
        close = self.closing.get(i + 2, len(toks) - 1)
        first = self._name(args[0], "argument must be a simple name")
        second = self._name(args[1], "argument must be a simple name")
        pair = f"{self.prefix}{self.count}"
        self.count += 1
        origin = toks[i].pos
        self._copy(cursor, origin)

        def bound(arg: tuple[int, int]) -> None:
            self._bound(
                first, f"{pair}[0]", origin,
                lambda: self._bound(second, f"{pair}[1]", origin, lambda: self._argument(arg)),
            )  # fmt: skip

        method = "map" if macro.startswith("transform") else macro
        self._insert(f".{_ENTRIES}().{method}({pair}, ", origin)
        if len(args) == 4:
            bound(args[2])
            self._insert(", ", origin)
        if macro == "transformMap":
            self._insert(f"[{pair}[0], ", origin)
            bound(args[-1])
            self._insert("]", origin)
        else:
            bound(args[-1])
        self._insert(")", origin)
        if macro == "transformMap":
            self._insert(f".{_TO_MAP}()", origin)
        elif macro == "transformMapEntry":
            self._insert(f".{_MERGE_MAPS}()", origin)
        return self._end(close), close + 1


def _issue(source: str, pos: int, message: str) -> str:
    """One cel-go issue: ``ERROR: <input>:line:col: message`` and the snippet with a caret."""
    line_start = source.rfind("\n", 0, pos) + 1
    line_end = source.find("\n", pos)
    line = source[line_start : line_end if line_end >= 0 else len(source)]
    column = pos - line_start
    number = source.count("\n", 0, pos) + 1
    snippet = line.replace("\t", " ")
    return (
        f"ERROR: <input>:{number}:{column + 1}: {message}\n | {snippet}\n | " + "." * column + "^"
    )


def _parse_error(source: str, exc: Exception) -> str:
    text = str(exc)
    at = text.find("ERROR: ")
    body = text[at:] if at >= 0 else text
    return "\n".join(" " + line if line.startswith("| ") else line for line in body.split("\n"))


def _depth(source: str) -> int:
    """The deepest nesting of comprehensions (the cost guard's exponent)."""
    tokens = _tokens(source)
    depth = deepest = 0
    stack: list[bool] = []
    for i, tok in enumerate(tokens):
        if tok.text in "([{" and tok.kind == "punct":
            macro = tok.text == "(" and i >= 2 and tokens[i - 1].text in _MACROS
            macro = macro and tokens[i - 2].text == "."
            stack.append(macro)
            depth += macro
            deepest = max(deepest, depth)
        elif tok.text in ")]}" and tok.kind == "punct" and stack:
            depth -= stack.pop()
    return deepest


def _check(source: str, variables: frozenset[str]) -> list[tuple[int, str]]:
    """Undeclared references: (position, message)."""
    tokens = _tokens(source)
    known = known_functions()
    namespaces = {name.split(".")[0] for name in known if "." in name}
    bound: set[str] = set()
    for i, tok in enumerate(tokens[:-3]):
        if (
            tok.text == "."
            and tokens[i + 1].text in _MACROS
            and tokens[i + 2].text == "("
            and tokens[i + 3].kind == "ident"
        ):
            bound.add(tokens[i + 3].text)
    issues: list[tuple[int, str]] = []
    for i, tok in enumerate(tokens):
        before = tokens[i - 1].text if i else ""
        after = tokens[i + 1].text if i + 1 < len(tokens) else ""
        if tok.kind != "ident":
            continue
        if before == ".?":
            continue
        if before == ".":
            if after == "(":
                qualifier = tokens[i - 2] if i >= 2 else None
                qualified = (
                    qualifier is not None
                    and qualifier.kind == "ident"
                    and (i < 3 or tokens[i - 3].text != ".")
                    and qualifier.text in namespaces
                    and qualifier.text not in variables
                )
                name = f"{qualifier.text}.{tok.text}" if qualified and qualifier else tok.text
                if name not in known:
                    issues.append(
                        (tokens[i + 1].pos, f"undeclared reference to '{name}' (in container '')")
                    )
            continue
        if after == "(":
            if tok.text not in known:
                issues.append(
                    (tokens[i + 1].pos, f"undeclared reference to '{tok.text}' (in container '')")
                )
            continue
        if tok.text in variables or tok.text in bound or tok.text in _TYPE_NAMES:
            continue
        if tok.text in namespaces and after == "." and tok.text not in variables:
            continue
        if after == ":" and before in ("{", ","):
            pass  # a map key is an expression too: fall through to the check
        issues.append((tok.pos, f"undeclared reference to '{tok.text}' (in container '')"))
    return issues


#: the result types of calls whose type cel-go's checker knows whatever their arguments
_RESULT_KINDS = {
    "size": "int", "int": "int", "uint": "uint", "double": "double", "bool": "bool",
    "has": "bool", "matches": "bool", "startsWith": "bool", "endsWith": "bool",
    "all": "bool", "exists": "bool", "exists_one": "bool", "existsOne": "bool",
    "map": "list", "filter": "list", "duration": "google.protobuf.Duration",
    "timestamp": "google.protobuf.Timestamp", "string": "string",
}  # fmt: skip
_COMPARISONS = frozenset({"==", "!=", "<", "<=", ">", ">=", "in", "&&", "||"})


def _literal_kind(tok: _Token) -> str | None:
    if tok.kind == "string":
        return "bytes" if "b" in tok.text.split(tok.text[-1])[0].lower() else "string"
    if tok.kind == "number":
        if tok.text[-1] in "uU":
            return "uint"
        hexadecimal = tok.text.lower().startswith("0x")
        return "double" if not hexadecimal and any(c in tok.text for c in ".eE") else "int"
    return {"true": "bool", "false": "bool", "null": "null_type"}.get(tok.text)


def result_kind(source: str) -> str | None:
    """The type of ``source``'s result where it shows without the schema's types (a literal, a
    comparison or logical operator at the top, a call whose result type is fixed), else None.
    cel-go's checker knows every rule's type; kubelite's stands for it where it can be sure:
    for ``cel expression must evaluate to a bool`` and ``messageExpression must evaluate to a
    string`` (apiextensions' compileRule)."""
    tokens = _tokens(source)
    if not tokens:
        return None
    closing: dict[int, int] = {}
    opened: list[int] = []
    top: list[int] = []
    for i, tok in enumerate(tokens):
        if not opened:
            top.append(i)
        if tok.kind == "punct" and tok.text in ("(", "[", "{", "[?"):
            opened.append(i)
        elif tok.kind == "punct" and tok.text in (")", "]", "}") and opened:
            closing[opened.pop()] = i
    texts = [tokens[i].text for i in top]
    if "?" in texts:
        return None
    if any(text in _COMPARISONS for text in texts):
        return "bool"
    last = len(tokens) - 1
    if len(tokens) == 1:
        return _literal_kind(tokens[0])
    if any(text in ("+", "-", "*", "/", "%") for text in texts[1:]):
        return None
    if texts[0] == "!":
        return "bool"
    if closing.get(0) == last and tokens[0].text in ("[", "{"):
        return "list" if tokens[0].text == "[" else "map"
    call = next((i for i, j in closing.items() if j == last and tokens[i].text == "("), None)
    if call is not None and call >= 1 and tokens[call - 1].kind == "ident":
        name = tokens[call - 1].text
        member = call >= 2 and tokens[call - 2].text == "."
        if call == 1 or member:
            return _RESULT_KINDS.get(name)
    return None


@dataclass(frozen=True)
class Compiled:
    """A compiled expression: the program, what it references, its comprehension depth."""

    source: str
    program: Any
    variables: frozenset[str]
    depth: int


@functools.lru_cache(maxsize=4096)
def _compile(source: str, variables: frozenset[str]) -> Compiled:
    import cel  # on first use: the package also imports its CLI (~250 ms)

    if len(source) > MAX_EXPRESSION_LENGTH:
        raise CompileError(
            f"expression is longer than kubelite's limit of {MAX_EXPRESSION_LENGTH} characters "
            "(it stands for kube's estimated cost limit)"
        )
    try:  # syntax errors first, at the source's positions
        program = cel.compile(_rewrite_optionals(source))
    except ValueError as exc:
        raise CompileError(_parse_error(source, exc)) from None
    rewrite = _MacroRewrite(source)
    expanded = rewrite.run()
    issues = rewrite.issues or [
        (rewrite.source_position(pos), message) for pos, message in _check(expanded, variables)
    ]
    if issues:
        issues.sort()
        raise CompileError("\n".join(_issue(source, pos, message) for pos, message in issues))
    if expanded != source:
        program = cel.compile(_rewrite_optionals(expanded))
    depth = _depth(source)
    used = frozenset(v for v in program.variables() if v in variables)
    return Compiled(source, program, used, depth)


def compile_expression(source: str, variables: Iterable[str] = ("self",)) -> Compiled:
    """Compile ``source`` with the given variables declared (raises :class:`CompileError`)."""
    return _compile(source, frozenset(variables))


# --- evaluating -----------------------------------------------------------------------------


def _size(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_size(v) + 1 for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_size(v) for v in value)
    if isinstance(value, str):
        return 1 + len(value) // 64
    return 1


def estimated_cost(compiled: Compiled, activation: dict[str, Any]) -> int:
    """The guard standing for cel-go's actual cost: the size of the data the expression can
    traverse, raised to the power of its comprehension nesting (at least 1). An upper bound of
    the same order as cel-go's cost for the quadratic (and worse) rules kube's limits catch."""
    size = sum(_size(activation[name]) for name in compiled.variables if name in activation)
    return int(max(1, size) ** max(1, compiled.depth))


def _translate(exc: Exception) -> EvalError:
    text = str(exc)
    if isinstance(exc, KeyError):
        key = exc.args[0] if exc.args else ""
        return EvalError(f"no such key: {key}")
    if isinstance(exc, ZeroDivisionError):
        return EvalError("modulus by zero" if "modulo" in text else "division by zero")
    if isinstance(exc, OverflowError):
        return EvalError("integer overflow")
    if isinstance(exc, IndexError):
        return EvalError(text)
    if isinstance(exc, TypeError) and text.startswith("No such overload"):
        return EvalError("no such overload", "overload")
    match = re.match(
        r"Function '([^']*)' error: (?:Python function call failed: (?:\w+\.)*(\w+): )?(.*?)"
        r"(?:\. Check function arguments and their types\.)?$",
        text,
        re.DOTALL,
    )
    if match:
        _name, kind, message = match.groups()
        bad_regex = re.match(r"'(.*)' not a valid regex:.*\nerror: (.*)$", message, re.DOTALL)
        if bad_regex:
            return EvalError(f"error parsing regexp: {bad_regex[2]}: `{bad_regex[1]}`")
        if kind == "_Fail" or kind is None:
            kind_name = "overload" if message.startswith("no such overload") else "other"
            return EvalError(message, kind_name)
        return EvalError(message)
    if text.startswith("Undefined variable or function"):
        return EvalError("no such overload", "overload")
    return EvalError(text)


def evaluate(
    compiled: Compiled, activation: dict[str, Any], *, limit: int = PER_CALL_LIMIT
) -> tuple[Any, int]:
    """Evaluate; returns the result and the cost charged (raises :class:`EvalError`)."""
    cost = estimated_cost(compiled, activation)
    if cost > limit:
        raise EvalError("operation cancelled: actual cost limit exceeded", "cost")
    context = _context()
    _activation.values = activation  # read by the context's variable resolver
    try:
        return compiled.program.execute(context), cost
    except Exception as exc:  # the library raises builtin exception types
        raise _translate(exc) from None
    finally:
        _activation.values = {}


__all__ = [
    "PER_CALL_LIMIT",
    "RUNTIME_BUDGET",
    "STATIC_CRD_LIMIT",
    "CompileError",
    "Compiled",
    "EvalError",
    "compile_expression",
    "estimated_cost",
    "evaluate",
]
