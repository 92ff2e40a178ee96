"""The storage conformance suite: what every backend must do, one test per guarantee.

Each test is named after a guarantee in docs/guarantees.md. To run it against a backend, subclass
:class:`StoreConformance` in a test module and implement :meth:`StoreConformance.open_store`::

    class TestMyBackend(StoreConformance):
        async def open_store(self, options: StoreOptions) -> Store:
            return await open_store("mybackend://...", options)

Tests use revisions relative to the store's revision when they start, so a backend whose
revisions do not start at 0 (etcd) passes the same suite. Needs pytest and pytest-asyncio.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
import pytest_asyncio

from kubelite.storage.errors import (
    Compacted,
    Conflict,
    FutureRevision,
    KeyExists,
    NotFound,
    WatchOverflow,
)
from kubelite.storage.interface import Event, EventType, KeyValue, Store, StoreOptions, Watch

EVENT_TIMEOUT = 5.0
# Compaction is driven by each test; no background compaction changes what a test sees.
OPTIONS = StoreOptions(compaction_interval_seconds=0)


async def next_event(watch: Watch) -> Event:
    return await asyncio.wait_for(anext(watch), EVENT_TIMEOUT)


async def take(watch: Watch, n: int) -> list[Event]:
    return [await next_event(watch) for _ in range(n)]


async def assert_quiet(watch: Watch, seconds: float = 0.2) -> None:
    """No further event arrives within ``seconds``."""
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(anext(watch), seconds)


class StoreConformance:
    pytestmark = pytest.mark.asyncio

    async def open_store(self, options: StoreOptions) -> Store:
        raise NotImplementedError("subclasses open the backend under test")

    @pytest_asyncio.fixture
    async def store(self) -> AsyncIterator[Store]:
        store = await self.open_store(OPTIONS)
        try:
            yield store
        finally:
            await store.close()

    # -- revisions -------------------------------------------------------------------------

    async def test_revision_rises_by_one_per_write(self, store: Store) -> None:
        r0 = await store.current_revision()
        r1 = await store.create("/t/a", b"1")
        r2 = await store.update("/t/a", b"2", r1)
        r3 = await store.create("/t/b", b"1")
        r4, _ = await store.delete("/t/a")
        assert [r1, r2, r3, r4] == [r0 + 1, r0 + 2, r0 + 3, r0 + 4]
        assert await store.current_revision() == r4

    async def test_key_metadata_follows_etcd(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"1")
        r2 = await store.update("/t/a", b"2", r1)
        assert await store.get("/t/a") == KeyValue("/t/a", b"2", r1, r2, 2)
        r3, deleted = await store.delete("/t/a")
        assert deleted == KeyValue("/t/a", b"2", r1, r2, 2)
        r4 = await store.create("/t/a", b"again")
        # A new incarnation: create_revision and version start over.
        assert await store.get("/t/a") == KeyValue("/t/a", b"again", r4, r4, 1)
        assert r4 == r3 + 1

    async def test_failed_write_changes_nothing(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"1")
        with pytest.raises(KeyExists):
            await store.create("/t/a", b"x")
        with pytest.raises(Conflict):
            await store.update("/t/a", b"x", r1 + 100)
        with pytest.raises(NotFound):
            await store.update("/t/missing", b"x", r1)
        with pytest.raises(NotFound):
            await store.delete("/t/missing")
        with pytest.raises(Conflict):
            await store.delete("/t/a", r1 + 100)
        assert await store.current_revision() == r1
        assert await store.get("/t/a") == KeyValue("/t/a", b"1", r1, r1, 1)

    # -- compare-and-swap ------------------------------------------------------------------

    async def test_create_fails_when_key_is_live(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"1")
        with pytest.raises(KeyExists) as info:
            await store.create("/t/a", b"2")
        assert info.value.key == "/t/a"
        assert info.value.current == KeyValue("/t/a", b"1", r1, r1, 1)

    async def test_update_is_compare_and_swap(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"1")
        r2 = await store.update("/t/a", b"2", r1)
        with pytest.raises(Conflict) as info:
            await store.update("/t/a", b"stale", r1)
        assert info.value.expected_mod_revision == r1
        assert info.value.current == KeyValue("/t/a", b"2", r1, r2, 2)
        assert (await store.get("/t/a")) == info.value.current

    async def test_update_of_absent_key_is_not_found(self, store: Store) -> None:
        with pytest.raises(NotFound) as info:
            await store.update("/t/a", b"1", 1)
        assert info.value.key == "/t/a"

    async def test_delete_checks_expected_revision(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"1")
        r2 = await store.update("/t/a", b"2", r1)
        with pytest.raises(Conflict) as info:
            await store.delete("/t/a", r1)
        assert info.value.current.mod_revision == r2
        r3, prev = await store.delete("/t/a", r2)
        assert r3 == r2 + 1
        assert prev.value == b"2"
        assert await store.get("/t/a") is None

    async def test_concurrent_cas_has_one_winner_per_revision(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"0")
        results = await asyncio.gather(
            *(store.update("/t/a", str(i).encode(), r1) for i in range(16)),
            return_exceptions=True,
        )
        winners = [(i, r) for i, r in enumerate(results) if isinstance(r, int)]
        assert len(winners) == 1
        (i, rev) = winners[0]
        winner = KeyValue("/t/a", str(i).encode(), r1, rev, 2)
        losers = [r for r in results if not isinstance(r, int)]
        assert all(isinstance(r, Conflict) and r.current == winner for r in losers)

    async def test_writes_to_one_key_in_one_batch_apply_in_order(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"a1")
        # Each group is issued at once, so a group-committing backend writes it in one batch.
        created, exists = await asyncio.gather(
            store.create("/t/b", b"b1"), store.create("/t/b", b"b2"), return_exceptions=True
        )
        assert isinstance(created, int)
        assert isinstance(exists, KeyExists)
        assert exists.current == KeyValue("/t/b", b"b1", created, created, 1)
        (deleted, _), recreated = await asyncio.gather(
            store.delete("/t/a", r1), store.create("/t/a", b"a2")
        )
        made, (gone, _) = await asyncio.gather(store.create("/t/c", b"c1"), store.delete("/t/c"))
        assert recreated == deleted + 1
        assert gone == made + 1
        assert await store.get("/t/a") == KeyValue("/t/a", b"a2", recreated, recreated, 1)
        assert await store.get("/t/c") is None
        listed = await store.list("/t/")
        assert [(kv.key, kv.value) for kv in listed.items] == [("/t/a", b"a2"), ("/t/b", b"b1")]

    async def test_conflict_fails_only_its_own_write(self, store: Store) -> None:
        revs = [await store.create(f"/t/{i}", b"0") for i in range(8)]
        # Written together, so a group-committing backend puts them in one batch.
        results = await asyncio.gather(
            *(
                store.update(f"/t/{i}", b"1", rev if i != 3 else rev - 1)
                for i, rev in enumerate(revs)
            ),
            return_exceptions=True,
        )
        assert isinstance(results[3], Conflict)
        ok = [r for i, r in enumerate(results) if i != 3]
        assert all(isinstance(r, int) for r in ok)
        assert sorted(ok) == list(range(revs[-1] + 1, revs[-1] + 8))  # type: ignore[type-var]

    # -- reads -----------------------------------------------------------------------------

    async def test_read_your_writes(self, store: Store) -> None:
        for i in range(20):
            rev = await store.create(f"/t/{i:02}", str(i).encode())
            got = await store.get(f"/t/{i:02}")
            assert got is not None
            assert got.mod_revision == rev
            listed = await store.list("/t/")
            assert listed.revision >= rev
            assert len(listed.items) == i + 1

    async def test_get_at_past_revision_returns_value_then(self, store: Store) -> None:
        r0 = await store.current_revision()
        r1 = await store.create("/t/a", b"1")
        r2 = await store.update("/t/a", b"2", r1)
        r3, _ = await store.delete("/t/a")
        r4 = await store.create("/t/a", b"4")
        if r0 >= 1:
            assert await store.get("/t/a", r0) is None
        assert await store.get("/t/a", r1) == KeyValue("/t/a", b"1", r1, r1, 1)
        assert await store.get("/t/a", r2) == KeyValue("/t/a", b"2", r1, r2, 2)
        assert await store.get("/t/a", r3) is None
        assert await store.get("/t/a", r4) == KeyValue("/t/a", b"4", r4, r4, 1)

    async def test_read_above_current_revision_is_future(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"1")
        with pytest.raises(FutureRevision) as info:
            await store.get("/t/a", r1 + 1)
        assert info.value.current_revision == r1
        with pytest.raises(FutureRevision):
            await store.list("/t/", revision=r1 + 5)

    async def test_list_is_key_ordered_and_prefix_bounded(self, store: Store) -> None:
        for key in ["/t/b", "/t/a", "/t/c/x", "/u/a", "/t", "/t0", "/s/z"]:
            await store.create(key, key.encode())
        result = await store.list("/t/")
        assert [kv.key for kv in result.items] == ["/t/a", "/t/b", "/t/c/x"]
        assert result.more is False
        assert [kv.key for kv in (await store.list("/t")).items] == [
            "/t",
            "/t/a",
            "/t/b",
            "/t/c/x",
            "/t0",
        ]

    async def test_list_at_past_revision(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"1")
        r2 = await store.create("/t/b", b"1")
        await store.update("/t/a", b"2", r1)
        await store.delete("/t/b")
        await store.create("/t/c", b"1")
        then = await store.list("/t/", revision=r2)
        assert then.revision == r2
        assert then.items == [
            KeyValue("/t/a", b"1", r1, r1, 1),
            KeyValue("/t/b", b"1", r2, r2, 1),
        ]
        now = await store.list("/t/")
        assert [(kv.key, kv.value) for kv in now.items] == [("/t/a", b"2"), ("/t/c", b"1")]

    async def test_list_pages_over_one_snapshot(self, store: Store) -> None:
        for i in range(10):
            await store.create(f"/t/{i}", b"v1")
        first = await store.list("/t/", limit=4)
        assert first.more is True
        assert [kv.key for kv in first.items] == ["/t/0", "/t/1", "/t/2", "/t/3"]
        # Writes between pages must not show in later pages of the same snapshot.
        await store.delete("/t/5")
        await store.create("/t/55", b"new")
        kv6 = await store.get("/t/6")
        assert kv6 is not None
        await store.update("/t/6", b"v2", kv6.mod_revision)
        pages = [first]
        while pages[-1].more:
            pages.append(
                await store.list(
                    "/t/",
                    revision=first.revision,
                    limit=4,
                    start_after=pages[-1].items[-1].key,
                )
            )
        items = [kv for page in pages for kv in page.items]
        assert [kv.key for kv in items] == [f"/t/{i}" for i in range(10)]
        assert all(kv.value == b"v1" for kv in items)
        assert {page.revision for page in pages} == {first.revision}

    async def test_list_counts_the_keys_after_the_page(self, store: Store) -> None:
        for key in ["/t", "/t0", "/u/a", *(f"/t/{i}" for i in range(10))]:
            await store.create(key, b"v1")
        first = await store.list("/t/", limit=4, count=True)
        assert (len(first.items), first.more, first.remaining) == (4, True, 6)
        assert (await store.list("/t/", limit=4)).remaining is None  # counted only when asked
        # A later page is counted at its own snapshot: writes since do not change the count.
        await store.delete("/t/5")
        await store.create("/t/55", b"new")
        await store.create("/t/56", b"new")
        second = await store.list("/t/", first.revision, 4, first.items[-1].key, count=True)
        assert [kv.key for kv in second.items] == ["/t/4", "/t/5", "/t/6", "/t/7"]
        assert (second.more, second.remaining) == (True, 2)
        last = await store.list("/t/", first.revision, 4, second.items[-1].key, count=True)
        assert (len(last.items), last.more, last.remaining) == (2, False, 0)
        # Now: /t/5 is gone, /t/55 and /t/56 are new.
        now = await store.list("/t/", limit=4, start_after="/t/4", count=True)
        assert [kv.key for kv in now.items] == ["/t/55", "/t/56", "/t/6", "/t/7"]
        assert (now.more, now.remaining) == (True, 2)
        assert (await store.list("/t/", count=True)).remaining == 0

    # -- watch -----------------------------------------------------------------------------

    async def test_watch_delivers_every_change_in_order(self, store: Store) -> None:
        r0 = await store.current_revision()
        async with store.watch("/t/", r0 + 1) as watch:
            r1 = await store.create("/t/a", b"1")
            r2 = await store.update("/t/a", b"2", r1)
            await store.create("/u/ignored", b"x")
            r4, _ = await store.delete("/t/a")
            events = await take(watch, 3)
            await assert_quiet(watch)
        assert [(e.type, e.revision) for e in events] == [
            (EventType.PUT, r1),
            (EventType.PUT, r2),
            (EventType.DELETE, r4),
        ]

    async def test_watch_events_carry_prev_kv(self, store: Store) -> None:
        r0 = await store.current_revision()
        r1 = await store.create("/t/a", b"1")
        r2 = await store.update("/t/a", b"2", r1)
        r3, _ = await store.delete("/t/a")
        async with store.watch("/t/", r0 + 1) as watch:
            created, updated, deleted = await take(watch, 3)
        assert created == Event(EventType.PUT, KeyValue("/t/a", b"1", r1, r1, 1), None)
        assert updated == Event(
            EventType.PUT, KeyValue("/t/a", b"2", r1, r2, 2), KeyValue("/t/a", b"1", r1, r1, 1)
        )
        assert deleted.type is EventType.DELETE
        assert deleted.revision == r3
        assert deleted.kv.key == "/t/a"
        assert deleted.prev_kv == KeyValue("/t/a", b"2", r1, r2, 2)

    async def test_watch_history_meets_live_without_gap_or_duplicate(self, store: Store) -> None:
        r0 = await store.current_revision()
        for i in range(30):
            await store.create(f"/t/{i}", b"x")

        async def writer() -> None:
            for i in range(30, 60):
                await store.create(f"/t/{i}", b"x")

        task = asyncio.create_task(writer())  # writes race the watch's catch-up
        async with store.watch("/t/", r0 + 1) as watch:
            events = await take(watch, 60)
            await task
            await assert_quiet(watch)
        assert [e.revision for e in events] == list(range(r0 + 1, r0 + 61))
        assert [e.kv.key for e in events] == [f"/t/{i}" for i in range(60)]

    async def test_watch_resumes_from_last_revision_plus_one(self, store: Store) -> None:
        r0 = await store.current_revision()
        for i in range(10):
            await store.create(f"/t/{i}", b"x")
        async with store.watch("/t/", r0 + 1) as watch:
            first = await take(watch, 4)
        async with store.watch("/t/", first[-1].revision + 1) as watch:
            rest = await take(watch, 6)
            await assert_quiet(watch)
        assert [e.revision for e in first + rest] == list(range(r0 + 1, r0 + 11))

    async def test_watch_from_future_revision_waits_for_it(self, store: Store) -> None:
        r0 = await store.current_revision()
        async with store.watch("/t/", r0 + 3) as watch:
            for i in range(4):
                await store.create(f"/t/{i}", b"x")
            events = await take(watch, 2)
        assert [e.revision for e in events] == [r0 + 3, r0 + 4]

    async def test_many_watchers_see_the_same_sequence(self, store: Store) -> None:
        r0 = await store.current_revision()
        watches = [store.watch("/t/", r0 + 1) for _ in range(20)]
        for w in watches:
            await w.start()
        writes = [store.create(f"/t/{i}", b"x") for i in range(50)]
        await asyncio.gather(*writes)
        seen = [[e.revision for e in await take(w, 50)] for w in watches]
        for w in watches:
            await w.aclose()
        assert all(s == list(range(r0 + 1, r0 + 51)) for s in seen)

    async def test_slow_watcher_is_ended_resumably(self) -> None:
        store = await self.open_store(replace(OPTIONS, watch_queue_size=8))
        try:
            r0 = await store.current_revision()
            async with store.watch("/t/", r0 + 1) as watch:
                await assert_quiet(watch, 0.05)  # now live, reading nothing
                for i in range(20):
                    await store.create(f"/t/{i}", b"x")
                got: list[Event] = []

                async def drain() -> None:
                    while True:
                        got.append(await next_event(watch))

                with pytest.raises(WatchOverflow) as info:
                    await drain()
            assert 0 < len(got) <= 8
            assert info.value.next_revision == got[-1].revision + 1
            async with store.watch("/t/", info.value.next_revision) as watch:
                rest = await take(watch, 20 - len(got))
            assert [e.revision for e in got + rest] == list(range(r0 + 1, r0 + 21))
        finally:
            await store.close()

    # -- compaction ------------------------------------------------------------------------

    async def test_compaction_keeps_reads_at_and_after_it(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"1")
        r2 = await store.update("/t/a", b"2", r1)
        r3 = await store.create("/t/b", b"1")
        r4, _ = await store.delete("/t/b")
        r5 = await store.update("/t/a", b"3", r2)
        before = await store.list("/t/", revision=r4)
        await store.compact(r4)
        assert await store.compacted_revision() == r4
        assert await store.list("/t/", revision=r4) == before
        assert await store.get("/t/a", r4) == KeyValue("/t/a", b"2", r1, r2, 2)
        assert await store.get("/t/a") == KeyValue("/t/a", b"3", r1, r5, 3)
        async with store.watch("/t/", r4 + 1) as watch:
            event = await next_event(watch)
        assert event.revision == r5
        assert event.prev_kv == KeyValue("/t/a", b"2", r1, r2, 2)
        assert r3 < r4

    async def test_compacted_history_raises_compacted(self, store: Store) -> None:
        r1 = await store.create("/t/a", b"1")
        r2 = await store.update("/t/a", b"2", r1)
        await store.update("/t/a", b"3", r2)
        await store.compact(r2)
        with pytest.raises(Compacted) as info:
            await store.get("/t/a", r1)
        assert info.value.compacted_revision == r2
        with pytest.raises(Compacted):
            await store.list("/t/", revision=r1)
        with pytest.raises(Compacted):
            await store.watch("/t/", r2).start()
        with pytest.raises(Compacted):
            await store.compact(r2)
        with pytest.raises(FutureRevision):
            await store.compact(r2 + 10)
