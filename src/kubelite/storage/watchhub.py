"""In-process watch fan-out, shared by backends that publish their own commits.

The backend's writer hands each committed batch of events to :meth:`WatchHub.publish` on the event
loop, in revision order and without polling. Every subscription has a bounded queue: a watcher
that falls behind is flagged and, once it has drained what it holds, ended with
:class:`WatchOverflow`, so no watcher ever slows the writer or another watcher (kube-apiserver ends
a slow cache watcher the same way).

A new watcher (:class:`HubWatch`) subscribes first, noting the last revision published so far,
then reads everything before that point from history, then drains its queue: history and live
events meet at one revision, so there is no gap and no duplicate at the seam. Until it has once
found its queue empty it is still catching up, and a full queue only makes it re-subscribe and
read further from history (which holds those events anyway); once caught up, a full queue means
it fell behind, and it is ended.

Everything here runs on the event loop thread; nothing here blocks.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from kubelite.storage.errors import Compacted, Unavailable, WatchOverflow
from kubelite.storage.interface import Event, Watch

# Reads events with first <= revision <= last under a prefix, at most `limit`, in revision order;
# raises Compacted when `first` is not above the compacted revision.
HistoryReader = Callable[[str, int, int, int], Awaitable[list[Event]]]

HISTORY_PAGE = 512


class Subscription:
    __slots__ = ("_waiter", "closed", "live_from", "overflowed", "prefix", "queue")

    def __init__(self, prefix: str, live_from: int) -> None:
        self.prefix = prefix
        self.live_from = live_from  # the first revision this subscription receives live
        self.queue: deque[Event] = deque()
        self.overflowed = False
        self.closed = False
        self._waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def wait(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None


class WatchHub:
    def __init__(self, revision: int, compacted: int, queue_size: int) -> None:
        self.revision = revision  # the last revision published to subscribers
        self.compacted = compacted
        self.queue_size = queue_size
        self.closed = False
        #: subscriptions by prefix: a batch is matched once per distinct prefix (one per watched
        #: resource), not once per subscription
        self._by_prefix: dict[str, set[Subscription]] = {}

    @property
    def watcher_count(self) -> int:
        return sum(len(subs) for subs in self._by_prefix.values())

    def subscribe(self, prefix: str) -> Subscription:
        if self.closed:
            raise Unavailable("store is closed")
        sub = Subscription(prefix, self.revision + 1)
        self._by_prefix.setdefault(prefix, set()).add(sub)
        return sub

    def resubscribe(self, sub: Subscription) -> None:
        """Drop what a subscription queued and receive live from the next revision on."""
        sub.queue.clear()
        sub.overflowed = False
        sub.live_from = self.revision + 1

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._by_prefix.get(sub.prefix)
        if subs is not None:
            subs.discard(sub)
            if not subs:  # no empty sets: a batch is matched only against watched prefixes
                del self._by_prefix[sub.prefix]

    def publish(self, events: Sequence[Event], revision: int) -> None:
        """Hand one committed batch (revision order, all above ``self.revision``) to every
        matching subscription."""
        self.revision = revision
        if not events or not self._by_prefix:
            return
        limit = self.queue_size
        only = events[0].kv.key if len(events) == 1 else None
        for prefix, subs in self._by_prefix.items():
            if only is not None:
                if not only.startswith(prefix):
                    continue
                matched = events
            else:
                matched = [e for e in events if e.kv.key.startswith(prefix)]
                if not matched:
                    continue
            for sub in subs:
                if sub.overflowed:
                    continue
                if len(sub.queue) + len(matched) > limit:
                    sub.overflowed = True
                else:
                    sub.queue.extend(matched)
                sub.wake()

    def close(self) -> None:
        self.closed = True
        for subs in self._by_prefix.values():
            for sub in subs:
                sub.closed = True
                sub.wake()
        self._by_prefix.clear()


class HubWatch(Watch):
    """A watch fed from history, then from a :class:`WatchHub` subscription."""

    def __init__(
        self, hub: WatchHub, history: HistoryReader, prefix: str, start_revision: int
    ) -> None:
        self._hub = hub
        self._history = history
        self._prefix = prefix
        self._start_revision = start_revision
        self._cursor = start_revision  # next revision to read, from history or live
        self._buffer: deque[Event] = deque()  # a page read from history, not yet handed out
        self._sub: Subscription | None = None
        self._caught_up = False
        self._closed = False

    async def start(self) -> None:
        if self._sub is not None:
            return
        if self._closed:
            raise Unavailable("watch is closed")
        if self._start_revision <= self._hub.compacted:
            raise Compacted(self._start_revision, self._hub.compacted)
        self._sub = self._hub.subscribe(self._prefix)

    async def aclose(self) -> None:
        self._closed = True
        if self._sub is not None:
            self._hub.unsubscribe(self._sub)
            self._sub.closed = True
            self._sub.wake()

    async def __anext__(self) -> Event:
        if self._sub is None:
            await self.start()
        sub = self._sub
        assert sub is not None
        while True:
            if self._buffer:
                return self._buffer.popleft()
            if self._closed:
                raise StopAsyncIteration
            if sub.overflowed and not self._caught_up:
                # Still catching up: history has these events too, so take live from further on.
                self._hub.resubscribe(sub)
            if self._cursor < sub.live_from:
                await self._read_history(sub.live_from - 1)
                continue
            if sub.queue:
                event = sub.queue.popleft()
                if event.revision < self._cursor:  # before a start revision in the future
                    continue
                self._cursor = event.revision + 1
                return event
            if sub.overflowed:
                await self.aclose()
                raise WatchOverflow(self._prefix, self._cursor)
            if sub.closed:
                raise Unavailable("store is closed")
            self._caught_up = True  # nothing left to read: from now on, falling behind ends us
            await sub.wait()

    async def _read_history(self, last: int) -> None:
        events = await self._history(self._prefix, self._cursor, last, HISTORY_PAGE)
        self._buffer.extend(events)
        if len(events) == HISTORY_PAGE:
            self._cursor = events[-1].revision + 1
        else:
            self._cursor = last + 1
