"""SqliteStore: the embedded backend, wiring the writer, the readers and the watch hub together.

Writes go to the one writer thread (:mod:`.writer`) and are answered after their group commit;
reads go to a small pool of reader threads (:mod:`.reader`), each on its own WAL connection; watch
events reach watchers through the :class:`~kubelite.storage.watchhub.WatchHub` on the event loop.
A store is bound to the event loop that opened it.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar, cast

from kubelite.storage.compaction import CompactionPolicy
from kubelite.storage.errors import Compacted, Unavailable
from kubelite.storage.interface import (
    Event,
    HistoryEntry,
    KeyValue,
    ListResult,
    Store,
    StoreOptions,
    Watch,
    check_key,
    check_revision,
    check_value,
)
from kubelite.storage.sqlite.connection import Synchronous
from kubelite.storage.sqlite.reader import Reader
from kubelite.storage.sqlite.writer import Op, OpKind, Writer
from kubelite.storage.watchhub import HubWatch, WatchHub

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

READER_THREADS = 2
# How often versions past their history retention age are dropped (seconds).
HISTORY_PRUNE_INTERVAL = 60.0
# The health check reads this key (kube probes <prefix>/health) and waits this long.
HEALTH_KEY = "/health"
HEALTH_TIMEOUT = 2.0


def _memory_dir() -> str:
    """A private directory in RAM (tmpfs) when the machine has one, else in the temp dir."""
    shm = "/dev/shm"
    base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    return tempfile.mkdtemp(prefix="kubelite-", dir=base)


class SqliteStore(Store):
    """Open with ``await SqliteStore.open(path)``; ``path=None`` gives a private store in RAM
    that is deleted on close."""

    exclusive = True  # the writer holds ``<db>.lock`` while the store is open

    def __init__(
        self, path: str, writer: Writer, options: StoreOptions, tempdir: str | None
    ) -> None:
        self.path = path
        self._options = options
        self._tempdir = tempdir
        self._writer = writer
        self._hub = WatchHub(writer.revision, writer.compacted, options.watch_queue_size)
        self._reader = Reader(path)
        self._readers = ThreadPoolExecutor(READER_THREADS, thread_name_prefix="kubelite-reader")
        self._closed = False
        self._compaction_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        writer.start(asyncio.get_running_loop(), self._on_commit)

    @classmethod
    async def open(cls, path: str | None, options: StoreOptions | None = None) -> SqliteStore:
        options = options or StoreOptions()
        tempdir = None
        synchronous: Synchronous = "full" if options.durability == "full" else "normal"
        if path is None:
            tempdir = await asyncio.to_thread(_memory_dir)
            path = os.path.join(tempdir, "state.db")
            synchronous = "off"
        else:
            await asyncio.to_thread(_make_parent_dir, path)
        writer = await asyncio.to_thread(Writer, path, synchronous, options.history_retention)
        self = cls(path, writer, options, tempdir)
        if writer.compact_done < writer.compacted:  # a compaction was interrupted: finish it
            self._spawn(self._finish_compaction())
        if options.compaction_interval_seconds > 0:
            self._spawn(self._auto_compact())
        if any(r.max_age_seconds for r in options.history_retention.values()):
            self._spawn(self._prune_history_periodically())
        return self

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- plumbing ------------------------------------------------------------------------------

    def _on_commit(self, ops: list[Op], events: list[Event], revision: int, compacted: int) -> None:
        self._hub.compacted = compacted
        self._hub.publish(events, revision)
        for op in ops:
            if op.future.done():
                continue
            if op.error is not None:
                op.future.set_exception(op.error)
            else:
                op.future.set_result(op.result)

    async def _write(
        self,
        kind: OpKind,
        key: str = "",
        value: bytes = b"",
        expected: int | None = None,
        at: float = 0.0,
    ) -> object:
        if self._closed:
            raise Unavailable("store is closed")
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._writer.submit(Op(kind, future, key, value, expected, at))
        return await future

    async def _read(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        if self._closed:
            raise Unavailable("store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._readers, lambda: fn(*args, **kwargs))

    # -- the contract --------------------------------------------------------------------------

    async def get(self, key: str, revision: int | None = None) -> KeyValue | None:
        """A point read is one indexed lookup (tens of microseconds), cheaper than the hop to a
        reader thread and back, so it runs on the loop thread's own WAL connection: it still
        never waits for the writer."""
        check_key(key)
        check_revision(revision)
        if self._closed:
            raise Unavailable("store is closed")
        return self._reader.get(key, revision)

    async def list(
        self,
        prefix: str,
        revision: int | None = None,
        limit: int | None = None,
        start_after: str | None = None,
        *,
        count: bool = False,
    ) -> ListResult:
        check_revision(revision)
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be positive, not {limit}")
        return await self._read(
            self._reader.list_range, prefix, revision, limit, start_after, count
        )

    async def create(self, key: str, value: bytes) -> int:
        check_key(key)
        check_value(value)
        return cast(int, await self._write(OpKind.CREATE, key, value))

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> int:
        check_key(key)
        check_value(value)
        return cast(int, await self._write(OpKind.UPDATE, key, value, expected_mod_revision))

    async def delete(
        self, key: str, expected_mod_revision: int | None = None
    ) -> tuple[int, KeyValue]:
        check_key(key)
        result = await self._write(OpKind.DELETE, key, expected=expected_mod_revision)
        return cast(tuple[int, KeyValue], result)

    def watch(self, prefix: str, start_revision: int) -> Watch:
        if start_revision < 1:
            raise ValueError(f"start_revision must be at least 1, not {start_revision}")
        return HubWatch(self._hub, self._history, prefix, start_revision)

    async def _history(
        self, prefix: str, first: int, last: int, limit: int
    ) -> builtins.list[Event]:
        return await self._read(self._reader.history, prefix, first, last, limit)

    async def history(self, key: str) -> builtins.list[HistoryEntry]:
        check_key(key)
        return await self._read(self._reader.kept_versions, key)

    async def prune_history(self, now: float | None = None) -> int:
        """Drop kept versions older than their policy's age at ``now`` (default: the time
        now); returns how many. Runs every ``HISTORY_PRUNE_INTERVAL`` seconds on its own."""
        at = time.time() if now is None else now
        return cast(int, await self._write(OpKind.PRUNE_HISTORY, at=at))

    async def _prune_history_periodically(self) -> None:
        while True:
            try:
                await self.prune_history()
            except Unavailable as exc:
                log.warning("pruning the revision history skipped: %s", exc)
            await asyncio.sleep(HISTORY_PRUNE_INTERVAL)

    async def current_revision(self) -> int:
        return self._hub.revision

    async def compacted_revision(self) -> int:
        return self._hub.compacted

    async def check(self) -> None:
        """Healthy while the writer thread runs and a reader thread answers a read within
        ``HEALTH_TIMEOUT`` (a database on a stalled disk does not)."""
        if self._closed:
            raise Unavailable("closed")
        if not self._writer.alive():
            raise Unavailable("the SQLite writer thread has stopped")
        try:
            await asyncio.wait_for(self.list(HEALTH_KEY, limit=1), HEALTH_TIMEOUT)
        except TimeoutError:
            raise Unavailable(f"the SQLite database did not answer a read in {HEALTH_TIMEOUT:g}s")

    async def compact(self, revision: int) -> None:
        await self._write(OpKind.COMPACT_BEGIN, expected=revision)
        await self._finish_compaction()

    async def _finish_compaction(self) -> None:
        async with self._compaction_lock:
            while not await self._write(OpKind.COMPACT_STEP):
                pass
            await self._write(OpKind.CHECKPOINT)

    async def _auto_compact(self) -> None:
        opts = self._options
        policy = CompactionPolicy(opts.retention_seconds, opts.min_retained_revisions)
        while True:
            target = policy.target(time.monotonic(), self._hub.revision, self._hub.compacted)
            if target is not None:
                try:
                    await self.compact(target)
                except (Compacted, Unavailable) as exc:
                    log.warning("automatic compaction to %d skipped: %s", target, exc)
            await asyncio.sleep(opts.compaction_interval_seconds)

    async def close(self) -> None:
        if self._closed:
            return
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._writer.submit(Op(OpKind.STOP, future))
        self._closed = True
        await future
        await asyncio.to_thread(self._writer.join)
        self._hub.close()
        await asyncio.to_thread(self._readers.shutdown)
        self._reader.close()
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)


def _make_parent_dir(path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)


__all__ = ["SqliteStore"]
