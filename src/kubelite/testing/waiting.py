"""Waiting for an object to reach a state, as ``kubectl wait --for=...`` does.

A state is kubectl's spelling (``condition=Ready``, ``condition=Ready=False``, ``delete``,
``create``, ``jsonpath={.status.phase}=Running``) or a predicate on the object. The object is
read until the state holds (polling, every :data:`POLL_SECONDS`), and the wait ends with
:class:`WaitTimeout`, which shows the object as last read, after ``timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubelite.client import AsyncClient, Client, NotFound, Object

POLL_SECONDS = 0.05
DEFAULT_TIMEOUT = 30.0

State = str | Callable[[Object], bool]
Check = Callable[[Object | None], bool]


class WaitTimeout(TimeoutError):
    """The state did not hold in time; ``last`` is the object as last read (None: absent)."""

    def __init__(self, what: str, state: State, last: Object | None) -> None:
        shown = json.dumps(last, indent=2, default=str) if last is not None else "(not found)"
        super().__init__(f"timed out waiting for {what} to be {state!r}; last read:\n{shown}")
        self.last = last


def state_check(state: State) -> Check:
    """``state`` as a test of the object read (None when it does not exist)."""
    if callable(state):
        predicate = state
        return lambda obj: obj is not None and bool(predicate(obj))
    if state == "delete":
        return lambda obj: obj is None
    if state == "create":
        return lambda obj: obj is not None
    kind, _, rest = state.partition("=")
    if kind == "condition" and rest:
        name, _, wanted = rest.partition("=")
        return lambda obj: obj is not None and _condition(obj, name, wanted or "True")
    if kind == "jsonpath" and rest:
        match = re.fullmatch(r"\{(.+?)\}(?:=(.*))?", rest)
        if match is None:
            raise ValueError(f"jsonpath must look like {{.status.phase}}=Value: {state!r}")
        path, wanted = _jsonpath_steps(match.group(1)), match.group(2)
        return lambda obj: obj is not None and _at_path(obj, path, wanted)
    raise ValueError(
        f"unknown state {state!r}: condition=<type>[=<status>], delete, create, "
        "jsonpath={.path}[=value], or a predicate"
    )


def _condition(obj: Mapping[str, Any], name: str, wanted: str) -> bool:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if str(condition.get("type", "")).lower() == name.lower():
            return str(condition.get("status", "")).lower() == wanted.lower()
    return False


def _jsonpath_steps(path: str) -> list[str | int]:
    steps: list[str | int] = []
    for part in re.findall(r"\.([^.\[\]]+)|\[(\d+)\]", path):
        steps.append(part[0] if part[0] else int(part[1]))
    return steps


def _at_path(obj: Any, path: list[str | int], wanted: str | None) -> bool:
    value = obj
    for step in path:
        if isinstance(step, int):
            if not isinstance(value, list) or step >= len(value):
                return False
        elif not isinstance(value, dict) or step not in value:
            return False
        value = value[step]
    if wanted is None:
        return bool(value)
    shown = value if isinstance(value, str) else json.dumps(value)
    return shown == wanted


def _describe(kind: str, name: str, namespace: str | None) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def wait_for(
    client: Client,
    api_version: str,
    kind: str,
    name: str,
    state: State,
    *,
    namespace: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Object | None:
    """Read the object until ``state`` holds; returns it as read then (None for ``delete``)."""
    check = state_check(state)
    deadline = time.monotonic() + timeout
    while True:
        try:
            obj: Object | None = client.get(api_version, kind, name, namespace)
        except NotFound:
            obj = None
        if check(obj):
            return obj
        if time.monotonic() >= deadline:
            raise WaitTimeout(_describe(kind, name, namespace), state, obj)
        time.sleep(POLL_SECONDS)


async def wait_for_async(
    client: AsyncClient,
    api_version: str,
    kind: str,
    name: str,
    state: State,
    *,
    namespace: str | None = None,
    # wait_for's signature (kubectl wait's --timeout): the error it raises shows the last read
    timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109
) -> Object | None:
    """:func:`wait_for` with an :class:`~kubelite.client.AsyncClient`."""
    check = state_check(state)
    deadline = time.monotonic() + timeout
    while True:
        try:
            obj: Object | None = await client.get(api_version, kind, name, namespace)
        except NotFound:
            obj = None
        if check(obj):
            return obj
        if time.monotonic() >= deadline:
            raise WaitTimeout(_describe(kind, name, namespace), state, obj)
        await asyncio.sleep(POLL_SECONDS)
