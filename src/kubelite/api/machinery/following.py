"""Kinds followed from the store into memory, as an informer: :class:`StoreFollower` lists each
kind through the registry, then watches it from the list's revision (listing again when the
watch ends or fails), and tracks the revision seen of each kind, so a write can answer once
this server holds it (:meth:`StoreFollower.caught_up`).

A subclass keeps the objects: :meth:`~StoreFollower.replace` (a listing),
:meth:`~StoreFollower.put` and :meth:`~StoreFollower.remove` (watch events),
:meth:`~StoreFollower.holds`, and :meth:`~StoreFollower.changed` after each of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import Context, Watcher, WatchOptions

log = logging.getLogger(__name__)

Obj = dict[str, Any]

#: how long :meth:`StoreFollower.caught_up` waits at the most, when the watch is behind
CAUGHT_UP_TIMEOUT = 10.0


class StoreFollower:
    """Follows the kinds of ``infos`` (by plural) from the store; ``name`` names its tasks
    (``kubelite-<name>-<plural>``) and its log lines."""

    def __init__(
        self,
        registry: Registry,
        infos: dict[str, ResourceInfo],
        *,
        name: str,
        retry_seconds: float = 0.5,
    ) -> None:
        self.registry = registry
        self.infos = infos
        self.retry_seconds = retry_seconds
        self._name = name
        self._revisions = dict.fromkeys(infos, 0)
        self._seen = asyncio.Condition()
        self._tasks: list[asyncio.Task[None]] = []

    # -- what a subclass keeps -------------------------------------------------------------------

    def replace(self, plural: str, objects: list[Obj]) -> None:
        """Hold ``objects`` as every object of ``plural``."""
        raise NotImplementedError

    def put(self, plural: str, obj: Obj) -> None:
        raise NotImplementedError

    def remove(self, plural: str, namespace: str, name: str) -> None:
        raise NotImplementedError

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        raise NotImplementedError

    def changed(self, plural: str) -> None:
        """Called after each :meth:`replace`, :meth:`put` and :meth:`remove` of ``plural``."""

    # -- following -------------------------------------------------------------------------------

    async def start(self) -> None:
        """List the kinds (the subclass holds every object when this returns), then follow
        them."""
        revisions = {p: await self._relist(p) for p in self.infos}
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._follow(p, revisions[p]), name=f"kubelite-{self._name}-{p}")
            for p in self.infos
        ]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    def following(self) -> bool:
        return bool(self._tasks) and not any(t.done() for t in self._tasks)

    def revision(self, plural: str) -> int:
        """The newest revision of ``plural`` held."""
        return self._revisions.get(plural, 0)

    async def caught_up(self, plural: str, namespace: str, name: str, revision: int | None) -> None:
        """Return once every change of ``plural`` up to ``revision`` is held, or (None) the
        object is no longer held (or after :data:`CAUGHT_UP_TIMEOUT`, when the watch is behind).
        A kind not followed returns at once."""
        if plural not in self.infos:
            return

        def done() -> bool:
            if revision is None:
                return not self.holds(plural, namespace, name)
            return self._revisions[plural] >= revision

        async with self._seen:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._seen.wait_for(done), CAUGHT_UP_TIMEOUT)

    async def _relist(self, plural: str) -> int:
        listing = await self.registry.list(self.infos[plural], None, ListOptions())
        self.replace(plural, listing["items"])
        self.changed(plural)
        revision = int(listing["metadata"]["resourceVersion"])
        await self._advance(plural, revision)
        return revision

    async def _follow(self, plural: str, revision: int) -> None:
        watcher = self.registry.storage(self.infos[plural])
        assert isinstance(watcher, Watcher)
        while True:
            try:
                options = WatchOptions(resource_version=str(revision))
                events = watcher.watch(Context(), options)
                async with contextlib.aclosing(events):
                    async for event in events:
                        if event.type == "DELETED":
                            meta = event.object.get("metadata") or {}
                            namespace = meta.get("namespace") or ""
                            self.remove(plural, namespace, str(meta.get("name") or ""))
                        elif event.type in ("ADDED", "MODIFIED"):
                            self.put(plural, event.object)
                        else:
                            continue
                        self.changed(plural)
                        revision = event.revision
                        await self._advance(plural, revision)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.debug(
                    "%s: the watch of %s ended; listing again", self._name, plural, exc_info=True
                )
            await asyncio.sleep(self.retry_seconds)
            with contextlib.suppress(Exception):
                revision = await self._relist(plural)

    async def _advance(self, plural: str, revision: int) -> None:
        async with self._seen:
            self._revisions[plural] = max(self._revisions[plural], revision)
            self._seen.notify_all()
