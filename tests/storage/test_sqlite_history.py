"""Revision history beyond compaction (SQLite): a retention policy per key prefix keeps a row
per write of a retained key, in the write's own transaction; count limits are applied in that
transaction, age limits by a pruning step; compaction never touches the rows."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import pytest

from kubelite.storage import NotFound, Retention, StoreOptions, open_store
from kubelite.storage.sqlite import SqliteStore
from kubelite.storage.testing import OPTIONS

DAY = 86400.0


def options(**policy: Retention) -> StoreOptions:
    """OPTIONS with a policy on ``/<name>/`` for each keyword."""
    return replace(OPTIONS, history_retention={f"/{k}/": v for k, v in policy.items()})


async def sqlite_store(path: Path, opts: StoreOptions) -> SqliteStore:
    store = await open_store(f"sqlite://{path}", opts)
    assert isinstance(store, SqliteStore)
    return store


async def test_every_write_of_a_retained_key_is_kept_in_order(tmp_path: Path) -> None:
    async with await sqlite_store(tmp_path / "s.db", options(cm=Retention(max_versions=10))) as s:
        r1 = await s.create("/cm/a", b"1")
        r2 = await s.update("/cm/a", b"2", r1)
        r3, _ = await s.delete("/cm/a", r2)
        r4 = await s.create("/cm/a", b"3")  # a new incarnation continues the same timeline
        kept = await s.history("/cm/a")
    assert [(e.revision, e.value, e.deleted) for e in kept] == [
        (r1, b"1", False),
        (r2, b"2", False),
        (r3, b"2", True),  # a deletion keeps the value it deleted
        (r4, b"3", False),
    ]
    assert all(e.key == "/cm/a" for e in kept)
    assert [e.create_revision for e in kept] == [r1, r1, r1, r4]
    assert kept[0].time <= kept[-1].time


async def test_keys_outside_every_retained_prefix_keep_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with await sqlite_store(path, options(cm=Retention(max_versions=10))) as s:
        r = await s.create("/other/a", b"1")
        await s.update("/other/a", b"2", r)
        await s.create("/cmx/a", b"1")  # shares the prefix's text but not its slash
        assert await s.history("/other/a") == []
        assert await s.history("/cmx/a") == []
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM history").fetchone()[0] == 0


async def test_no_policy_keeps_nothing(tmp_path: Path) -> None:
    async with await sqlite_store(tmp_path / "s.db", OPTIONS) as s:
        await s.create("/cm/a", b"1")
        assert await s.history("/cm/a") == []


async def test_failed_writes_keep_nothing(tmp_path: Path) -> None:
    async with await sqlite_store(tmp_path / "s.db", options(cm=Retention(max_versions=10))) as s:
        r1 = await s.create("/cm/a", b"1")
        with pytest.raises(NotFound):
            await s.update("/cm/b", b"x", 1)
        with pytest.raises(Exception, match="modified"):
            await s.update("/cm/a", b"x", r1 + 5)
        assert [e.revision for e in await s.history("/cm/a")] == [r1]
        assert await s.history("/cm/b") == []


async def test_count_limit_keeps_the_newest_versions_per_key(tmp_path: Path) -> None:
    async with await sqlite_store(tmp_path / "s.db", options(cm=Retention(max_versions=3))) as s:
        rev = await s.create("/cm/a", b"0")
        other = await s.create("/cm/b", b"0")
        for i in range(1, 6):
            rev = await s.update("/cm/a", str(i).encode(), rev)
        assert [e.value for e in await s.history("/cm/a")] == [b"3", b"4", b"5"]
        assert [e.revision for e in await s.history("/cm/b")] == [other]  # per key


async def test_count_limit_holds_within_one_group_commit(tmp_path: Path) -> None:
    """Writes of one key queued together (one transaction, most likely) are cut back
    together, whatever the batching."""
    async with await sqlite_store(tmp_path / "s.db", options(cm=Retention(max_versions=2))) as s:
        now = await s.current_revision()
        await asyncio.gather(
            s.create("/cm/a", b"0"),
            s.update("/cm/a", b"1", now + 1),
            s.update("/cm/a", b"2", now + 2),
        )
        assert [e.value for e in await s.history("/cm/a")] == [b"1", b"2"]


async def test_age_limit_drops_versions_older_than_it(tmp_path: Path) -> None:
    opts = options(cm=Retention(max_age_seconds=7 * DAY), deploy=Retention(max_versions=5))
    async with await sqlite_store(tmp_path / "s.db", opts) as s:
        r = await s.create("/cm/a", b"1")
        await s.update("/cm/a", b"2", r)
        await s.create("/deploy/a", b"1")
        written = time.time()
        assert await s.prune_history(now=written + 6 * DAY) == 0
        assert len(await s.history("/cm/a")) == 2
        assert await s.prune_history(now=written + 8 * DAY) == 2
        assert await s.history("/cm/a") == []
        assert len(await s.history("/deploy/a")) == 1  # a count-only policy has no age


async def test_kept_versions_survive_compaction(tmp_path: Path) -> None:
    async with await sqlite_store(tmp_path / "s.db", options(cm=Retention(max_versions=10))) as s:
        r1 = await s.create("/cm/a", b"1")
        r2 = await s.update("/cm/a", b"2", r1)
        r3, _ = await s.delete("/cm/a", r2)
        await s.create("/cm/pad", b"x")
        await s.compact(r3 + 1)
        assert await s.get("/cm/a") is None
        assert [(e.revision, e.value) for e in await s.history("/cm/a")] == [
            (r1, b"1"),
            (r2, b"2"),
            (r3, b"2"),
        ]


async def test_kept_versions_are_durable_with_their_writes(tmp_path: Path) -> None:
    """An acknowledged write's history row is committed in the write's transaction: it is
    there after the store is reopened, and after a restart without the policy."""
    path = tmp_path / "s.db"
    async with await sqlite_store(path, options(cm=Retention(max_versions=10))) as s:
        r1 = await s.create("/cm/a", b"1")
        r2 = await s.update("/cm/a", b"2", r1)
    async with await sqlite_store(path, OPTIONS) as s:
        assert [e.revision for e in await s.history("/cm/a")] == [r1, r2]


def test_overlapping_prefixes_are_refused() -> None:
    with pytest.raises(ValueError, match="overlap"):
        StoreOptions(history_retention={"/a/": Retention(1), "/a/b/": Retention(2)})
    with pytest.raises(ValueError, match="at least 1"):
        Retention(max_versions=0)
