"""Opening SQLite connections the way every part of the backend needs them."""

from __future__ import annotations

import sqlite3
from typing import Literal

# "off" is used only for the private in-memory store (its file lives in RAM and dies with it).
Synchronous = Literal["full", "normal", "off"]

WAL_SIZE_LIMIT = 64 * 1024 * 1024  # the -wal file is cut back to this after each WAL reset


def connect(path: str, *, synchronous: Synchronous = "full") -> sqlite3.Connection:
    """A connection in autocommit mode (explicit BEGIN/COMMIT) on a WAL database."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=5.0)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute(f"PRAGMA synchronous = {synchronous.upper()}")
    db.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
    db.execute("PRAGMA cache_size = -32768")  # 32 MiB of page cache per connection
    db.execute("PRAGMA foreign_keys = OFF")
    return db
