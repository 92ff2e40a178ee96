"""The etcd backend's cut of stranded calls (storage/etcd/endpoints.py): once a member fails,
calls in flight for ``STALE_AFTER_FAILURE`` are cancelled and fail as ``IN_DOUBT``, so reads are
retried and compare-and-swaps re-read at once instead of waiting out their 5 s attempt. The
calls here are asyncio futures standing in for gRPC calls (the part under test is the
bookkeeping); tests/ha kill real etcd leaders under load, and bench/etcd_failover.py measures
the stall."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from kubelite.storage.etcd.endpoints import (
    STALE_AFTER_FAILURE,
    TROUBLE_SECONDS,
    Cut,
    Endpoints,
    Failure,
    classify,
)


def endpoints() -> Endpoints:
    return Endpoints((("127.0.0.1", 1), ("127.0.0.1", 2)))


async def test_a_call_stranded_when_a_member_fails_is_cut_as_in_doubt() -> None:
    eps = endpoints()
    stuck: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiting = asyncio.create_task(eps.send(stuck))
    await asyncio.sleep(STALE_AFTER_FAILURE + 0.05)
    eps.failed(eps.members[0], RuntimeError("leader gone"))
    with pytest.raises(grpc.aio.AioRpcError) as cut:
        await waiting
    assert classify(cut.value) is Failure.IN_DOUBT
    assert eps._in_flight == {}
    assert eps._cut == set()
    await eps.close()


async def test_a_cut_neither_moves_callers_on_nor_prolongs_the_trouble() -> None:
    """Under a slow etcd, a cut call counted as a failure would cut others in turn, for ever."""
    eps = endpoints()
    stuck: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiting = asyncio.create_task(eps.send(stuck))
    await asyncio.sleep(STALE_AFTER_FAILURE + 0.05)
    eps.failed(eps.members[0], RuntimeError("leader gone"))
    with pytest.raises(Cut) as cut:
        await waiting
    until = eps._trouble_until
    current = await eps.current()
    eps.failed(current, cut.value)
    assert await eps.current() is current
    assert eps._trouble_until == until
    await eps.close()


async def test_a_fresh_call_is_cut_only_once_it_is_stale_within_the_trouble() -> None:
    eps = endpoints()
    eps.failed(eps.members[0], RuntimeError("leader gone"))
    fresh: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiting = asyncio.create_task(eps.send(fresh))
    await asyncio.sleep(0)
    assert not waiting.done()  # sent after the failure: not cut at once
    with pytest.raises(grpc.aio.AioRpcError):  # but swept once stale, while trouble lasts
        await asyncio.wait_for(waiting, STALE_AFTER_FAILURE * 4)
    await eps.close()


async def test_answers_and_our_own_cancellation_pass_through() -> None:
    eps = endpoints()
    loop = asyncio.get_running_loop()
    answered: asyncio.Future[str] = loop.create_future()
    answered.set_result("ok")
    assert await eps.send(answered) == "ok"
    # without a failure nothing is cut, however long a call takes
    slow: asyncio.Future[str] = loop.create_future()
    waiting = asyncio.create_task(eps.send(slow))
    await asyncio.sleep(STALE_AFTER_FAILURE + 0.05)
    assert not waiting.done()
    waiting.cancel()  # the caller's own cancellation stays a cancellation
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert eps._in_flight == {}
    assert TROUBLE_SECONDS > STALE_AFTER_FAILURE
    await eps.close()
