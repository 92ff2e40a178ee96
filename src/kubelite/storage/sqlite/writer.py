"""The single writer: group commit, revision allocation, compare-and-swap, compaction steps.

One thread owns the only write connection. It sleeps until a write is queued, then takes every
write waiting at that moment (up to ``MAX_BATCH``) into one transaction:

1. ``BEGIN IMMEDIATE``.
2. For each write, in queue order: read the key's live row, check the write's precondition
   (absent for create; mod_revision == expected for update and delete). A write that fails its
   check is answered with its own error and writes nothing; its batch-mates go on. A write that
   passes takes the next revision, appends its ``log`` row and moves ``live``.
3. Record the last revision in ``meta`` and ``COMMIT`` (fsync with synchronous=FULL).
4. Hand the batch's results and events to the event loop in one ``call_soon_threadsafe``: watchers
   get the events, then every caller gets its answer. Nothing is acknowledged before step 3.

Revisions are allocated inside the transaction by the only writer, so commit order is revision
order, with no gaps. If the transaction fails, it is rolled back, the revision counter is rewound
and every write in the batch is answered ``Unavailable``.
"""

from __future__ import annotations

import asyncio
import enum
import fcntl
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from kubelite.storage.errors import (
    Compacted,
    Conflict,
    FutureRevision,
    KeyExists,
    NotFound,
    StorageError,
    Unavailable,
)
from kubelite.storage.interface import Event, EventType, KeyValue
from kubelite.storage.sqlite.connection import Synchronous, connect
from kubelite.storage.sqlite.schema import SCHEMA_VERSION, migrate

log = logging.getLogger(__name__)

MAX_BATCH = 1024
COMPACT_WINDOW = 2048  # revisions examined per compaction step: each step is one short transaction


class OpKind(enum.Enum):
    CREATE = enum.auto()
    UPDATE = enum.auto()
    DELETE = enum.auto()
    COMPACT_BEGIN = enum.auto()
    COMPACT_STEP = enum.auto()
    CHECKPOINT = enum.auto()
    STOP = enum.auto()


@dataclass(slots=True)
class Op:
    kind: OpKind
    future: asyncio.Future[object]
    key: str = ""
    value: bytes = b""
    expected: int | None = None  # mod_revision for update/delete; target for COMPACT_BEGIN
    result: object = field(default=None)
    error: StorageError | None = None


# Called on the event loop after each commit: (ops answered, events, store revision, compacted).
CommitCallback = Callable[[list[Op], list[Event], int, int], None]

_SELECT_LIVE = (
    "SELECT l.revision, l.create_revision, l.version, l.value "
    "FROM live v JOIN log l ON l.revision = v.revision WHERE v.key = ?"
)


def _lock_exclusively(path: str) -> IO[bytes]:
    """Hold ``<path>.lock`` for as long as this writer lives: two writers on one database would
    each allocate revisions on their own. The kernel releases the lock if the process dies."""
    lock_file = open(f"{path}.lock", "wb")  # noqa: SIM115 - closed when the writer stops
    try:
        fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock_file.close()
        raise Unavailable(f"database {path} is in use by another kubelite process") from None
    return lock_file


