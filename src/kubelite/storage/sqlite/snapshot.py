"""Online backup and restore of a SQLite store.

:func:`save` copies a database with SQLite's backup API while the server keeps serving: the copy
is one consistent snapshot (a read transaction over the WAL), never a torn file. :func:`restore`
puts a saved copy in place of a data directory's database; the server must be stopped.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from kubelite.storage.sqlite.schema import SCHEMA_VERSION


class SnapshotError(Exception):
    """The snapshot cannot be taken or restored; the message says why in one line."""


def _check(path: Path) -> int:
    """The store revision of the kubelite database at ``path``."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise SnapshotError(f"cannot open {path}: {exc}") from None
    try:
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        if not 1 <= version <= SCHEMA_VERSION:
            raise SnapshotError(f"{path} is not a kubelite database (schema version {version})")
        row = db.execute("SELECT value FROM meta WHERE name = 'revision'").fetchone()
        return int(row[0])
    except sqlite3.DatabaseError as exc:
        raise SnapshotError(f"{path} is not a kubelite database ({exc})") from None
    finally:
        db.close()


def save(database: Path, target: Path) -> int:
    """Copy the live database at ``database`` to ``target`` (0600); the copy's revision."""
    if not database.exists():
        raise SnapshotError(f"no database at {database}; give the server's --data-dir")
    if target.is_dir():
        raise SnapshotError(f"{target} is a directory; name the snapshot file to write")
    _check(database)
    partial = target.with_name(target.name + ".partial")
    try:
        partial.unlink(missing_ok=True)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise SnapshotError(f"cannot write {target}: {exc.strerror}") from None
    os.close(fd)
    source = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    copy = sqlite3.connect(partial)
    try:
        source.backup(copy)
        copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
    except sqlite3.Error as exc:
        partial.unlink(missing_ok=True)
        raise SnapshotError(f"cannot copy {database}: {exc}") from None
    finally:
        copy.close()
        source.close()
    try:
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise SnapshotError(f"cannot write {target}: {exc.strerror}") from None
    return _check(target)


def restore(snapshot: Path, database: Path) -> int:
    """Replace the database at ``database`` with ``snapshot`` (the caller holds the data
    directory, so no server has it open); the restored revision."""
    if not snapshot.exists():
        raise SnapshotError(f"no snapshot at {snapshot}")
    revision = _check(snapshot)
    partial = database.with_name(database.name + ".restoring")
    try:
        partial.unlink(missing_ok=True)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(snapshot.read_bytes())
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise SnapshotError(f"cannot restore into {database.parent}: {exc.strerror}") from None
    for suffix in ("-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    os.replace(partial, database)
    return revision
