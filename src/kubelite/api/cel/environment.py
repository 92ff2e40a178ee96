"""The environment: every function of kube's CEL environment (the extensions and Kubernetes'
libraries) registered on one shared context of the Rust library, and the names it knows."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from kubelite.api.cel import authz, objects
from kubelite.api.cel.composition import _VARIABLE, _variable
from kubelite.api.cel.formats import FORMATS, _format_named, _validate
from kubelite.api.cel.formatting import string_format
from kubelite.api.cel.ip import (
    _cidr,
    _contains_cidr,
    _contains_ip,
    _family,
    _ip,
    _ip_is_canonical,
    _ip_predicate,
    _is_cidr,
    _is_global_unicast,
    _is_ip,
    _is_link_local_multicast,
    _masked,
    _prefix_length,
)
from kubelite.api.cel.lists import (
    _contains,
    _distinct,
    _extreme,
    _first,
    _flatten,
    _is_sorted,
    _last,
    _range,
    _sets_contains,
    _sets_equivalent,
    _sets_intersects,
    _slice,
    _sort,
    _sum,
)
from kubelite.api.cel.macros import _ENTRIES, _MERGE_MAPS, _TO_MAP, _TWO_VARIABLE
from kubelite.api.cel.ordering import _compare, _greater, _less
from kubelite.api.cel.quantity import (
    _add,
    _as_float,
    _as_integer,
    _is_integer,
    _is_quantity,
    _mul,
    _quantity,
    _sign,
    _sub,
)
from kubelite.api.cel.regex import _find, _find_all
from kubelite.api.cel.semver import _is_semver, _semver, _semver_part
from kubelite.api.cel.strings import (
    _ascii,
    _char_at,
    _index_of,
    _join,
    _last_index_of,
    _replace,
    _reverse,
    _split,
    _substring,
    _trim,
)
from kubelite.api.cel.syntax import _OPT_SELECT
from kubelite.api.cel.urls import _get_hostname, _get_port, _get_query, _is_url, _u, _url
from kubelite.api.cel.values import (
    _CIDR,
    _FORMAT,
    _IP,
    _SEMVER,
    _URL,
    _Fail,
    _list_arg,
    _marked,
    _no_overload,
)


# string() of kube's types (native string() handles CEL's own)
def _string(value: Any) -> str:
    if isinstance(value, bool):  # cel-go's string(bool); the Rust library has none
        return "true" if value else "false"
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
        "format": string_format,
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
        # composited variables (admission policies' ``variables.<name>``)
        _VARIABLE: _variable,
        # the authorizer library
        **authz.FUNCTIONS,
        # mutating admission policies' jsonpatch library
        **objects.FUNCTIONS,
    }
    for name in stdlib.EXTENSIONS["math"]:
        funcs[name] = _math(name)
    for name in FORMATS:
        funcs[f"format.{name}"] = functools.partial(lambda n: {_FORMAT: n}, name)
    return funcs


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


class _Activation(threading.local):
    values: dict[str, Any] = {}  # noqa: RUF012 - per thread, replaced on every evaluation


_activation = _Activation()


@functools.cache
def _guarded_functions() -> dict[str, Callable[..., Any]]:
    import logging

    # a library function's error is the rule's runtime error, reported to the client: the
    # package's log line for it would be noise in the server's log
    logging.getLogger("cel").addFilter(lambda record: "_Fail" not in record.getMessage())
    return {n: _guarded(f) for n, f in _functions().items()}


@functools.cache
def _context(nulls: frozenset[str] = frozenset()) -> Any:
    """The context: every function, and the variables of the evaluation under way (an
    evaluation runs to its end without yielding, so one per thread is enough). The resolver
    cannot answer null (the library takes None for "no such variable"), so the variables that
    are null in an evaluation (an admission policy's ``oldObject`` on create) are the
    context's own: one context per set of them."""
    import cel

    context = cel.Context(variables=dict.fromkeys(nulls), functions=_guarded_functions())
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
