"""A memo keyed by the identity of shared objects that never change (a kind's ResourceInfo, a
schema node): found by ``id()``, which is cheap where hashing the object is not (a dict) or
costs a walk of its fields. An entry holds its key objects, so their ids cannot be another
object's while it lives; past ``limit`` entries the memo starts over."""

from __future__ import annotations

from typing import Generic, TypeVar

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """Values by one or two key objects, compared by identity."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._entries: dict[tuple[int, int], tuple[object, object, V]] = {}

    def get(self, first: object, second: object = None) -> V | None:
        entry = self._entries.get((id(first), id(second)))
        if entry is not None and entry[0] is first and entry[1] is second:
            return entry[2]
        return None

    def put(self, value: V, first: object, second: object = None) -> V:
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[(id(first), id(second))] = (first, second, value)
        return value
