"""The events of a watch cache's window (kube-apiserver's ``watchCacheEvent``, k8s.io/apiserver
``pkg/storage/cacher/watch_cache.go``): a store event translated once for all its watchers
(:class:`Entry`), or, for a kind converted outside the process, when a watcher first reaches it
(:class:`ConvertedEntry`); and what a watcher with a selector sees of it (an update that leaves or
enters the selection is a DELETED or an ADDED, as the cacher's filtering does)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import jsoncodec
from kubelite.api.encoding import resourceversion as rv
from kubelite.api.encoding.stored import Codec, decode, from_storage
from kubelite.storage import EventType
from kubelite.storage.interface import Event

Obj = dict[str, Any]
Matcher = Callable[[Obj], bool]


@dataclass(slots=True)
class WatchEvent:
    """One event as watchers see it; shared by every watcher it is sent to, so never change
    it (nor its object)."""

    type: str  # ADDED, MODIFIED, DELETED
    object: Obj
    revision: int
    _line: bytes | None = field(default=None, compare=False, repr=False)

    def line(self) -> bytes:
        """The event as a JSON watch stream's line, encoded once for all its watchers."""
        if self._line is None:
            self._line = jsoncodec.dumps({"type": self.type, "object": self.object}) + b"\n"
        return self._line


class Entry:
    """One store event, translated once. ``event`` is what an unfiltered watcher gets."""

    __slots__ = ("_prev", "_prev_value", "at", "event", "info", "key", "revision")
    #: whether :meth:`load` must run before the event is read
    converted = False

    def __init__(self, event: Event, at: float, info: ResourceInfo) -> None:
        self.info = info
        self.key = event.kv.key
        self.revision = event.revision
        self.at = at
        self._prev: Obj | None = None
        if event.type is EventType.DELETE:
            assert event.prev_kv is not None
            self._prev_value: bytes | None = None
            self._prev = rv.stamp(from_storage(event.prev_kv.value, info), self.revision)
            self.event = WatchEvent("DELETED", self._prev, self.revision)
        else:
            self._prev_value = event.prev_kv.value if event.prev_kv is not None else None
            kind = "ADDED" if event.prev_kv is None else "MODIFIED"
            self.event = WatchEvent(kind, decode(event.kv, info), self.revision)

    def prev(self) -> Obj:
        """The object this write replaced, stamped at this event's revision (decoded once, and
        only when a selector watcher asks)."""
        if self._prev is None:
            assert self._prev_value is not None
            self._prev = rv.stamp(from_storage(self._prev_value, self.info), self.revision)
        return self._prev

    async def load(self, codec: Codec, with_prev: bool) -> None:
        """Read the event (and, ``with_prev``, the object it replaced) through ``codec``."""

    def for_watcher(self, matches: Matcher | None) -> WatchEvent | None:
        """This event as a watcher with selector ``matches`` sees it (None: not at all)."""
        event = self.event
        if matches is None:
            return event
        if event.type == "DELETED":
            return event if matches(event.object) else None
        now_matches = matches(event.object)
        if event.type == "ADDED":
            return event if now_matches else None
        before = matches(self.prev())
        if before and now_matches:
            return event
        if now_matches:
            return WatchEvent("ADDED", event.object, self.revision)
        if before:
            return WatchEvent("DELETED", self.prev(), self.revision)
        return None


class ConvertedEntry(Entry):
    """An event of a kind converted outside the process, read when a watcher first reaches it;
    a failed conversion is not kept, so the next reader tries again."""

    __slots__ = ("_loaded", "_lock", "_raw")
    converted = True

    def __init__(self, event: Event, at: float, info: ResourceInfo) -> None:
        # not Entry's: that one reads the event at once
        self.info = info
        self.key = event.kv.key
        self.revision = event.revision
        self.at = at
        self._raw = event
        self._prev = None
        replaced = event.prev_kv if event.type is not EventType.DELETE else None
        self._prev_value = None if replaced is None else replaced.value
        self._loaded = False
        self._lock = asyncio.Lock()

    async def load(self, codec: Codec, with_prev: bool) -> None:
        async with self._lock:
            if not self._loaded:
                event, revision = self._raw, self.revision
                if event.type is EventType.DELETE:
                    assert event.prev_kv is not None
                    self._prev = await codec.read(event.prev_kv.value, revision)
                    self.event = WatchEvent("DELETED", self._prev, revision)
                else:
                    kind = "ADDED" if event.prev_kv is None else "MODIFIED"
                    obj = await codec.read(event.kv.value, revision)
                    self.event = WatchEvent(kind, obj, revision)
                self._loaded = True
            if with_prev and self._prev is None and self._prev_value is not None:
                self._prev = await codec.read(self._prev_value, self.revision)

    def prev(self) -> Obj:
        assert self._prev is not None, "loaded with its prior object"
        return self._prev
