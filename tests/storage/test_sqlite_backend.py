"""What the SQLite backend promises beyond the shared contract: persistence, schema migration,
bounded compaction and WAL, watch catch-up under load, and an orderly close."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path

import pytest

from kubelite.storage import (
    Compacted,
    Conflict,
    StoreOptions,
    Unavailable,
    WatchOverflow,
    open_store,
)
from kubelite.storage.sqlite import SqliteStore
from kubelite.storage.sqlite import writer as writer_module
from kubelite.storage.sqlite.schema import MIGRATIONS, SCHEMA_VERSION
from kubelite.storage.testing import OPTIONS, assert_quiet, take

KIB = b"x" * 1024


def log_rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT count(*) FROM log").fetchone()[0])


async def test_writes_survive_reopen(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/state.db"
    async with await open_store(url, OPTIONS) as store:
        r1 = await store.create("/a", b"1")
        r2 = await store.update("/a", b"2", r1)
        await store.compact(r1)
    async with await open_store(url, OPTIONS) as store:
        assert await store.current_revision() == r2
        assert await store.compacted_revision() == r1
        kv = await store.get("/a")
        assert kv is not None
        assert (kv.value, kv.mod_revision) == (b"2", r2)
        assert await store.create("/b", b"1") == r2 + 1


async def test_private_store_lives_in_a_temp_dir_removed_on_close() -> None:
    store = await open_store("sqlite://", OPTIONS)
    assert isinstance(store, SqliteStore)
    folder = os.path.dirname(store.path)
    assert os.path.exists(store.path)
    await store.close()
    assert not os.path.exists(folder)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("state.db", "has no scheme"),
        ("mysql://db/kube", "unknown store URL scheme 'mysql'"),
        ("sqlite:///x.db?mode=ro", "query strings are not supported"),
    ],
)
async def test_bad_store_url_is_a_clear_error(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        await open_store(url)


# -- schema versions ---------------------------------------------------------------------------


async def test_new_database_gets_the_current_schema_version(tmp_path: Path) -> None:
    async with await open_store(f"sqlite://{tmp_path}/state.db", OPTIONS):
        pass
    with sqlite3.connect(tmp_path / "state.db") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


@pytest.mark.parametrize("version", range(SCHEMA_VERSION))
async def test_older_database_is_migrated(tmp_path: Path, version: int) -> None:
    path = tmp_path / "state.db"
    db = sqlite3.connect(path, isolation_level=None)
    for step in MIGRATIONS[:version]:
        step(db)
    db.execute(f"PRAGMA user_version = {version}")
    db.close()
    async with await open_store(f"sqlite://{path}", OPTIONS) as store:
        rev = await store.create("/a", b"1")
        assert (await store.get("/a")) is not None
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert rev >= 1


async def test_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(Unavailable, match="newer than this kubelite supports"):
        await open_store(f"sqlite://{path}", OPTIONS)


# -- compaction --------------------------------------------------------------------------------


async def test_compaction_removes_superseded_rows(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with await open_store(f"sqlite://{path}", OPTIONS) as store:
        rev = await store.create("/a", b"0")
        for i in range(99):
            rev = await store.update("/a", str(i).encode(), rev)
        await store.create("/gone", b"x")
        await store.delete("/gone")
        assert log_rows(path) == 102
        await store.compact(await store.current_revision())
        # Only /a's current row is left: its 99 older rows and /gone's two rows are gone.
        assert log_rows(path) == 1


async def test_compaction_runs_in_steps_between_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_module, "COMPACT_WINDOW", 100)
    async with await open_store(f"sqlite://{tmp_path}/state.db", OPTIONS) as store:
        rev = await store.create("/a", b"0")
        for _ in range(999):
            rev = await store.update("/a", b"x", rev)
        order: list[str] = []

        async def compact() -> None:
            await store.compact(rev)
            order.append("compacted")

        async def write() -> None:
            await asyncio.sleep(0)  # queued after the compaction's first step
            await store.create("/b", b"1")
            order.append("written")

        await asyncio.gather(compact(), write())
        # Ten steps of 100 revisions: the write did not wait for all of them.
        assert order == ["written", "compacted"]


async def test_automatic_compaction_keeps_min_revisions(tmp_path: Path) -> None:
    options = StoreOptions(
        retention_seconds=0.2, min_retained_revisions=5, compaction_interval_seconds=0.02
    )
    async with await open_store(f"sqlite://{tmp_path}/state.db", options) as store:
        for i in range(20):
            await store.create(f"/k/{i}", b"x")
        for _ in range(200):
            if await store.compacted_revision() == 15:
                break
            await asyncio.sleep(0.02)
        assert await store.compacted_revision() == 15
        with pytest.raises(Compacted):
            await store.get("/k/0", revision=14)
        assert (await store.list("/k/", revision=15)).items[-1].key == "/k/9"


async def test_wal_file_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    options = StoreOptions(durability="relaxed", compaction_interval_seconds=0)
    async with await open_store(f"sqlite://{path}", options) as store:
        revs = await asyncio.gather(*(store.create(f"/k/{i}", KIB) for i in range(500)))
        for _ in range(60):  # 30,000 writes of 1 KiB: about 30 MiB through the WAL
            revs = await asyncio.gather(
                *(store.update(f"/k/{i}", KIB, rev) for i, rev in enumerate(revs)),
                store.list("/k/", limit=50),  # readers holding snapshots meanwhile
            )
            revs = revs[:-1]
        await store.compact(await store.current_revision())
        await store.create("/after", b"x")
        wal = os.path.getsize(f"{path}-wal")
    assert wal < 16 * 1024 * 1024, f"-wal file is {wal} bytes"


# -- watch -------------------------------------------------------------------------------------


async def test_watch_catches_up_through_long_history_with_a_small_queue() -> None:
    """A watcher reading history past its queue size is not ended: it reads further instead."""
    options = StoreOptions(compaction_interval_seconds=0, watch_queue_size=4)
    async with await open_store("sqlite://", options) as store:
        await asyncio.gather(*(store.create(f"/k/{i}", b"x") for i in range(1500)))

        async def more() -> None:
            for i in range(1500, 1600):
                await store.create(f"/k/{i}", b"x")

        writing = asyncio.create_task(more())
        async with store.watch("/k/", 1) as watch:
            events = []
            for _ in range(1600):
                events.append(await anext(watch))
                await asyncio.sleep(0)  # let the writer race the catch-up
            await writing
            await assert_quiet(watch)
    assert [e.revision for e in events] == list(range(1, 1601))


async def test_live_watcher_that_falls_behind_gets_watch_overflow() -> None:
    options = StoreOptions(compaction_interval_seconds=0, watch_queue_size=4)
    async with await open_store("sqlite://", options) as store:
        async with store.watch("/", 1) as watch:
            await assert_quiet(watch, 0.05)
            await asyncio.gather(*(store.create(f"/{i}", b"x") for i in range(10)))
            with pytest.raises(WatchOverflow) as info:
                await take(watch, 10)
        assert info.value.next_revision == 1


async def test_close_ends_watches_and_refuses_new_work() -> None:
    store = await open_store("sqlite://", OPTIONS)
    watch = store.watch("/", 1)
    await watch.start()
    pending = asyncio.ensure_future(store.create("/a", b"1"))
    await asyncio.sleep(0)
    await store.close()
    assert pending.result() == 1  # acknowledged work queued before close is finished
    await take(watch, 1)
    with pytest.raises(Unavailable):
        await anext(watch)
    with pytest.raises(Unavailable):
        await store.create("/b", b"1")
    with pytest.raises(Unavailable):
        await store.get("/a")


async def test_second_writer_on_one_database_is_refused(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/state.db"
    async with await open_store(url, OPTIONS):
        with pytest.raises(Unavailable, match="in use by another kubelite process"):
            await open_store(url, OPTIONS)
    async with await open_store(url, OPTIONS) as store:  # free again once the first is closed
        assert await store.current_revision() == 0


async def test_reads_do_not_wait_for_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with await open_store(f"sqlite://{path}", OPTIONS) as store:
        rev = await store.create("/a", b"1")
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # someone holds SQLite's one write lock
        try:
            got = await asyncio.wait_for(store.get("/a"), 2)
            listed = await asyncio.wait_for(store.list("/", revision=rev), 2)
            history = await asyncio.wait_for(take(store.watch("/", 1), 1), 2)
        finally:
            other.execute("ROLLBACK")
            other.close()
    assert got is not None
    assert got.mod_revision == rev
    assert len(listed.items) == 1
    assert history[0].revision == rev


async def test_prev_kv_comes_from_the_database_once_out_of_the_recent_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(writer_module, "RECENT_VALUES", 2)
    async with await open_store("sqlite://", OPTIONS) as store:
        revs = [await store.create(f"/k/{i}", f"v{i}".encode()) for i in range(5)]
        for i, rev in enumerate(revs):  # /k/0../k/2 were pushed out of the 2 kept in memory
            await store.update(f"/k/{i}", b"new", rev)
        with pytest.raises(Conflict) as info:
            await store.update("/k/0", b"stale", revs[0])
        async with store.watch("/k/", revs[-1] + 1) as watch:
            events = await take(watch, 5)
    assert [e.prev_kv.value for e in events if e.prev_kv] == [f"v{i}".encode() for i in range(5)]
    assert info.value.current.value == b"new"
