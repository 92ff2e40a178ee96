"""The embedded SQLite backend (``sqlite:///path/state.db``, ``sqlite://`` for a private store)."""

from kubelite.storage.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
