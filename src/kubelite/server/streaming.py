"""Watch streams written in batches: the events that arrive while one HTTP chunk is being sent
go out together in the next, so a burst (a watch-list's initial events, a busy kind) costs one
send per batch instead of one per event, while a quiet stream still sends each event at once.

An idle stream holds next to nothing: no buffer, no chunk already sent, no task (a sender task
runs only while there is something to send), and once closed nothing that refers back to it
(an ended task's exception traceback would, a cycle the cycle collector frees only rarely once
the heap is large). A writer waits while ``limit`` bytes are buffered, so a stream whose client
does not read holds at most about ``limit`` bytes here (kube-apiserver's cacheWatcher holds a
bounded channel of events per watcher, ``pkg/storage/cacher/cache_watcher.go``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

Send = Callable[[dict[str, Any]], Awaitable[None]]

#: bytes buffered before a writer waits for the chunk in flight (bounds memory per watcher)
BUFFER_LIMIT = 256 * 1024


class ChunkBatcher:
    __slots__ = ("__weakref__", "_buffer", "_error", "_idle", "_limit", "_room", "_send",
                 "_size", "_task")  # fmt: skip

    def __init__(self, send: Send, limit: int = BUFFER_LIMIT) -> None:
        self._send = send
        self._limit = limit
        self._buffer: list[bytes] = []
        self._size = 0
        self._task: asyncio.Task[None] | None = None  # the sender, while there is something
        self._room: asyncio.Future[None] | None = None  # a writer waiting on a full buffer
        self._idle: asyncio.Future[None] | None = None  # flush waiting for the sender to end
        self._error: Exception | None = None

    @property
    def buffered(self) -> int:
        """Bytes written and not yet handed to ``send``."""
        return self._size

    async def write(self, data: bytes) -> None:
        """Queue ``data`` for the next chunk; waits only while ``limit`` bytes are queued."""
        if self._error is not None:
            raise self._error
        self._buffer.append(data)
        self._size += len(data)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        if self._size >= self._limit:
            if self._room is None:
                self._room = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._room)
            if self._error is not None:
                raise self._error

    async def flush(self) -> None:
        """Return once everything written so far has been sent."""
        if self._task is not None:
            if self._idle is None:
                self._idle = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._idle)
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        """Stop sending (what is still queued is dropped)."""
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._buffer.clear()
        self._size = 0
        if self._error is None:
            self._error = ConnectionError("stream closed")
        self._ended()

    async def _run(self) -> None:
        try:
            while self._buffer:
                await self._send_buffered()
        except Exception as exc:
            # kept without its traceback, which holds this sender's frame (and so this batcher)
            self._error = exc.with_traceback(None)
        except asyncio.CancelledError:
            self._error = ConnectionError("stream closed")
            raise
        finally:
            self._ended()

    def _ended(self) -> None:
        """The sender is done (or gone): wake whoever waits on it."""
        self._task = None
        for waiter in (self._room, self._idle):
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        self._room = self._idle = None

    async def _send_buffered(self) -> None:
        """One chunk of everything buffered; the chunk is not kept once sent (an idle watcher
        would hold its last burst, a watch-list's initial events, for as long as it stays)."""
        chunk = b"".join(self._buffer)
        self._buffer.clear()
        self._size = 0
        room, self._room = self._room, None
        if room is not None and not room.done():
            room.set_result(None)
        await self._send({"type": "http.response.body", "body": chunk, "more_body": True})
