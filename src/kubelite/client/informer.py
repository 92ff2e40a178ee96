"""``Informer``: a local, always-catching-up copy of one kind's objects, with event handlers.

The loop follows client-go's reflector:

1. **Sync.** If the server offers watch-list (``sendInitialEvents``), one watch request brings
   the current objects as ADDED events and a BOOKMARK annotated ``k8s.io/initial-events-end``,
   and the same stream goes on with live events; a server that refuses the parameters (4xx) is
   asked with LIST (paged, one snapshot) then WATCH from the list's resourceVersion, from then on.
   The cache is replaced with what was read: handlers see adds, updates (resourceVersion changed)
   and deletes (gone while we were not watching). ``has_synced`` turns true.
2. **Watch.** Events update the cache and call handlers; BOOKMARKs only advance the
   resourceVersion. When a stream ends (``timeoutSeconds``, a dropped connection), the next one
   starts from the last resourceVersion seen: nothing is missed and nothing is listed again.
3. **410 Expired** (history compacted past our resourceVersion, in-stream or as HTTP) means a
   relist from scratch: back to 1, at once.
4. Any other failure waits an exponential backoff with jitter (``backoff_initial`` doubling to
   ``backoff_max``, reset after a healthy stream) and tries again.

``resync_period`` calls ``on_update(obj, obj)`` for every cached object periodically, so a
controller revisits everything even when nothing changes. Handlers run inline on the informer's
task, in event order: keep them quick (enqueue a key; see :class:`~kubelite.client.Controller`).
They may be plain functions or coroutines; an exception in one is logged, never fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubelite.client.async_client import AsyncClient, AsyncWatch
from kubelite.client.cache import Indexer, IndexFunc
from kubelite.client.errors import (
    BadRequest,
    Expired,
    Forbidden,
    Invalid,
    MethodNotAllowed,
    UnsupportedMediaType,
)
from kubelite.client.objects import Object, annotations_of, key_of

log = logging.getLogger(__name__)

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
# The answers a server gives to watch-list parameters it does not support (client-go falls back
# to LIST on these; a 5xx or a dropped connection is retried as it is).
WATCH_LIST_REFUSED = (BadRequest, Forbidden, Invalid, MethodNotAllowed, UnsupportedMediaType)

AddHandler = Callable[[Object], Awaitable[None] | None]
UpdateHandler = Callable[[Object, Object], Awaitable[None] | None]
DeleteHandler = Callable[[Object], Awaitable[None] | None]


@dataclass(frozen=True, slots=True)
class Handlers:
    on_add: AddHandler | None = None
    on_update: UpdateHandler | None = None
    on_delete: DeleteHandler | None = None


@dataclass(slots=True)
class InformerStats:
    """What the informer has done, for tests and metrics."""

    lists: int = 0  # syncs from scratch (LIST or watch-list)
    watches: int = 0  # watch requests opened
    expired: int = 0  # 410s that forced a relist
    errors: int = 0  # other failures (each followed by a backoff)


class _StreamEnded(Exception):
    """A watch-list stream ended before its initial-events-end bookmark."""


class Informer:
    def __init__(
        self,
        client: AsyncClient,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        resync_period: float | None = None,
        use_watch_list: bool = True,
        page_size: int = 500,
        watch_timeout: int = 300,
        backoff_initial: float = 0.8,
        backoff_max: float = 30.0,
    ) -> None:
        self.client = client
        self.api_version = api_version
        self.kind = kind
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.cache = Indexer(indexers)
        self.resync_period = resync_period
        self.use_watch_list = use_watch_list
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.stats = InformerStats()
        self.resource_version = ""
        self._handlers: list[Handlers] = []
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._replays: set[asyncio.Task[None]] = set()

    # -- public -----------------------------------------------------------------------------

    def add_handlers(
        self,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
    ) -> None:
        """Handlers added after the sync first get ``on_add`` for every cached object."""
        self._handlers.append(Handlers(on_add, on_update, on_delete))
        if self.has_synced and on_add is not None:
            replay = self.cache.objects()

            async def catch_up(handler: AddHandler) -> None:
                for obj in replay:
                    await self._call(handler, obj)

            self._replays.add(task := asyncio.ensure_future(catch_up(on_add)))
            task.add_done_callback(self._replays.discard)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        """Return once the first sync is done (wrap in ``asyncio.timeout`` to bound it)."""
        await self._synced.wait()

    def start(self) -> asyncio.Task[None]:
        """Run in a task of the current loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self.run())
        return self._task

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def __aenter__(self) -> Informer:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def run(self) -> None:
        """List, then watch, for ever (until cancelled)."""
        resync = asyncio.ensure_future(self._resync_loop()) if self.resync_period else None
        delay = self.backoff_initial
        try:
            while True:
                started = asyncio.get_running_loop().time()
                try:
                    healthy = await self._list_and_watch()
                except Expired as exc:
                    self.stats.expired += 1
                    log.info("%s: %s; relisting", self.kind, exc.message)
                    self.resource_version = ""
                    continue
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.stats.errors += 1
                    log.warning("%s informer: %s; retrying in %.1fs", self.kind, exc, delay)
                    await asyncio.sleep(delay * (1 + random.random() * 0.5))
                    delay = min(delay * 2, self.backoff_max)
                    continue
                if healthy:
                    delay = self.backoff_initial
                elif asyncio.get_running_loop().time() - started < 1.0:
                    # a stream that ends at once, empty, again and again: do not spin
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, self.backoff_max)
        finally:
            if resync is not None:
                resync.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await resync

    # -- the loop ---------------------------------------------------------------------------

    def _watch(self, **options: Any) -> AsyncWatch:
        self.stats.watches += 1
        timeout = int(self.watch_timeout * (1 + random.random()))
        return self.client.watch(
            self.api_version,
            self.kind,
            self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            timeout_seconds=timeout,
            allow_bookmarks=True,
            **options,
        )

    async def _list_and_watch(self) -> bool:
        """One stream's worth of work; True if it delivered events before ending normally."""
        if not self.resource_version:
            if self.use_watch_list:
                try:
                    return await self._consume(
                        self._watch(resource_version="", send_initial_events=True), initial={}
                    )
                except WATCH_LIST_REFUSED as exc:
                    log.info("%s: watch-list refused (%s); using list+watch", self.kind, exc)
                    self.use_watch_list = False
            listing = await self.client.list(
                self.api_version,
                self.kind,
                self.namespace,
                label_selector=self.label_selector,
                field_selector=self.field_selector,
                limit=self.page_size,
            )
            objects = {key_of(obj): obj for obj in listing["items"]}
            await self._sync(objects, str(listing["metadata"]["resourceVersion"]))
        return await self._consume(self._watch(resource_version=self.resource_version))

    async def _consume(self, events: AsyncWatch, initial: dict[str, Object] | None = None) -> bool:
        """Apply a stream's events. With ``initial`` (a watch-list), collect ADDEDs until the
        initial-events-end bookmark, then replace the cache with them and go on live."""
        delivered = False
        async with events:
            async for event in events:
                delivered = True
                obj = event.object
                if initial is not None:
                    if event.type == "BOOKMARK":
                        if annotations_of(obj).get(INITIAL_EVENTS_END) == "true":
                            await self._sync(initial, event.resource_version)
                            initial = None
                    elif event.type == "DELETED":
                        initial.pop(key_of(obj), None)
                    else:
                        initial[key_of(obj)] = obj
                    continue
                if event.type == "BOOKMARK":
                    pass
                elif event.type == "DELETED":
                    self.cache.delete(key_of(obj))
                    await self._notify("on_delete", obj)
                else:
                    old = self.cache.upsert(obj)
                    if old is None:
                        await self._notify("on_add", obj)
                    else:
                        await self._notify("on_update", old, obj)
                self.resource_version = event.resource_version or self.resource_version
        if initial is not None:
            raise _StreamEnded("the watch-list stream ended before its initial events did")
        return delivered

    async def _sync(self, objects: dict[str, Object], list_resource_version: str) -> None:
        self.stats.lists += 1
        added, updated, removed = self.cache.replace(objects)
        self.resource_version = list_resource_version
        for obj in added:
            await self._notify("on_add", obj)
        for old, new in updated:
            await self._notify("on_update", old, new)
        for obj in removed:
            await self._notify("on_delete", obj)
        self._synced.set()

    async def _resync_loop(self) -> None:
        assert self.resync_period
        while True:
            await asyncio.sleep(self.resync_period)
            if self.has_synced:
                for obj in self.cache.objects():
                    await self._notify("on_update", obj, obj)

    # -- handlers ---------------------------------------------------------------------------

    async def _notify(self, which: str, *args: Object) -> None:
        for handlers in self._handlers:
            handler = getattr(handlers, which)
            if handler is not None:
                await self._call(handler, *args)

    async def _call(self, handler: Callable[..., Any], *args: Object) -> None:
        try:
            result = handler(*args)
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("%s informer: a handler failed", self.kind)
