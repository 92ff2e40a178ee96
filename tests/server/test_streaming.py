"""ChunkBatcher: watch events written while a chunk is in flight go out together, in order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubelite.server.streaming import ChunkBatcher


class SlowSend:
    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.gate = asyncio.Event()

    async def __call__(self, message: dict[str, Any]) -> None:
        await self.gate.wait()  # the connection is busy until the test opens the gate
        self.chunks.append(message["body"])
        assert message["more_body"] is True


async def test_events_written_during_a_send_share_the_next_chunk() -> None:
    send = SlowSend()
    out = ChunkBatcher(send)
    await out.write(b"1\n")
    await asyncio.sleep(0)  # the first chunk is now in flight, held at the gate
    for i in range(2, 6):
        await out.write(f"{i}\n".encode())
    send.gate.set()
    await out.flush()
    assert send.chunks == [b"1\n", b"2\n3\n4\n5\n"]
    await out.write(b"6\n")
    await out.flush()
    assert send.chunks[-1] == b"6\n"
    await out.aclose()


async def test_a_full_buffer_makes_the_writer_wait_for_the_send() -> None:
    send = SlowSend()
    out = ChunkBatcher(send, limit=10)
    await out.write(b"first\n")
    await asyncio.sleep(0)
    await out.write(b"12345")
    blocked = asyncio.ensure_future(out.write(b"67890"))  # 10 bytes queued: must wait
    await asyncio.sleep(0.01)
    assert not blocked.done()
    send.gate.set()
    await asyncio.wait_for(blocked, 5)
    await out.flush()
    assert b"".join(send.chunks) == b"first\n1234567890"
    await out.aclose()


async def test_a_failed_send_fails_the_next_write() -> None:
    async def broken(message: dict[str, Any]) -> None:
        raise ConnectionResetError("gone")

    out = ChunkBatcher(broken)
    await out.write(b"x\n")
    with pytest.raises(ConnectionResetError):
        await out.flush()
    with pytest.raises(ConnectionResetError):
        await out.write(b"y\n")
    await out.aclose()
