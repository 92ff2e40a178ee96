"""JSON in and out of the store and the wire, as deep as kube-apiserver reads it.

kube-apiserver reads JSON nested up to 10000 levels (encoding/json's scanner, ``maxNestingDepth``)
and keeps what a free-form field holds (a ``RawExtension``, a custom resource's
``x-kubernetes-preserve-unknown-fields``) at any depth it read: such an object is stored, served,
listed, watched and patched like any other. orjson, used for speed everywhere, refuses to write
more than 254 levels and to read more than 1024. :func:`dumps`, :func:`loads` and :func:`clone`
are orjson's calls, falling back to the standard library on a large stack (:func:`deep`) only
when orjson refuses a value for its depth, so the common path keeps orjson's speed.

Python's own walks of such a value (managedFields, merges, comparisons) recurse past the default
recursion limit: :func:`deeply` runs a call again on a large stack, and :func:`on_large_stack`
runs a whole request's coroutine there, step by step, for the server to retry a request that
failed with ``RecursionError``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, TypeVar

import orjson

__all__ = [
    "MAX_DEPTH",
    "clone",
    "deep",
    "deeply",
    "dumps",
    "equal",
    "loads",
    "on_large_stack",
    "too_deep",
]

T = TypeVar("T")

#: Go's encoding/json nesting limit (scanner.go ``maxNestingDepth``): deeper is a syntax error.
MAX_DEPTH = 10000

_ENCODE_DEPTH = "Recursion limit reached"  # orjson.dumps' error past 254 levels
_DECODE_DEPTH = "depth limit"  # orjson.loads' error past 1024 levels


def too_deep(exc: BaseException) -> bool:
    """Whether an orjson error (or a RecursionError) is about nesting depth only."""
    if isinstance(exc, RecursionError):
        return True
    text = str(exc)
    return _ENCODE_DEPTH in text or _DECODE_DEPTH in text


def dumps(value: Any, option: int = 0) -> bytes:
    """``orjson.dumps(value, option=option)`` at any depth (``OPT_SORT_KEYS`` and
    ``OPT_APPEND_NEWLINE`` are the options honoured on the slow path); raises
    ``orjson.JSONEncodeError`` for what is not JSON."""
    try:
        return orjson.dumps(value, option=option)
    except orjson.JSONEncodeError as exc:
        if not too_deep(exc):
            raise
    return deep(lambda: _stdlib_dumps(value, option))


def _stdlib_dumps(value: Any, option: int) -> bytes:
    try:
        text = json.dumps(
            value,
            ensure_ascii=False,
            separators=(",", ":"),
            sort_keys=bool(option & orjson.OPT_SORT_KEYS),
            allow_nan=False,
        )
        data = text.encode()
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise orjson.JSONEncodeError(str(exc)) from None
    return data + b"\n" if option & orjson.OPT_APPEND_NEWLINE else data


def loads(raw: bytes | str) -> Any:
    """``orjson.loads(raw)`` at any depth; raises ``orjson.JSONDecodeError`` for what is not
    JSON (on the slow path, the standard library's error)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if not too_deep(exc):
            raise
    return deep(lambda: strict_loads(raw))


def strict_loads(raw: bytes | str) -> Any:
    """The standard library's ``json.loads`` refusing what orjson (and Go) refuse and it takes:
    ``NaN`` and ``Infinity``, numbers too large for a double, lone surrogate escapes. Raises
    ``ValueError`` with orjson's text. Call it on a large stack (:func:`deep`)."""
    value = json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        raise ValueError("no low surrogate in string") from None
    return value


def _no_constant(text: str) -> Any:
    raise ValueError("unexpected character, expected a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("number is infinity when parsed as double")
    return value


def clone(value: Any) -> Any:
    """A deep copy of a JSON value: through orjson, several times faster than copy.deepcopy."""
    try:
        return orjson.loads(orjson.dumps(value))
    except orjson.JSONEncodeError as exc:
        if not too_deep(exc):
            raise
    return deep(lambda: json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False)))


def equal(a: Any, b: Any) -> bool:
    """``a == b`` at any depth (Python's comparison of nested values recurses)."""
    return deeply(lambda: bool(a == b))


def deeply(call: Callable[[], T]) -> T:
    """``call()``, run again on a large stack (:func:`deep`) when it recursed too deep for the
    default one: for a walk of an object that may hold a deeply nested free-form value.
    ``call`` must not change anything before it can fail (it may run twice)."""
    try:
        return call()
    except RecursionError:
        return deep(call)


def deep(call: Callable[[], T]) -> T:
    """Run ``call`` on a thread with a large stack and a raised recursion limit: for values
    nested deeper than the default limit allows, up to :data:`MAX_DEPTH`. Blocking; rare.
    Called on such a thread already, ``call`` runs there."""
    if threading.current_thread().name == _WORKER:
        return call()
    result: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # re-raised on the caller's thread
            failure.append(exc)

    with _DEEP_LOCK:
        old_limit = sys.getrecursionlimit()
        old_stack = threading.stack_size()
        sys.setrecursionlimit(max(old_limit, 8 * MAX_DEPTH))
        try:
            threading.stack_size(512 * 1024 * 1024)
            worker = threading.Thread(target=run, name=_WORKER)
            threading.stack_size(old_stack)
            worker.start()
            worker.join()
        finally:
            sys.setrecursionlimit(old_limit)
    if failure:
        raise failure[0]
    return result[0]


async def on_large_stack(coro: Awaitable[T]) -> T:
    """Await ``coro`` with each of its steps run by :func:`deep` (a large stack, a raised
    recursion limit), as the running task would run it: in one context, with the event loop
    seen as running. The loop waits while a step runs, as it does for any step."""
    if not isinstance(coro, Coroutine):
        return await coro
    result: T = await _Stepper(coro, asyncio.get_running_loop())
    return result


class _Stepper:
    def __init__(self, coro: Coroutine[Any, Any, Any], loop: asyncio.AbstractEventLoop) -> None:
        self.coro = coro
        self.loop = loop
        self.context = contextvars.copy_context()

    def _step(self, value: Any, error: BaseException | None) -> Any:
        asyncio._set_running_loop(self.loop)
        try:
            if error is not None:
                return self.context.run(self.coro.throw, error)
            return self.context.run(self.coro.send, value)
        finally:
            asyncio._set_running_loop(None)

    def __await__(self) -> Generator[Any, Any, Any]:
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                yielded = deep(functools.partial(self._step, value, error))
            except StopIteration as stop:
                return stop.value
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # cancellation and the like: thrown into the coroutine
                value, error = None, exc


_DEEP_LOCK = threading.Lock()
_WORKER = "kubelite-deep-body"
