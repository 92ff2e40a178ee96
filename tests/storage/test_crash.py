"""Crash safety: a write acknowledged with durability "full" survives the writer being killed.

A child process (crash_writer.py) writes under load and prints every acknowledged write; it is
killed with SIGKILL at a random moment. After that the database must pass SQLite's
``PRAGMA integrity_check``, and the store reopened must hold every acknowledged write, at its
own revision in history, with the revision counter unbroken and new writes continuing from it.

Delays are random; each test prints its seed. Rerun one with ``KUBELITE_CRASH_SEED=<seed>`` (the
kill lands at the same delay, though thread timing still varies).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import sqlite3
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kubelite.storage import Event, EventType, KeyValue, Store, StoreOptions, open_store

pytestmark = pytest.mark.slow

WRITER = Path(__file__).with_name("crash_writer.py")
TASKS = 32
MIN_ACKS = 200  # acknowledged writes to wait for before the kill is armed
MAX_DELAY = 0.4  # seconds: the kill lands uniformly in [0, MAX_DELAY) after MIN_ACKS
STARTUP_TIMEOUT = 20.0
OPTIONS = StoreOptions(durability="full", compaction_interval_seconds=0)


@dataclass
class Acks:
    """What the child reported: every acknowledged (key, counter, revision)."""

    writes: list[tuple[str, int, int]] = field(default_factory=list)
    highest: dict[str, int] = field(default_factory=dict)  # key -> highest acked counter

    def add(self, line: str) -> None:
        word, key, counter, revision = line.split()
        assert word == "ack", f"unexpected line from the writer: {line!r}"
        self.writes.append((key, int(counter), int(revision)))
        self.highest[key] = max(self.highest.get(key, -1), int(counter))


def integrity_check(path: Path) -> list[str]:
    db = sqlite3.connect(path)
    try:
        return [row[0] for row in db.execute("PRAGMA integrity_check").fetchall()]
    finally:
        db.close()


def integrity_check_of_copy(path: Path) -> list[str]:
    """integrity_check on a copy of the database as the crash left it (file and -wal), so that
    the store itself, not this check, is the first to open and recover the original."""
    copy = path.with_name("copy-" + path.name)
    for suffix in ("", "-wal"):
        src = Path(f"{path}{suffix}")
        if src.exists():
            shutil.copyfile(src, f"{copy}{suffix}")
    try:
        return integrity_check(copy)
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)


async def run_and_kill(path: Path, rng: random.Random, acks: Acks, *writer_args: str) -> None:
    """Start the writer on ``path``, let it acknowledge MIN_ACKS writes (more when ``path``
    already holds keys), wait a random delay, SIGKILL it and collect every line it printed."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WRITER),
        str(path),
        str(TASKS),
        *writer_args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert child.stdout is not None
    assert child.stderr is not None
    stdout, stderr = child.stdout, child.stderr
    before = len(acks.writes)
    armed = asyncio.Event()

    async def read_acks() -> None:
        line = await stdout.readline()
        if line == b"ready\n":
            line = await stdout.readline()
        while line.endswith(b"\n"):  # a line cut short by the kill was never acknowledged
            acks.add(line.decode())
            if len(acks.writes) - before >= MIN_ACKS:
                armed.set()
            line = await stdout.readline()

    reader = asyncio.create_task(read_acks())
    try:
        armed_or_ended = asyncio.create_task(armed.wait())
        done, _ = await asyncio.wait(
            {armed_or_ended, reader}, timeout=STARTUP_TIMEOUT, return_when=asyncio.FIRST_COMPLETED
        )
        armed_or_ended.cancel()
        if not armed.is_set():
            child.kill()
            err = (await stderr.read()).decode(errors="replace")
            pytest.fail(
                f"writer acknowledged {len(acks.writes) - before} writes, not {MIN_ACKS}, "
                f"then {'exited' if reader in done else 'stalled'}; stderr:\n{err}"
            )
        delay = rng.uniform(0, MAX_DELAY)
        await asyncio.sleep(delay)
        assert child.returncode is None, "the writer exited before it was killed"
        child.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(child.wait(), 10) == -signal.SIGKILL
        await asyncio.wait_for(reader, 10)
        print(f"killed {delay:.3f}s after ack {before + MIN_ACKS}: {len(acks.writes)} acks")
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
        reader.cancel()


