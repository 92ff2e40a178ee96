"""The single writer: group commit, revision allocation, compare-and-swap, compaction steps.

One thread owns the only write connection. It sleeps until a write is queued, then takes every
write waiting at that moment (up to ``MAX_BATCH``) into one transaction:

1. ``BEGIN IMMEDIATE``.
2. For each write, in queue order: check its precondition (absent for create; mod_revision ==
   expected for update and delete) against the writer's in-memory index of live keys, which is
   exact because no one else writes. A write that fails its check is answered with its own error
   and writes nothing; its batch-mates go on. A write that passes takes the next revision and
   updates the index.
3. Write the batch's ``log`` rows and move ``live`` to match the index (one statement per kind
   of change), read the values the batch replaced (for ``prev_kv``) in one query, add a
   ``history`` row for each write of a key a retention policy keeps (and prune that key to its
   count limit), then ``COMMIT`` (fsync with synchronous=FULL).
4. Hand the batch's results and events to the event loop in one ``call_soon_threadsafe``: watchers
   get the events, then every caller gets its answer. Nothing is acknowledged before step 3.

Revisions are allocated inside the transaction by the only writer, so commit order is revision
order, with no gaps. If the transaction fails, it is rolled back, the revision counter and the
index are rewound and every write in the batch is answered ``Unavailable``.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import fcntl
import logging
import queue
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, NamedTuple

from kubelite.storage.errors import (
    Compacted,
    Conflict,
    FutureRevision,
    KeyExists,
    NotFound,
    StorageError,
    Unavailable,
)
from kubelite.storage.interface import Event, EventType, KeyValue, Retention
from kubelite.storage.sqlite.connection import Synchronous, connect
from kubelite.storage.sqlite.reader import prefix_end
from kubelite.storage.sqlite.schema import SCHEMA_VERSION, migrate

log = logging.getLogger(__name__)

MAX_BATCH = 1024
RECENT_VALUES = 4096  # values kept in memory for the next events' prev_kv
COMPACT_WINDOW = 2048  # revisions examined per compaction step: each step is one short transaction


class OpKind(enum.Enum):
    CREATE = enum.auto()
    UPDATE = enum.auto()
    DELETE = enum.auto()
    COMPACT_BEGIN = enum.auto()
    COMPACT_STEP = enum.auto()
    CHECKPOINT = enum.auto()
    PRUNE_HISTORY = enum.auto()
    STOP = enum.auto()


@dataclass(slots=True)
class Op:
    kind: OpKind
    future: asyncio.Future[object]
    key: str = ""
    value: bytes = b""
    expected: int | None = None  # mod_revision for update/delete; target for COMPACT_BEGIN
    at: float = 0.0  # PRUNE_HISTORY: the wall-clock time ages are measured from
    result: object = field(default=None)
    error: StorageError | None = None


# Called on the event loop after each commit: (ops answered, events, store revision, compacted).
CommitCallback = Callable[[list[Op], list[Event], int, int], None]


class _Entry(NamedTuple):
    """What the writer keeps in memory about a live key: all it needs to check a write."""

    create_revision: int
    mod_revision: int
    version: int


class _Written(NamedTuple):
    """A write done in the current transaction, waiting for its event to be built."""

    op: Op
    type: EventType
    kv: KeyValue
    prev: _Entry | None


_INSERT_LOG = (
    "INSERT INTO log (revision, key, value, create_revision, prev_revision, version, deleted)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_UPSERT_LIVE = (
    "INSERT INTO live (key, revision) VALUES (?, ?)"
    " ON CONFLICT (key) DO UPDATE SET revision = excluded.revision"
)
_VALUES_AT = "SELECT revision, value FROM log WHERE revision IN ({})"
_INSERT_HISTORY = (
    "INSERT INTO history (key, revision, create_revision, value, time, deleted)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
# Everything of the key older than its ``max_versions`` newest rows.
_PRUNE_COUNT = (
    "DELETE FROM history WHERE key = ? AND revision <= (SELECT revision FROM history"
    " WHERE key = ? ORDER BY revision DESC LIMIT 1 OFFSET ?)"
)
_IN_CHUNK = 500


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
    """The only writer of a database. ``revision``, ``compacted`` and ``compact_done`` are read
    on the writer thread and, once a commit is handed over, on the event loop."""

    def __init__(
        self,
        path: str,
        synchronous: Synchronous,
        retention: Mapping[str, Retention] | None = None,
    ) -> None:
        self._retention = list((retention or {}).items())
        self._lock_file = _lock_exclusively(path)
        try:
            self._db = connect(path, synchronous=synchronous)
            found = migrate(self._db)
            meta = dict(self._db.execute("SELECT name, value FROM meta").fetchall())
            newest = self._db.execute("SELECT coalesce(max(revision), 0) FROM log").fetchone()[0]
            # The only writer keeps every live key's revisions in memory, so checking a write
            # costs no query (a few dozen bytes per key).
            self._index = {
                key: _Entry(*entry)
                for key, *entry in self._db.execute(
                    "SELECT v.key, l.create_revision, l.revision, l.version"
                    " FROM live v JOIN log l ON l.revision = v.revision"
                )
            }
        except BaseException:
            self._lock_file.close()
            raise
        if 0 < found < SCHEMA_VERSION:
            log.info("migrated %s from schema version %d to %d", path, found, SCHEMA_VERSION)
        # meta.revision is written when compaction starts (compaction may remove the newest
        # rows); otherwise the newest log row carries the store revision.
        self.revision: int = max(meta["revision"], newest)
        self.compacted: int = meta["compacted"]
        self.compact_done: int = meta["compact_done"]
        self._recent: OrderedDict[int, bytes] = OrderedDict()  # revision -> value, bounded
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

    def alive(self) -> bool:
        return self._thread.is_alive()

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
        self._undo: dict[str, _Entry | None] = {}
        self._rows: list[tuple[object, ...]] = []
        self._values: dict[int, bytes] = {}  # revision -> value written in this batch
        written: list[_Written] = []
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for op in batch:
                try:
                    self._apply(op, written)
                except StorageError as exc:
                    op.error = exc
            self._flush()
            if (self.compacted, self.compact_done) != saved[1:]:
                self._db.executemany(
                    "UPDATE meta SET value = ? WHERE name = ?",
                    [
                        (self.revision, "revision"),
                        (self.compacted, "compacted"),
                        (self.compact_done, "compact_done"),
                    ],
                )
            events = self._events(written)
            if self._retention and events:
                self._keep_history(events)
            self._db.execute("COMMIT")
            self._remember(self._values)
        except Exception as exc:  # an I/O error, or a bug: fail the batch, keep the writer
            log.exception("write transaction failed")
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already
                    self._db.execute("ROLLBACK")
            self.revision, self.compacted, self.compact_done = saved
            for key, entry in self._undo.items():
                if entry is None:
                    self._index.pop(key, None)
                else:
                    self._index[key] = entry
            for op in batch:
                op.error, op.result = Unavailable(f"write failed: {exc}"), None
            return []
        return events

    def _apply(self, op: Op, written: list[_Written]) -> None:
        kind = op.kind
        if kind is OpKind.UPDATE:
            self._update(op, written)
        elif kind is OpKind.CREATE:
            self._create(op, written)
        elif kind is OpKind.DELETE:
            self._delete(op, written)
        elif kind is OpKind.COMPACT_BEGIN:
            self._compact_begin(op)
        elif kind is OpKind.COMPACT_STEP:
            self._compact_step(op)
        elif kind is OpKind.PRUNE_HISTORY:
            self._prune_history(op)

    def _events(self, written: list[_Written]) -> list[Event]:
        """Build the batch's events, reading every replaced value in one query per chunk."""
        values, recent = self._values, self._recent
        for w in written:
            if w.prev is not None and w.prev.mod_revision in recent:
                values[w.prev.mod_revision] = recent[w.prev.mod_revision]
        prev_revisions = [
            w.prev.mod_revision
            for w in written
            if w.prev is not None and w.prev.mod_revision not in values
        ]
        for i in range(0, len(prev_revisions), _IN_CHUNK):
            chunk = prev_revisions[i : i + _IN_CHUNK]
            values.update(
                self._db.execute(_VALUES_AT.format(",".join("?" * len(chunk))), chunk).fetchall()
            )
        events = []
        for op, type_, kv, prev in written:
            prev_kv = None
            if prev is not None:
                prev_kv = KeyValue(kv.key, values[prev.mod_revision], *prev)
            if type_ is EventType.DELETE:
                assert prev_kv is not None
                op.result = (kv.mod_revision, prev_kv)
            events.append(Event(type_, kv, prev_kv))
        return events

    # -- history kept by a retention policy: in the transaction of the writes it records -------

    def _retained(self, key: str) -> Retention | None:
        for prefix, retention in self._retention:
            if key.startswith(prefix):
                return retention
        return None

    def _keep_history(self, events: list[Event]) -> None:
        """A ``history`` row for each write of a retained key (a deletion keeps the value it
        deleted), then each such key cut back to its policy's count."""
        now = time.time()
        rows: list[tuple[object, ...]] = []
        counted: dict[str, int] = {}
        for event in events:
            key = event.kv.key
            retention = self._retained(key)
            if retention is None:
                continue
            kv, prev = event.kv, event.prev_kv
            if event.type is EventType.DELETE:
                assert prev is not None
                rows.append((key, kv.mod_revision, prev.create_revision, prev.value, now, 1))
            else:
                rows.append((key, kv.mod_revision, kv.create_revision, kv.value, now, 0))
            if retention.max_versions is not None:
                counted[key] = retention.max_versions
        if rows:
            self._db.executemany(_INSERT_HISTORY, rows)
        if counted:
            self._db.executemany(_PRUNE_COUNT, [(k, k, n) for k, n in counted.items()])

    def _prune_history(self, op: Op) -> None:
        """Drop the rows older than their prefix's age limit, measured from ``op.at``."""
        removed = 0
        for prefix, retention in self._retention:
            if retention.max_age_seconds is None:
                continue
            where = "key >= ? AND key < ?"
            end = prefix_end(prefix)
            args: list[object] = [prefix, end]
            if end is None:
                where, args = "key >= ?", [prefix]
            cursor = self._db.execute(
                f"DELETE FROM history WHERE {where} AND time < ?",
                [*args, op.at - retention.max_age_seconds],
            )
            removed += cursor.rowcount
        op.result = removed

    def _remember(self, values: dict[int, bytes]) -> None:
        """Keep the latest values written: the next write to a key usually replaces one of them,
        and its event needs that value as ``prev_kv``."""
        recent = self._recent
        recent.update(values)
        while len(recent) > RECENT_VALUES:
            recent.popitem(last=False)

    def _flush(self) -> None:
        """Write the batch's log rows, then move ``live`` to where the index ended up: one
        statement per kind of change for the whole batch, whatever order the writes came in."""
        if not self._rows:
            return
        self._db.executemany(_INSERT_LOG, self._rows)
        index = self._index
        moved = [(key, index[key].mod_revision) for key in self._undo if key in index]
        gone = [(key,) for key in self._undo if key not in index]
        if moved:
            self._db.executemany(_UPSERT_LIVE, moved)
        if gone:
            self._db.executemany("DELETE FROM live WHERE key = ?", gone)

    def _set(self, key: str, entry: _Entry | None) -> None:
        if key not in self._undo:
            self._undo[key] = self._index.get(key)
        if entry is None:
            del self._index[key]
        else:
            self._index[key] = entry

    def _current(self, key: str, entry: _Entry) -> KeyValue:
        """The live value of a key, for the error that reports it."""
        rev = entry.mod_revision
        value = self._values[rev] if rev in self._values else self._recent.get(rev)
        if value is None:
            value = self._db.execute("SELECT value FROM log WHERE revision = ?", (rev,)).fetchone()[
                0
            ]
        return KeyValue(key, value, *entry)

    def _checked(self, op: Op) -> _Entry:
        entry = self._index.get(op.key)
        if entry is None:
            raise NotFound(op.key)
        if op.expected is not None and entry.mod_revision != op.expected:
            raise Conflict(op.key, op.expected, self._current(op.key, entry))
        return entry

    def _create(self, op: Op, written: list[_Written]) -> None:
        key = op.key
        entry = self._index.get(key)
        if entry is not None:
            raise KeyExists(key, self._current(key, entry))
        rev = self.revision + 1
        self._rows.append((rev, key, op.value, rev, 0, 1, 0))
        self._values[rev] = op.value
        self.revision = rev
        self._set(key, _Entry(rev, rev, 1))
        written.append(_Written(op, EventType.PUT, KeyValue(key, op.value, rev, rev, 1), None))
        op.result = rev

    def _update(self, op: Op, written: list[_Written]) -> None:
        key = op.key
        prev = self._checked(op)
        rev = self.revision + 1
        create, version = prev.create_revision, prev.version + 1
        self._rows.append((rev, key, op.value, create, prev.mod_revision, version, 0))
        self._values[rev] = op.value
        self.revision = rev
        self._set(key, _Entry(create, rev, version))
        written.append(
            _Written(op, EventType.PUT, KeyValue(key, op.value, create, rev, version), prev)
        )
        op.result = rev

    def _delete(self, op: Op, written: list[_Written]) -> None:
        key = op.key
        prev = self._checked(op)
        rev = self.revision + 1
        self._rows.append(
            (rev, key, None, prev.create_revision, prev.mod_revision, prev.version + 1, 1)
        )
        self.revision = rev
        self._set(key, None)
        written.append(_Written(op, EventType.DELETE, KeyValue(key, b"", 0, rev, 0), prev))

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
