"""EtcdWatch: one etcd watch stream per store watch, resumed on another member when it breaks.

etcd itself guarantees what the contract asks of a watch: every event at revision >= start, in
revision order, once, history first and then live without a seam; and a start below its
compaction is refused with the compacted revision. So a store watch is one gRPC ``Watch`` stream
(``prev_kv`` on, ``hasleader`` required) read by a task into a bounded queue, and this module
adds only what etcd cannot know:

- **fail-over**: when the stream breaks (member killed, leader lost), it is created again on the
  next member from the revision after the last event queued; no gap, no duplicate. It keeps
  trying for the operation timeout (less once etcd is out, see :mod:`.endpoints`), then ends
  the watch with ``Unavailable``.
- **Compacted**: etcd's compact_revision ends the watch with ``Compacted`` once the events before
  it are handed out. Starting at or below a compaction this store knows of raises at ``start``.
- **slow watchers**: a watcher that had caught up and lets ``watch_queue_size`` events pile up is
  ended with ``WatchOverflow(next_revision)`` after it has taken what it holds, like the watch
  hub's. One still catching up on history only makes the stream pause (it is cancelled, then
  created again from where the queue ends once the queue is empty): etcd keeps that history.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Any

import grpc
from aetcd import rpc

from kubelite.storage.errors import Compacted, StorageError, Unavailable, WatchOverflow
from kubelite.storage.etcd.endpoints import (
    ATTEMPT_TIMEOUT,
    REQUIRE_LEADER,
    Member,
    backoff,
    describe,
)
from kubelite.storage.etcd.keyspace import prefix_end
from kubelite.storage.interface import Event, Watch

if TYPE_CHECKING:
    from kubelite.storage.etcd.store import EtcdStore

log = logging.getLogger(__name__)


class _Broken(Exception):
    """The stream ended or failed in a way that a new stream (maybe elsewhere) can repair."""


class _Paused(Exception):
    """The queue is full while catching up: stop reading, resume once it is empty."""


class EtcdWatch(Watch):
    def __init__(self, store: EtcdStore, prefix: str, start_revision: int) -> None:
        self._store = store
        self._prefix = prefix
        self._start = start_revision
        self._key = store.keys.key(prefix)
        self._range_end = prefix_end(self._key)
        self._queue: deque[Event] = deque()
        self._limit = store.options.watch_queue_size
        self._cursor = start_revision  # the next revision to hand out
        self._resume = start_revision  # the next revision to ask etcd for
        self._opened_at = 0  # etcd's revision when the current stream was created
        self._caught_up = False  # the consumer has found the queue empty after the history
        self._ending: StorageError | None = None  # raised once the queue is drained
        self._overflowed = False
        self._waiter: asyncio.Future[None] | None = None
        self._room = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    # -- the consumer's side -------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is not None:
            return
        if self._closed:
            raise Unavailable("watch is closed")
        compacted = self._store.compacted
        if self._start <= compacted:
            raise Compacted(self._start, compacted)
        member, call = await self._open()
        self._store.watches.add(self)
        self._task = asyncio.create_task(self._run(member, call))

    async def aclose(self) -> None:
        self._closed = True
        self._store.watches.discard(self)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._wake()

    async def end(self, error: StorageError) -> None:
        """End the watch from outside (the store is closing): ``error`` after what is queued."""
        self._ending = error
        task, self._task = self._task, None
        self._store.watches.discard(self)
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._wake()

    async def __anext__(self) -> Event:
        if self._task is None and not self._closed and self._ending is None:
            await self.start()
        while True:
            if self._queue:
                event = self._queue.popleft()
                self._cursor = event.revision + 1
                if not self._queue:
                    self._room.set()
                return event
            if self._closed:
                raise StopAsyncIteration
            if self._overflowed:
                await self.aclose()
                raise WatchOverflow(self._prefix, self._cursor)
            if self._ending is not None:
                self._closed = True
                raise self._ending
            if self._resume > self._opened_at:  # past the history etcd had at creation
                self._caught_up = True
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # -- the stream ----------------------------------------------------------------------------

    async def _open(self) -> tuple[Member, Any]:
        """Create the etcd watch from ``_resume`` on the current member, failing over until the
        operation timeout."""
        endpoints = self._store.endpoints
        deadline = endpoints.deadline()
        attempt = 0
        while True:
            if endpoints.closed:
                raise Unavailable("store is closed")
            member = await endpoints.current()
            call = member.watch.Watch(metadata=REQUIRE_LEADER)
            try:
                create = rpc.WatchCreateRequest(
                    key=self._key,
                    range_end=self._range_end,
                    start_revision=self._resume,
                    prev_kv=True,
                )
                await call.write(rpc.WatchRequest(create_request=create))
                response = await asyncio.wait_for(call.read(), ATTEMPT_TIMEOUT)
                if response is grpc.aio.EOF or not response.created or response.canceled:
                    reason = "ended" if response is grpc.aio.EOF else response.cancel_reason
                    raise _Broken(f"watch not created: {reason or 'canceled'}")
                self._opened_at = int(response.header.revision)
                endpoints.answered()
                return member, call
            except (grpc.aio.AioRpcError, TimeoutError, _Broken) as exc:
                call.cancel()
                endpoints.failed(member, exc)
                if endpoints.give_up(deadline):
                    raise Unavailable(f"watch on {self._prefix!r}: {describe(exc)}")
                await backoff(attempt)
                attempt += 1
            except BaseException:
                call.cancel()
                raise

    async def _run(self, member: Member, call: Any) -> None:
        try:
            while True:
                try:
                    await self._pump(call)
                    call.cancel()  # overflowed: the consumer ends the watch once it has drained
                    return
                except _Paused:
                    call.cancel()
                    self._room.clear()
                    if self._queue:
                        await self._room.wait()
                except (grpc.aio.AioRpcError, _Broken) as exc:
                    call.cancel()
                    self._store.endpoints.failed(member, exc)
                    log.info("watch on %r broke (%s); resuming", self._prefix, describe(exc))
                member, call = await self._open()
        except StorageError as exc:
            call.cancel()
            self._ending = exc
            self._wake()
        except BaseException:
            call.cancel()
            raise

    async def _pump(self, call: Any) -> None:
        """Queue events until the stream breaks (_Broken, gRPC errors), the queue fills while
        catching up (_Paused), etcd reports a compaction (Compacted), or the queue fills after
        catching up (returns, with ``_overflowed`` set)."""
        keys = self._store.keys
        while True:
            response = await call.read()
            if response is grpc.aio.EOF:
                raise _Broken("stream ended")
            if response.compact_revision:
                self._store.note_compacted(int(response.compact_revision))
                raise Compacted(self._resume, int(response.compact_revision))
            if response.canceled:
                raise _Broken(f"canceled by etcd: {response.cancel_reason or 'no reason given'}")
            if not response.events:
                continue
            events = [keys.event(e) for e in response.events]
            if events[0].revision < self._resume:  # never expected: etcd resumes exactly
                events = [e for e in events if e.revision >= self._resume]
                if not events:
                    continue
            if self._queue and len(self._queue) + len(events) > self._limit:
                if not self._caught_up:
                    raise _Paused()
                self._overflowed = True
                self._wake()
                return
            self._queue.extend(events)
            self._resume = events[-1].revision + 1
            self._wake()