async def verify(path: Path, acks: Acks) -> None:
    """Check the reopened store against every acknowledged write, then write once more."""
    assert integrity_check_of_copy(path) == ["ok"]
    store = await open_store(f"sqlite://{path}", OPTIONS)
    try:
        current = await store.current_revision()
        assert current >= max(rev for _, _, rev in acks.writes)

        # Every acknowledged write is in history, at the revision it was acknowledged with.
        for key, counter, rev in acks.writes:
            kv = await store.get(key, revision=rev)
            assert kv is not None, f"acknowledged write {key}={counter} @{rev} is gone"
            assert (kv.value, kv.mod_revision) == (str(counter).encode(), rev)

        # Each key's task has at most one unacknowledged write in flight, so the stored counter
        # is the highest acknowledged one or the next.
        live = {kv.key: kv for kv in (await store.list("/crash/")).items}
        for key, highest in acks.highest.items():
            assert key in live, f"{key} (acked up to {highest}) is not live"
            assert int(live[key].value) in (highest, highest + 1), (key, highest, live[key])
        assert len(live) <= TASKS
        unacked = sum(int(live[k].value) - acks.highest.get(k, -1) for k in live)
        print(f"current revision {current}; {unacked} unacknowledged writes landed")

        # History has no gap: revisions 1..current, each key's counter rising by one per write.
        events = await read_history(store, current)
        assert [e.revision for e in events] == list(range(1, current + 1))
        seen: dict[str, list[int]] = defaultdict(list)
        for e in events:
            assert e.type is EventType.PUT
            seen[e.kv.key].append(int(e.kv.value))
        for key, counters in seen.items():
            assert counters == list(range(len(counters))), key
            assert counters[-1] == int(live[key].value)

        # The reopened store goes on writing from where the crash left it: the next counter of
        # one key, recorded as acknowledged so that a later writer run continues the sequence.
        key = next(iter(live))
        kv = live[key]
        counter = int(kv.value) + 1
        rev = await store.update(key, str(counter).encode(), kv.mod_revision)
        assert rev == current + 1
        assert await store.current_revision() == current + 1
        assert await store.get(key) == KeyValue(
            key, str(counter).encode(), kv.create_revision, rev, kv.version + 1
        )
        acks.add(f"ack {key} {counter} {rev}")
    finally:
        await store.close()
    assert integrity_check(path) == ["ok"]


async def read_history(store: Store, current: int) -> list[Event]:
    events: list[Event] = []
    async with store.watch("", 1) as watch:
        while len(events) < current:
            events.append(await asyncio.wait_for(anext(watch), 5))
    return events


def seeded_rng(case: int) -> random.Random:
    seed = int(os.environ.get("KUBELITE_CRASH_SEED", random.SystemRandom().randrange(2**32)))
    print(f"case {case}: KUBELITE_CRASH_SEED={seed}")
    return random.Random(seed)


@pytest.mark.parametrize("case", range(6))
async def test_acknowledged_writes_survive_sigkill(tmp_path: Path, case: int) -> None:
    """Kill a fresh writer at a random moment; every write it acknowledged is in the reopened
    store, history is unbroken, integrity_check is ok and the next write gets current + 1."""
    rng = seeded_rng(case)
    path = tmp_path / "state.db"
    acks = Acks()
    await run_and_kill(path, rng, acks)
    await verify(path, acks)


async def test_repeated_crashes_of_one_database(tmp_path: Path) -> None:
    """Crash the same database three times in a row: each writer recovers what the last one
    left, and every write acknowledged by any of them survives all later crashes."""
    rng = seeded_rng(-1)
    path = tmp_path / "state.db"
    acks = Acks()
    for _ in range(3):
        await run_and_kill(path, rng, acks)
        await verify(path, acks)


async def test_acknowledged_writes_keep_their_history_rows_through_sigkill(tmp_path: Path) -> None:
    """With a history retention policy, each write's history row is in the write's own
    transaction: after a SIGKILL every acknowledged write has its row (value and revision), and
    the rows are exactly the committed writes, no more (docs/guarantees.md, revision history)."""
    rng = seeded_rng(-2)
    path = tmp_path / "state.db"
    acks = Acks()
    await run_and_kill(path, rng, acks, "history")
    assert integrity_check_of_copy(path) == ["ok"]
    store = await open_store(f"sqlite://{path}", OPTIONS)
    try:
        current = await store.current_revision()
        live = [kv.key for kv in (await store.list("/crash/")).items]
        kept = {key: await store.history(key) for key in live}
        for key, counter, rev in acks.writes:
            rows = {e.revision: e.value for e in kept[key]}
            assert rows.get(rev) == str(counter).encode(), f"{key}={counter} @{rev} has no row"
        committed = [(e.kv.key, e.revision, e.kv.value) for e in await read_history(store, current)]
        rows = sorted(
            ((e.key, e.revision, e.value) for entries in kept.values() for e in entries),
            key=lambda row: row[1],
        )
        assert rows == committed
    finally:
        await store.close()
