"""Reads: point gets, range lists, history pages and kept versions, each in one WAL snapshot.

Reads run on their own connections in a small thread pool, so they never wait for the writer (a
WAL reader sees the last commit before it began and takes no lock the writer needs). Everything
that must agree (the store revision, the compacted revision and the rows) is read inside one
``BEGIN ... COMMIT``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from kubelite.storage.errors import Compacted, FutureRevision
from kubelite.storage.interface import Event, EventType, HistoryEntry, KeyValue, ListResult
from kubelite.storage.sqlite.connection import connect

_LIVE_COLUMNS = "l.key, l.value, l.create_revision, l.revision, l.version"
# The store revision is the newest log row's, or meta's if compaction removed newer rows.
_SNAPSHOT_REVISIONS = (
    "SELECT max((SELECT value FROM meta WHERE name = 'revision'),"
    " coalesce((SELECT max(revision) FROM log), 0)),"
    " (SELECT value FROM meta WHERE name = 'compacted')"
)


def prefix_end(prefix: str) -> str | None:
    """The smallest string above every string that starts with ``prefix`` (None: no bound).

    SQLite compares TEXT as UTF-8 bytes, whose order is code point order, so bumping the last
    code point gives the bound."""
    chars = list(prefix)
    while chars:
        last = ord(chars[-1])
        if last < 0x10FFFF:
            chars[-1] = chr(last + 1 + (0x800 if 0xD7FF <= last < 0xE000 else 0))
            return "".join(chars)
        chars.pop()
    return None


def _key_range(column: str, prefix: str, start_after: str | None) -> tuple[list[str], list[object]]:
    where: list[str] = []
    args: list[object] = []
    if prefix:
        where.append(f"{column} >= ?")
        args.append(prefix)
        end = prefix_end(prefix)
        if end is not None:
            where.append(f"{column} < ?")
            args.append(end)
    if start_after is not None:
        where.append(f"{column} > ?")
        args.append(start_after)
    return where, args


def _live_keys(
    at: int | None, prefix: str, start_after: str | None, *, values: bool = True
) -> tuple[str, list[object], str]:
    """The ``FROM ... WHERE ...`` of the keys under ``prefix`` after ``start_after`` that are
    live now (``at`` None: the ``live`` table, joined to ``log`` for the values) or at revision
    ``at`` (per key, its newest ``log`` row at or below it, unless that is a deletion), its
    arguments, and the key column to order by. Lists and counts share it, so they agree."""
    if at is None:
        where, args = _key_range("v.key", prefix, start_after)
        source = "live v JOIN log l ON l.revision = v.revision" if values else "live v"
        key = "v.key"
    else:
        where, args = _key_range("l.key", prefix, start_after)
        where += [
            "l.revision = (SELECT MAX(h.revision) FROM log h "
            "WHERE h.key = l.key AND h.revision <= ?)",
            "l.deleted = 0",
        ]
        args.append(at)
        source = "log l"
        key = "l.key"
    body = f" FROM {source}"
    if where:
        body += " WHERE " + " AND ".join(where)
    return body, args, key


def _count_after(db: sqlite3.Connection, at: int | None, prefix: str, last_key: str) -> int:
    """How many keys under ``prefix`` follow ``last_key``, live now or at ``at``."""
    body, args, _ = _live_keys(at, prefix, last_key, values=False)
    (n,) = db.execute(f"SELECT count(*){body}", args).fetchone()
    return int(n)


class Reader:
    def __init__(self, path: str) -> None:
        self._path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = connect(self._path)
            db.execute("PRAGMA query_only = ON")
            self._local.db = db
            with self._lock:
                self._all.append(db)
        return db

    def close(self) -> None:
        with self._lock:
            for db in self._all:
                db.close()
            self._all.clear()

    @contextmanager
    def _snapshot(self) -> Iterator[tuple[sqlite3.Connection, int, int]]:
        db = self._db()
        db.execute("BEGIN")
        try:
            current, compacted = db.execute(_SNAPSHOT_REVISIONS).fetchone()
            yield db, current, compacted
        finally:
            db.execute("COMMIT")

    @staticmethod
    def _check(revision: int, current: int, compacted: int) -> None:
        if revision < compacted:
            raise Compacted(revision, compacted)
        if revision > current:
            raise FutureRevision(revision, current)

    def get(self, key: str, revision: int | None) -> KeyValue | None:
        if not revision:
            row = (
                self._db()
                .execute(
                    f"SELECT {_LIVE_COLUMNS} FROM live v JOIN log l ON l.revision = v.revision "
                    "WHERE v.key = ?",
                    (key,),
                )
                .fetchone()
            )
            return KeyValue(*row) if row else None
        with self._snapshot() as (db, current, compacted):
            self._check(revision, current, compacted)
            row = db.execute(
                f"SELECT {_LIVE_COLUMNS}, l.deleted FROM log l "
                "WHERE l.key = ? AND l.revision <= ? ORDER BY l.revision DESC LIMIT 1",
                (key, revision),
            ).fetchone()
        if row is None or row[5]:
            return None
        return KeyValue(*row[:5])

    def list_range(
        self,
        prefix: str,
        revision: int | None,
        limit: int | None,
        start_after: str | None,
        count: bool = False,
    ) -> ListResult:
        with self._snapshot() as (db, current, compacted):
            at = revision or current
            self._check(at, current, compacted)
            past = None if at == current else at
            body, args, key = _live_keys(past, prefix, start_after)
            sql = f"SELECT {_LIVE_COLUMNS}{body} ORDER BY {key}"
            if limit is not None:
                sql += " LIMIT ?"
                args.append(limit + 1)
            rows = db.execute(sql, args).fetchall()
            more = limit is not None and len(rows) > limit
            if more:
                del rows[limit:]
            remaining = None
            if count:  # in the same snapshot as the page, so the two agree
                remaining = _count_after(db, past, prefix, rows[-1][0]) if more else 0
        return ListResult([KeyValue(*r) for r in rows], at, more, remaining)

    def kept_versions(self, key: str) -> list[HistoryEntry]:
        """The rows a history retention policy kept of ``key``, oldest first."""
        rows = (
            self._db()
            .execute(
                "SELECT key, revision, create_revision, value, time, deleted FROM history"
                " WHERE key = ?"
                " ORDER BY revision",
                (key,),
            )
            .fetchall()
        )
        return [HistoryEntry(k, r, c, v, t, bool(d)) for k, r, c, v, t, d in rows]

    def history(self, prefix: str, first: int, last: int, limit: int) -> list[Event]:
        """Events with first <= revision <= last under ``prefix``, in revision order."""
        with self._snapshot() as (db, _current, compacted):
            if first <= compacted:
                raise Compacted(first, compacted)
            where, args = _key_range("l.key", prefix, None)
            where.append("l.revision BETWEEN ? AND ?")
            rows = db.execute(
                "SELECT l.key, l.value, l.create_revision, l.revision, l.version, l.deleted,"
                " p.value, p.create_revision, p.revision, p.version"
                " FROM log l LEFT JOIN log p ON p.revision = l.prev_revision"
                f" WHERE {' AND '.join(where)} ORDER BY l.revision LIMIT ?",
                [*args, first, last, limit],
            ).fetchall()
        return [_event(row) for row in rows]


def _event(row: tuple[object, ...]) -> Event:
    key, value, create, rev, version, deleted, p_value, p_create, p_rev, p_version = row
    assert isinstance(key, str)
    assert isinstance(rev, int)
    prev = (
        KeyValue(key, p_value, p_create, p_rev, p_version)  # type: ignore[arg-type]
        if p_rev is not None
        else None
    )
    if deleted:
        return Event(EventType.DELETE, KeyValue(key, b"", 0, rev, 0), prev)
    return Event(EventType.PUT, KeyValue(key, value, create, rev, version), prev)  # type: ignore[arg-type]
