"""Watch streams written in batches: the events that arrive while one HTTP chunk is being sent
go out together in the next, so a burst (a watch-list's initial events, a busy kind) costs one
send per batch instead of one per event, while a quiet stream still sends each event at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

Send = Callable[[dict[str, Any]], Awaitable[None]]

#: bytes buffered before a writer waits for the chunk in flight (bounds memory per watcher)
BUFFER_LIMIT = 256 * 1024


class ChunkBatcher:
    def __init__(self, send: Send, limit: int = BUFFER_LIMIT) -> None:
        self._send = send
        self._limit = limit
        self._buffer: list[bytes] = []
        self._size = 0
        self._ready = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None

    async def write(self, data: bytes) -> None:
        """Queue ``data`` for the next chunk; waits only while ``limit`` bytes are queued."""
        if self._error is not None:
            raise self._error
        self._buffer.append(data)
        self._size += len(data)
        self._idle.clear()
        self._ready.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        if self._size >= self._limit:
            self._room.clear()
            await self._room.wait()
            if self._error is not None:
                raise self._error

    async def flush(self) -> None:
        """Return once everything written so far has been sent."""
        await self._idle.wait()
        if self._error is not None:
            raise self._error

    async def aclose(self) -> None:
        """Stop sending (what is still queued is dropped)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        try:
            while True:
                await self._ready.wait()
                self._ready.clear()
                if not self._buffer:
                    continue
                chunk = b"".join(self._buffer)
                self._buffer.clear()
                self._size = 0
                self._room.set()
                await self._send({"type": "http.response.body", "body": chunk, "more_body": True})
                if not self._buffer:
                    self._idle.set()
        except BaseException as exc:
            self._error = exc if isinstance(exc, Exception) else ConnectionError("stream closed")
            self._room.set()
            self._idle.set()
            raise
