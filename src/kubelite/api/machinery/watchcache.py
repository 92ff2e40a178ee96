"""The watch cache: one in-memory event window per kind, fed by one store watch, read by every
watcher of that kind (kube-apiserver's Cacher and watchCache, in miniature).

A :class:`WatchCache` serves one storage prefix (``/registry/configmaps/``). The first watch of
the kind starts it: one ``store.watch(prefix, S + 1)`` whose events are decoded once (object with
``metadata.resourceVersion`` stamped, and the prior object when a selector needs it) and appended
to a window. Watchers do not get a queue of their own: each keeps a cursor into the window and
reads from it, so an event costs one decode however many watchers read it, and a wake-up per
waiting watcher.

The window keeps at least ``capacity`` events (10,000) and every event younger than
``min_age_seconds`` (75 s, kube's eventFreshDuration), but never more than ``max_capacity``
(100,000). The cache serves every revision above ``floor``: the start revision, then the revision
of the newest event trimmed.

Per watcher (see :meth:`WatchCache.watch`):

- RV unset/0 (sendInitialEvents not False): a synthetic ADDED per current object, read from the
  store at revision R (one list, consistent), then every event above R from the window. As in
  kube-apiserver with WatchList on, this is treated as sendInitialEvents=true, so a watcher that
  allows bookmarks also gets the ``k8s.io/initial-events-end`` bookmark at R after the ADDEDs.
- RV=N: events above N. If N is below the window's floor the watcher falls back to a direct store
  watch of its own (the store keeps history for minutes); only if the store has compacted N away
  does it get the 410 ``too old resource version: N (compacted)``, raised as an ``APIError`` that
  the HTTP layer turns into the in-stream ERROR event. Future N: accepted, waits.
- A watcher more than ``max_lag`` events behind the window's head is ended (clean end of stream,
  as kube-apiserver closes a blocked watcher; the client re-watches from its last RV, which the
  window still holds).
- Bookmarks every ``bookmark_interval`` seconds (one timer per cache, not per watcher) at the
  latest revision the cache has seen, sent to a watcher only once it has read everything before.
  Without a progress notification from the store, an idle kind's bookmark RV stays at its last
  event (or the cache's start revision).

Recovery: when the store ends the cache's watch with WatchOverflow, the cache resumes from the
revision the error names, without a gap and without disturbing its watchers. If that history was
compacted, the cache restarts at the current revision with an empty window, and every watcher then
attached ends with the 410 (it would otherwise miss events) so that its client relists. Any other
store failure (the store closing) ends the cache and its watchers; :meth:`WatchCacheSet.get`
starts a fresh one on the next watch.

A kind converted by a webhook (its :class:`~kubelite.api.encoding.stored.Codec` converts) has its
events read at the watched version when a watcher first reaches them, not when they arrive: a cache
nobody reads calls no webhook, and the feeder never waits on one. Each event is converted once
(the prior object only for a watcher with a selector); a conversion that fails ends the watcher
with an ERROR event, the 500 ``Internal error occurred: <why>`` kube-apiserver's storage watch
sends for an object it cannot decode, and the next reader tries again.

Objects handed out are shared between watchers: treat them as read-only.

The window's events are :mod:`~kubelite.api.machinery.watchevents`'; a watch request's options
are checked by :mod:`~kubelite.api.machinery.watchoptions`.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import resourceversion as rv
from kubelite.api.encoding.stored import Codec, decode, storage_prefix
from kubelite.api.errors import APIError
from kubelite.api.machinery.listing import wait_for_revision
from kubelite.api.machinery.selectors import for_kind
from kubelite.api.machinery.watchevents import ConvertedEntry, Entry, Matcher, WatchEvent
from kubelite.api.machinery.watchoptions import INITIAL_EVENTS_END, too_old
from kubelite.storage import Compacted, Store, Unavailable, WatchOverflow
from kubelite.storage.interface import Event, KeyValue, Watch

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DEFAULT_CAPACITY = 10_000
DEFAULT_MAX_CAPACITY = 100_000
DEFAULT_MIN_AGE_SECONDS = 75.0
DEFAULT_BOOKMARK_INTERVAL = 60.0
DEFAULT_MAX_LAG = 10_000
YIELD_EVERY = 256  # the feeder lets watchers run after this many events in a row


class WatchCache:
    """One kind's event window (see the module docstring); ``codec`` reads its stored objects
    (default: :func:`~kubelite.api.encoding.stored.decode`)."""

    def __init__(
        self,
        store: Store,
        info: ResourceInfo,
        *,
        capacity: int = DEFAULT_CAPACITY,
        max_capacity: int = DEFAULT_MAX_CAPACITY,
        min_age_seconds: float = DEFAULT_MIN_AGE_SECONDS,
        bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL,
        max_lag: int = DEFAULT_MAX_LAG,
        codec: Codec | None = None,
    ) -> None:
        self.store = store
        self.info = info
        self.codec = codec if codec is not None else Codec(info)
        self.prefix = storage_prefix(info, None)
        self.capacity = capacity
        self.max_capacity = max(max_capacity, capacity)
        self.min_age_seconds = min_age_seconds
        self.bookmark_interval = bookmark_interval
        self.max_lag = max_lag
        self.floor = 0  # every event above this revision is in the window (or still to come)
        self.revision = 0  # the newest revision the cache has seen
        self.generation = 0  # bumped when the window restarts after a compaction
        self.closed = False
        self.ended_slow = 0  # watchers ended for falling behind (a metric)
        self._entries: list[Entry] = []
        self._base = 0  # sequence number of _entries[0]
        self._bookmark_epoch = 0
        self._waiters: dict[asyncio.Future[None], None] = {}  # in arrival order
        self._watchers = 0
        self._watch: Watch | None = None
        self._feeder: asyncio.Task[None] | None = None
        self._ticker: asyncio.Task[None] | None = None
        self._direct: set[Watch] = set()
        self._start_lock = asyncio.Lock()

    # -- introspection ----------------------------------------------------------------------

    @property
    def watcher_count(self) -> int:
        return self._watchers

    @property
    def window_size(self) -> int:
        return len(self._entries)

    @property
    def started(self) -> bool:
        return self._feeder is not None

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self, from_revision: int | None = None) -> None:
        """Start the store watch (once). ``from_revision`` lets the first watcher's resume point
        be served from the window when the store still has that history."""
        async with self._start_lock:
            if self._feeder is not None or self.closed:
                return
            current = await self.store.current_revision()
            start = current
            if from_revision is not None and from_revision < current:
                start = max(from_revision, await self.store.compacted_revision())
            try:
                watch = await self._open(start)
            except Compacted:
                start = await self.store.current_revision()
                watch = await self._open(start)
            self.floor = self.revision = start
            self._watch = watch
            self._feeder = asyncio.get_running_loop().create_task(self._feed())
            if self.bookmark_interval > 0:
                self._ticker = asyncio.get_running_loop().create_task(self._tick())

    async def _open(self, after: int) -> Watch:
        watch = self.store.watch(self.prefix, after + 1)
        await watch.start()
        return watch

    async def close(self) -> None:
        """Stop the store watch; every watcher ends (cleanly) at its next step."""
        self.closed = True
        tasks = [t for t in (self._feeder, self._ticker) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._watch is not None:
            await self._watch.aclose()
        for watch in list(self._direct):
            await watch.aclose()
        self._wake()

    async def _feed(self) -> None:
        try:
            while True:
                watch = self._watch
                assert watch is not None
                try:
                    count = 0
                    async for event in watch:
                        self._append(event)
                        count += 1
                        if count % YIELD_EVERY == 0:
                            await asyncio.sleep(0)
                except WatchOverflow as exc:
                    log.info("watch cache %s: store watch overflowed, resuming", self.prefix)
                    try:
                        self._watch = await self._open(exc.next_revision - 1)
                    except Compacted:
                        await self._restart()
                except Compacted:
                    await self._restart()
                else:
                    raise Unavailable("store watch ended")
        except asyncio.CancelledError:
            raise
        except Unavailable as exc:
            log.info("watch cache %s stopped: %s", self.prefix, exc)
        except Exception:
            log.exception("watch cache %s failed", self.prefix)
        self.closed = True
        self._wake()

    async def _restart(self) -> None:
        """History is gone: start over at the current revision; attached watchers get 410."""
        log.warning("watch cache %s: history compacted, restarting the window", self.prefix)
        start = await self.store.current_revision()
        self._watch = await self._open(start)
        self._base += len(self._entries)
        self._entries.clear()
        self.floor = self.revision = start
        self.generation += 1
        self._wake()

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.bookmark_interval)
            self._bookmark_epoch += 1
            self._wake()

    def _append(self, event: Event) -> None:
        now = time.monotonic()
        self._entries.append(self._entry(event, now))
        self.revision = event.revision
        if len(self._entries) > self.capacity + max(self.capacity // 8, 1):
            self._trim(now)
        self._wake()

    def _trim(self, now: float) -> None:
        entries = self._entries
        excess = len(entries) - self.capacity
        cut = max(len(entries) - self.max_capacity, 0)
        horizon = now - self.min_age_seconds
        while cut < excess and entries[cut].at < horizon:
            cut += 1
        if cut:
            self.floor = entries[cut - 1].revision
            del entries[:cut]
            self._base += cut

    def _entry(self, event: Event, at: float) -> Entry:
        if self.codec.converts:
            return ConvertedEntry(event, at, self.info)
        return Entry(event, at, self.info)

    async def _load(self, entry: Entry, matches: Matcher | None) -> None:
        """A converted entry read through the codec; a failed conversion is the watch's 500."""
        try:
            await entry.load(self.codec, matches is not None)
        except APIError as exc:
            raise errors.internal_error(exc.message) from None

    async def _initial(
        self, kvs: Sequence[KeyValue], matches: Matcher | None
    ) -> AsyncGenerator[WatchEvent, None]:
        """The synthetic ADDED of each listed object that ``matches``, decoded one at a time
        as it is sent (a kind converted by a webhook: all at once, in one review)."""
        objs: list[Obj] | None = None
        if self.codec.converts:
            try:
                objs = await self.codec.decode_all(kvs)
            except APIError as exc:
                raise errors.internal_error(exc.message) from None
        for i, kv in enumerate(kvs):
            obj = decode(kv, self.info) if objs is None else objs[i]
            if matches is None or matches(obj):
                yield WatchEvent("ADDED", obj, kv.mod_revision)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, {}
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _wait(self) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[waiter] = None
        try:
            await waiter
        finally:  # a watcher closed while it waits leaves nothing behind
            self._waiters.pop(waiter, None)

    # -- watch ------------------------------------------------------------------------------

    def bookmark(self, revision: int, *, initial_events_end: bool = False) -> WatchEvent:
        meta: Obj = {"resourceVersion": rv.format_rv(revision)}
        if initial_events_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        obj = {"kind": self.info.kind, "apiVersion": self.info.group_version, "metadata": meta}
        return WatchEvent("BOOKMARK", obj, revision)

    def watch(
        self,
        namespace: str | None,
        resource_version: int | None,
        matches: Matcher | None,
        *,
        send_initial_events: bool | None = None,
        allow_bookmarks: bool = False,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Events for one watcher: see the module docstring. Raises APIError 410 (too old) or
        504 (sendInitialEvents with an RV the store has not reached within 3 s) from the
        stream; a field label the kind lacks is the 400 raised here, before any stream."""
        matches = for_kind(matches, self.info.field_labels, self.info.field_label_error)
        return self._events(
            namespace,
            resource_version,
            matches,
            send_initial_events=send_initial_events,
            allow_bookmarks=allow_bookmarks,
        )

    async def _events(
        self,
        namespace: str | None,
        resource_version: int | None,
        matches: Matcher | None,
        *,
        send_initial_events: bool | None = None,
        allow_bookmarks: bool = False,
    ) -> AsyncGenerator[WatchEvent, None]:
        requested = resource_version or 0
        initial = send_initial_events is True or (send_initial_events is None and not requested)
        await self.start(None if initial else requested)
        prefix = storage_prefix(self.info, namespace)
        self._watchers += 1
        try:
            if initial:
                if requested:
                    await wait_for_revision(self.store, requested)
                listing = await self.store.list(prefix)
                position = listing.revision
                # Nothing of the list is held once it is sent (not while the watcher then
                # waits): the generator drops it as it ends, and so do these names.
                initial_events = self._initial(listing.items, matches)
                del listing
                added: WatchEvent | None = None
                async with contextlib.aclosing(initial_events) as events:
                    async for added in events:
                        yield added
                added = None
                if allow_bookmarks:
                    yield self.bookmark(position, initial_events_end=True)
            elif requested:
                position = requested
                # History the store has compacted is gone for every watcher, even where this
                # cache's window still holds it: an administrator's compaction must be obeyed.
                compacted = await self.store.compacted_revision()
                if position < compacted:
                    raise too_old(position, compacted)
            else:  # sendInitialEvents=false, no RV: from now on
                position = await self.store.current_revision()
            if position < self.floor:
                source = self._direct_watch(prefix, position, matches)
            else:
                source = self._serve(prefix, position, matches, allow_bookmarks)
            async with contextlib.aclosing(source) as events:
                async for event in events:
                    yield event
        finally:
            self._watchers -= 1

    async def _serve(
        self, prefix: str, position: int, matches: Matcher | None, allow_bookmarks: bool
    ) -> AsyncGenerator[WatchEvent, None]:
        generation = self.generation
        entries = self._entries
        cursor = self._base + bisect.bisect_right(entries, position, key=lambda e: e.revision)
        epoch = self._bookmark_epoch
        whole_kind = prefix == self.prefix
        last = position  # the newest revision this watcher is up to date with
        while True:
            if self.generation != generation:
                raise too_old(last, self.floor)
            if self.closed:
                return
            entries = self._entries
            head = self._base + len(entries)
            if cursor < self._base:  # trimmed past us (a long replay): go on from the store
                rest = self._direct_watch(prefix, last, matches)
                async with contextlib.aclosing(rest) as events:
                    async for event in events:
                        yield event
                return
            if head - cursor > self.max_lag:
                self.ended_slow += 1
                return
            if cursor < head:
                entry = entries[cursor - self._base]
                cursor += 1
                if entry.revision <= position:  # a future RV not reached yet
                    continue
                last = entry.revision
                if not whole_kind and not entry.key.startswith(prefix):
                    continue
                if entry.converted:
                    await self._load(entry, matches)
                out = entry.for_watcher(matches)
                if out is not None:
                    yield out
                continue
            if allow_bookmarks and epoch != self._bookmark_epoch:
                epoch = self._bookmark_epoch
                if self.revision >= position:
                    yield self.bookmark(self.revision)
                    continue
            await self._wait()

    async def _direct_watch(
        self, prefix: str, position: int, matches: Matcher | None
    ) -> AsyncGenerator[WatchEvent, None]:
        """A resume point older than the window: served from the store's history directly."""
        watch = self.store.watch(prefix, position + 1)
        try:
            await watch.start()
        except Compacted as exc:
            raise too_old(position, exc.compacted_revision)
        self._direct.add(watch)
        try:
            async for event in watch:
                entry = self._entry(event, 0.0)
                if entry.converted:
                    await self._load(entry, matches)
                out = entry.for_watcher(matches)
                if out is not None:
                    yield out
        except Compacted as exc:
            raise too_old(position, exc.compacted_revision)
        except Unavailable:
            return
        finally:
            self._direct.discard(watch)
            await watch.aclose()


class WatchCacheSet:
    """One :class:`WatchCache` per storage prefix and served version, created on first use
    (Event at v1 and at events.k8s.io/v1 share a prefix and hold differently shaped objects)."""

    def __init__(self, store: Store, **options: Any) -> None:
        self.store = store
        self.options = options
        self._caches: dict[str, WatchCache] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self.closed = False

    def get(self, info: ResourceInfo, codec: Codec | None = None) -> WatchCache:
        """The cache of ``info``'s version. ``codec``: how a kind converted outside the process
        reads its objects; the latest given is used from then on (a CRD's changed webhook)."""
        key = _cache_key(info)
        cache = self._caches.get(key)
        if cache is None or (cache.closed and not self.closed):
            cache = self._caches[key] = WatchCache(self.store, info, codec=codec, **self.options)
            if self.closed:
                cache.closed = True
        elif codec is not cache.codec and (codec is not None or cache.codec.converts):
            cache.info, cache.codec = info, codec if codec is not None else Codec(info)
        return cache

    def __len__(self) -> int:
        return len(self._caches)

    def drop(self, info: ResourceInfo, *, after_revision: int = 0) -> None:
        """Stop serving ``info`` (its CRD is gone). The cache is closed in the background once
        it has reached ``after_revision`` or gone quiet (so its watchers get the last DELETED
        events first); its watch streams then end."""
        cache = self._caches.pop(_cache_key(info), None)
        if cache is not None:
            task = asyncio.get_running_loop().create_task(_close_when_quiet(cache, after_revision))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        self.closed = True
        await asyncio.gather(*self._closing, return_exceptions=True)
        caches = list(self._caches.values())
        for cache in caches:
            with contextlib.suppress(Exception):
                await cache.close()


def _cache_key(info: ResourceInfo) -> str:
    """One cache per storage prefix and served version."""
    return storage_prefix(info, None) + " " + info.group_version


async def _close_when_quiet(cache: WatchCache, revision: int, quiet: float = 0.1) -> None:
    """Close ``cache`` once it has seen ``revision``, or nothing new for ``quiet`` seconds
    (its last events may be below ``revision``), or after 2 s."""
    deadline = time.monotonic() + 2.0
    seen, since = cache.revision, time.monotonic()
    while cache.revision < revision and not cache.closed and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
        if cache.revision != seen:
            seen, since = cache.revision, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    await cache.close()
