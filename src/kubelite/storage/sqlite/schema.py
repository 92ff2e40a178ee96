"""The SQLite schema, its version, and the migrations that bring an older database up to date.

Tables:

``log``   one row per write, ever (until compaction): the revision is the row id, so commit order
          is revision order. ``prev_revision`` points at the row this write replaced (0 on
          create), which is how watch finds ``prev_kv`` and how compaction finds superseded rows.
          A delete is a row with ``deleted = 1`` and no value.
``live``  one row per live key: the revision of its current ``log`` row. Compare-and-swap is an
          ``UPDATE live ... WHERE key = ? AND revision = ?``.
``meta``  the store revision, the compacted revision and compaction progress.
``history`` past versions kept by a history retention policy (schema version 2): one row per
          write of a retained key (its revision and create revision, the value written or, for
          a delete, deleted, the wall-clock time, ``deleted``), inserted in the write's own
          transaction. Compaction never reads it; count limits are pruned in the write's
          transaction, age limits by a periodic step.

The schema version is SQLite's ``PRAGMA user_version``. ``MIGRATIONS[i]`` takes a database from
version ``i`` to ``i + 1``; version 0 is an empty file. A database newer than this code is refused
rather than guessed at.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from kubelite.storage.errors import Unavailable

Migration = Callable[[sqlite3.Connection], None]


def _create_base_tables(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE log (
            revision INTEGER PRIMARY KEY,
            key TEXT NOT NULL,
            value BLOB,
            create_revision INTEGER NOT NULL,
            prev_revision INTEGER NOT NULL,
            version INTEGER NOT NULL,
            deleted INTEGER NOT NULL
        )"""
    )
    db.execute("CREATE INDEX log_key_revision ON log (key, revision)")
    db.execute("CREATE TABLE live (key TEXT PRIMARY KEY, revision INTEGER NOT NULL) WITHOUT ROWID")
    db.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID")
    db.executemany(
        "INSERT INTO meta (name, value) VALUES (?, 0)",
        [("revision",), ("compacted",), ("compact_done",)],
    )


def _create_history_table(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE history (
            key TEXT NOT NULL,
            revision INTEGER NOT NULL,
            create_revision INTEGER NOT NULL,
            value BLOB NOT NULL,
            time REAL NOT NULL,
            deleted INTEGER NOT NULL,
            PRIMARY KEY (key, revision)
        ) WITHOUT ROWID"""
    )


MIGRATIONS: list[Migration] = [_create_base_tables, _create_history_table]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(db: sqlite3.Connection) -> int:
    """Bring ``db`` (in autocommit mode) to SCHEMA_VERSION; returns the version it was at."""
    db.execute("BEGIN IMMEDIATE")
    try:
        found = int(db.execute("PRAGMA user_version").fetchone()[0])
        if found > SCHEMA_VERSION:
            raise Unavailable(
                f"database schema version {found} is newer than this kubelite supports "
                f"({SCHEMA_VERSION}); upgrade kubelite"
            )
        for step in MIGRATIONS[found:]:
            step(db)
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return found
