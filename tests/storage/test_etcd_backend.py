"""What the etcd backend promises beyond the shared contract: its URL, keyspaces under a prefix,
kube-apiserver's compaction protocol between several servers, etcd's own compactions, watch
catch-up with a small queue, and an orderly close. One real etcd member (the session's)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from etcdcluster import EtcdCluster
from kubelite.storage import (
    Compacted,
    Event,
    Retention,
    StoreOptions,
    Unavailable,
    Unsupported,
    WatchOverflow,
    open_store,
)
from kubelite.storage.etcd import EtcdStore, EtcdURL
from kubelite.storage.interface import Watch
from kubelite.storage.testing import OPTIONS, assert_quiet, take

_prefixes = itertools.count()


def fresh_prefix() -> str:
    return f"/backend/{next(_prefixes):06d}"


async def assert_ends_with(watch: Watch, error: type[Exception]) -> None:
    """The watch hands out whatever it still holds, then raises ``error``."""

    async def drain() -> None:
        while True:
            await anext(watch)

    with pytest.raises(error):
        await drain()


@pytest_asyncio.fixture
async def url(etcd: EtcdCluster) -> AsyncIterator[str]:
    yield f"{etcd.url}?prefix={fresh_prefix()}"


# -- the URL ----------------------------------------------------------------------------------


def test_url_names_members_and_prefix() -> None:
    parsed = EtcdURL.parse("h1:1,h2,[::1]:3?prefix=/apps/kl")
    assert parsed.endpoints == (("h1", 1), ("h2", 2379), ("::1", 3))
    assert parsed.prefix == "/apps/kl"
    assert EtcdURL.parse("localhost:2379").prefix == "/kubelite"


@pytest.mark.parametrize(
    ("rest", "message"),
    [
        ("", "names no endpoint"),
        ("h1:x", "is not a number"),
        ("h1:70000", "out of range"),
        ("http://h1:2379", "without a scheme"),
        ("h1?prefix=kl", "must start with '/'"),
        ("h1?prefix=/kl/", "not end with '/'"),
        ("h1?timeout=3", "unknown parameter"),
    ],
)
def test_bad_url_is_a_clear_error(rest: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        EtcdURL.parse(rest)


async def test_unreachable_etcd_is_unavailable_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubelite.storage.etcd import endpoints

    monkeypatch.setattr(endpoints, "OPERATION_TIMEOUT", 1.0)
    monkeypatch.setattr(endpoints, "ATTEMPT_TIMEOUT", 0.5)
    from etcdcluster import free_ports

    (port,) = free_ports(1)
    with pytest.raises(Unavailable, match="no etcd member answered"):
        await open_store(f"etcd://127.0.0.1:{port}", OPTIONS)


# -- keyspaces --------------------------------------------------------------------------------


async def test_stores_under_different_prefixes_do_not_see_each_other(etcd: EtcdCluster) -> None:
    a = await open_store(f"{etcd.url}?prefix={fresh_prefix()}", OPTIONS)
    b = await open_store(f"{etcd.url}?prefix={fresh_prefix()}", OPTIONS)
    try:
        r0 = await b.current_revision()
        async with b.watch("/", r0 + 1) as watch:
            await a.create("/k", b"a")
            rb = await b.create("/k", b"b")
            (event,) = await take(watch, 1)
            await assert_quiet(watch)
        assert event.revision == rb
        assert [kv.value for kv in (await a.list("/")).items] == [b"a"]
        assert [kv.value for kv in (await b.list("/")).items] == [b"b"]
    finally:
        await a.close()
        await b.close()


async def test_revisions_are_etcds_shared_by_every_prefix(etcd: EtcdCluster) -> None:
    """Two kubelite stores on one etcd draw from its one counter (a write by either moves both)."""
    a = await open_store(f"{etcd.url}?prefix={fresh_prefix()}", OPTIONS)
    b = await open_store(f"{etcd.url}?prefix={fresh_prefix()}", OPTIONS)
    try:
        ra = await a.create("/k", b"a")
        assert await b.current_revision() >= ra
        rb = await b.create("/k", b"b")
        assert rb > ra
        assert await a.current_revision() >= rb
    finally:
        await a.close()
        await b.close()


async def test_concurrent_point_reads_each_get_their_own_key(url: str) -> None:
    """Point reads issued together are batched into shared calls; each still gets its key's
    value (or None), and sees every write acknowledged before it was issued."""
    async with await open_store(url, OPTIONS) as store:
        revs = await asyncio.gather(
            *(store.create(f"/k/{i}", str(i).encode()) for i in range(0, 300, 2))
        )
        got = await asyncio.gather(*(store.get(f"/k/{i}") for i in range(300)))
        for i, kv in enumerate(got):
            if i % 2:
                assert kv is None
            else:
                assert kv is not None
                assert (kv.key, kv.value, kv.mod_revision) == (
                    f"/k/{i}",
                    str(i).encode(),
                    revs[i // 2],
                )


# -- compaction -------------------------------------------------------------------------------

ALWAYS = StoreOptions(compaction_interval_seconds=0, retention_seconds=0, min_retained_revisions=1)


async def test_only_one_of_two_servers_compacts_per_interval(url: str) -> None:
    """kube-apiserver's compact_rev_key protocol: servers that saw the same version of the key
    race one compare-and-swap; the loser learns the new version and compacts next interval."""
    a = await open_store(url, ALWAYS)
    b = await open_store(url, ALWAYS)
    assert isinstance(a, EtcdStore)
    assert isinstance(b, EtcdStore)
    try:
        for i in range(5):
            await a.create(f"/k/{i}", b"x")
        first = await a.compaction_tick()
        assert first is not None
        await b.create("/k/more", b"x")
        assert await b.compaction_tick() is None  # a compacted in this interval
        assert await b.compacted_revision() == first
        await a.create("/k/more2", b"x")
        second = await b.compaction_tick()  # b's next interval: its turn
        assert second is not None
        assert second > first
        assert await a.compaction_tick() is None
        assert await a.compacted_revision() == second
    finally:
        await a.close()
        await b.close()


async def test_compaction_by_another_server_is_seen_by_reads_and_watches(url: str) -> None:
    a = await open_store(url, OPTIONS)
    b = await open_store(url, OPTIONS)
    try:
        r1 = await a.create("/k", b"1")
        r2 = await a.update("/k", b"2", r1)
        await a.update("/k", b"3", r2)
        await a.compact(r2)
        assert await b.compacted_revision() == r2
        with pytest.raises(Compacted):
            await b.get("/k", r1)
        with pytest.raises(Compacted):
            await b.watch("/", r2).start()
    finally:
        await a.close()
        await b.close()


async def test_etcds_own_compaction_is_reported_as_compacted(url: str, etcd: EtcdCluster) -> None:
    """A compaction kubelite did not make (etcdctl, --auto-compaction) still ends reads and
    watches below it with Compacted, never with a wrong answer."""
    store = await open_store(url, OPTIONS)
    assert isinstance(store, EtcdStore)
    try:
        r1 = await store.create("/k", b"1")
        r2 = await store.update("/k", b"2", r1)
        await store.update("/k", b"3", r2)
        member = await store.endpoints.current()
        await member.client.compact(r2)  # behind kubelite's back: compact_rev_key is not moved
        with pytest.raises(Compacted) as info:
            await store.get("/k", r1)
        assert info.value.compacted_revision > r1
        watch = store.watch("/", r1)
        await watch.start()  # kubelite does not know yet; etcd tells the watch
        with pytest.raises(Compacted) as winfo:
            await anext(watch)
        assert winfo.value.compacted_revision == r2
        assert await store.compacted_revision() >= r2
    finally:
        await store.close()


# -- watch ------------------------------------------------------------------------------------


async def test_watch_catches_up_through_long_history_with_a_small_queue(etcd: EtcdCluster) -> None:
    """A watcher reading history past its queue size is not ended: its stream pauses and
    resumes from where the queue ends (etcd keeps the history)."""
    options = StoreOptions(compaction_interval_seconds=0, watch_queue_size=4)
    async with await open_store(f"{etcd.url}?prefix={fresh_prefix()}", options) as store:
        r0 = await store.current_revision()
        await asyncio.gather(*(store.create(f"/k/{i:04}", b"x") for i in range(1500)))

        async def more() -> None:
            for i in range(1500, 1600):
                await store.create(f"/k/{i:04}", b"x")

        writing = asyncio.create_task(more())
        async with store.watch("/k/", r0 + 1) as watch:
            events = []
            for _ in range(1600):
                events.append(await anext(watch))
                # Slower than etcd sends history (up to 1,000 revisions per message), so that
                # the stream pauses; and the writer races the catch-up.
                await asyncio.sleep(0.001)
            await writing
            await assert_quiet(watch)
    assert [e.revision for e in events] == list(range(r0 + 1, r0 + 1601))


async def test_live_watcher_that_falls_behind_gets_watch_overflow(url: str) -> None:
    options = StoreOptions(compaction_interval_seconds=0, watch_queue_size=4)
    async with await open_store(url, options) as store:
        r0 = await store.current_revision()
        async with store.watch("/", r0 + 1) as watch:
            await assert_quiet(watch, 0.05)
            for i in range(10):
                await store.create(f"/{i}", b"x")
            got: list[Event] = []

            async def drain() -> None:
                while True:
                    got.append(await anext(watch))

            with pytest.raises(WatchOverflow) as info:
                await drain()
        assert 0 < len(got) <= 4
        assert info.value.next_revision == got[-1].revision + 1


async def test_close_finishes_issued_writes_ends_watches_and_refuses_new_work(url: str) -> None:
    store = await open_store(url, OPTIONS)
    r0 = await store.current_revision()
    watch = store.watch("/", r0 + 1)
    await watch.start()
    pending = asyncio.ensure_future(store.create("/a", b"1"))
    await asyncio.sleep(0)
    await store.close()
    assert pending.result() > r0  # issued before close: finished, not dropped
    await assert_ends_with(watch, Unavailable)
    with pytest.raises(Unavailable):
        await store.create("/b", b"1")
    with pytest.raises(Unavailable):
        await store.get("/a")


# -- revision history beyond compaction: not over etcd ---------------------------------------


async def test_revision_history_is_refused_clearly(url: str) -> None:
    """A retention policy is accepted (the API layer serves the subresource and answers 405),
    but reading history says it needs the SQLite store."""
    retained = StoreOptions(
        compaction_interval_seconds=0, history_retention={"/cm/": Retention(max_versions=3)}
    )
    async with await open_store(url, retained) as store:
        await store.create("/cm/a", b"1")
        with pytest.raises(Unsupported, match="only by the SQLite store, not over etcd"):
            await store.history("/cm/a")