class Writer:
    def __init__(self, path: str, synchronous: Synchronous) -> None:
        self._lock_file = _lock_exclusively(path)
        try:
            self._db = connect(path, synchronous=synchronous)
            found = migrate(self._db)
            meta = dict(self._db.execute("SELECT name, value FROM meta").fetchall())
        except BaseException:
            self._lock_file.close()
            raise
        if 0 < found < SCHEMA_VERSION:
            log.info("migrated %s from schema version %d to %d", path, found, SCHEMA_VERSION)
        self.revision: int = meta["revision"]
        self.compacted: int = meta["compacted"]
        self.compact_done: int = meta["compact_done"]
        self._queue: queue.SimpleQueue[Op] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._run, name="kubelite-sqlite-writer", daemon=True
        )

    def start(self, loop: asyncio.AbstractEventLoop, on_commit: CommitCallback) -> None:
        """Start writing; each commit is reported by ``on_commit`` on ``loop``."""
        self._loop = loop
        self._on_commit = on_commit
        self._thread.start()

    def submit(self, op: Op) -> None:
        self._queue.put(op)

    def join(self) -> None:
        self._thread.join()

    # -- the writer thread ------------------------------------------------------------------

    def _run(self) -> None:
        running = True
        while running:
            batch = [self._queue.get()]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            running = all(op.kind is not OpKind.STOP for op in batch)
            events = self._commit(batch)
            self._checkpoint_if_asked(batch)
            try:
                self._loop.call_soon_threadsafe(
                    self._on_commit, batch, events, self.revision, self.compacted
                )
            except RuntimeError:  # the loop is gone: nobody is waiting any more
                running = False
        self._db.close()
        self._lock_file.close()

    def _commit(self, batch: list[Op]) -> list[Event]:
        saved = (self.revision, self.compacted, self.compact_done)
        events: list[Event] = []
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for op in batch:
                try:
                    self._apply(op, events)
                except StorageError as exc:
                    op.error = exc
            if (self.revision, self.compacted, self.compact_done) != saved:
                self._db.executemany(
                    "UPDATE meta SET value = ? WHERE name = ?",
                    [
                        (self.revision, "revision"),
                        (self.compacted, "compacted"),
                        (self.compact_done, "compact_done"),
                    ],
                )
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            log.error("write transaction failed: %s", exc)
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            self.revision, self.compacted, self.compact_done = saved
            for op in batch:
                op.error, op.result = Unavailable(f"write failed: {exc}"), None
            return []
        return events

    def _apply(self, op: Op, events: list[Event]) -> None:
        kind = op.kind
        if kind is OpKind.CREATE:
            self._create(op, events)
        elif kind is OpKind.UPDATE:
            self._update(op, events)
        elif kind is OpKind.DELETE:
            self._delete(op, events)
        elif kind is OpKind.COMPACT_BEGIN:
            self._compact_begin(op)
        elif kind is OpKind.COMPACT_STEP:
            self._compact_step(op)

    def _live(self, key: str) -> KeyValue | None:
        row = self._db.execute(_SELECT_LIVE, (key,)).fetchone()
        if row is None:
            return None
        return KeyValue(key, row[3], row[1], row[0], row[2])

    def _append(self, key: str, value: bytes | None, prev: KeyValue | None) -> int:
        rev = self.revision + 1
        create = prev.create_revision if prev else rev
        version = prev.version + 1 if prev else 1
        self._db.execute(
            "INSERT INTO log (revision, key, value, create_revision, prev_revision, version,"
            " deleted) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rev, key, value, create, prev.mod_revision if prev else 0, version, value is None),
        )
        self.revision = rev
        return rev

    def _create(self, op: Op, events: list[Event]) -> None:
        current = self._live(op.key)
        if current is not None:
            raise KeyExists(op.key, current)
        rev = self._append(op.key, op.value, None)
        self._db.execute("INSERT INTO live (key, revision) VALUES (?, ?)", (op.key, rev))
        events.append(Event(EventType.PUT, KeyValue(op.key, op.value, rev, rev, 1), None))
        op.result = rev

    def _checked_live(self, op: Op) -> KeyValue:
        current = self._live(op.key)
        if current is None:
            raise NotFound(op.key)
        if op.expected is not None and current.mod_revision != op.expected:
            raise Conflict(op.key, op.expected, current)
        return current

    def _update(self, op: Op, events: list[Event]) -> None:
        prev = self._checked_live(op)
        rev = self._append(op.key, op.value, prev)
        self._db.execute("UPDATE live SET revision = ? WHERE key = ?", (rev, op.key))
        kv = KeyValue(op.key, op.value, prev.create_revision, rev, prev.version + 1)
        events.append(Event(EventType.PUT, kv, prev))
        op.result = rev

    def _delete(self, op: Op, events: list[Event]) -> None:
        prev = self._checked_live(op)
        rev = self._append(op.key, None, prev)
        self._db.execute("DELETE FROM live WHERE key = ?", (op.key,))
        events.append(Event(EventType.DELETE, KeyValue(op.key, b"", 0, rev, 0), prev))
        op.result = (rev, prev)

    # -- compaction: one short transaction per step, queued between ordinary writes ---------

    def _compact_begin(self, op: Op) -> None:
        target = op.expected
        assert target is not None
        if target <= self.compacted:
            raise Compacted(target, self.compacted)
        if target > self.revision:
            raise FutureRevision(target, self.revision)
        self.compacted = target
        op.result = target

    def _compact_step(self, op: Op) -> None:
        """Forget history in the next window of revisions up to the compacted revision.

        A row is dropped once a newer row of the same key at or below the compacted revision
        exists (found through that newer row's ``prev_revision``), and a deletion row once it is
        at or below the compacted revision. The latest row of each key at the compacted revision
        stays, so reads at that revision still see everything."""
        lo, hi = self.compact_done, min(self.compact_done + COMPACT_WINDOW, self.compacted)
        if hi > lo:
            self._db.execute(
                "DELETE FROM log WHERE revision IN (SELECT prev_revision FROM log "
                "WHERE revision > ? AND revision <= ? AND prev_revision > 0)",
                (lo, hi),
            )
            self._db.execute(
                "DELETE FROM log WHERE revision > ? AND revision <= ? AND deleted = 1", (lo, hi)
            )
            self.compact_done = hi
        op.result = self.compact_done >= self.compacted

    def _checkpoint_if_asked(self, batch: list[Op]) -> None:
        # Outside any transaction. PASSIVE never waits for readers, so it never stalls writes;
        # journal_size_limit then cuts the -wal file back when SQLite next resets it.
        for op in batch:
            if op.kind is OpKind.CHECKPOINT:
                try:
                    op.result = self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error as exc:
                    op.error = Unavailable(f"checkpoint failed: {exc}")
