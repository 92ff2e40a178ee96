"""The storage layer's one error tree.

Every failure a store reports is one of these, and each carries the key and revisions involved so
that the API layer can translate it (once, per verb) into a Kubernetes ``Status`` without parsing
messages::

    StorageError
    ├── NotFound          the key is not live (or not at the revision asked for)
    ├── KeyExists         create of a key that is live
    ├── Conflict          compare-and-swap lost: the key's mod_revision is not the expected one
    ├── Compacted         the revision asked for is older than the compacted history
    ├── FutureRevision    the revision asked for has not happened yet
    ├── Unavailable       the store cannot serve now (closed, I/O error, a watch that fell behind)
    │   └── WatchOverflow a watcher fell behind; it may resume from ``next_revision``
    └── Unsupported       the backend does not offer this (revision history over etcd)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubelite.storage.interface import KeyValue


class StorageError(Exception):
    """Base of every error a store raises."""


class NotFound(StorageError):
    def __init__(self, key: str, revision: int | None = None) -> None:
        self.key = key
        self.revision = revision
        at = f" at revision {revision}" if revision is not None else ""
        super().__init__(f"key {key!r} not found{at}")


class KeyExists(StorageError):
    def __init__(self, key: str, current: KeyValue) -> None:
        self.key = key
        self.current = current
        super().__init__(f"key {key!r} already exists (mod_revision {current.mod_revision})")


class Conflict(StorageError):
    def __init__(self, key: str, expected_mod_revision: int, current: KeyValue) -> None:
        self.key = key
        self.expected_mod_revision = expected_mod_revision
        self.current = current
        super().__init__(
            f"key {key!r} was modified: expected mod_revision {expected_mod_revision}, "
            f"found {current.mod_revision}"
        )


class Compacted(StorageError):
    def __init__(self, requested_revision: int, compacted_revision: int) -> None:
        self.requested_revision = requested_revision
        self.compacted_revision = compacted_revision
        super().__init__(
            f"revision {requested_revision} has been compacted "
            f"(compacted revision {compacted_revision})"
        )


class FutureRevision(StorageError):
    def __init__(self, requested_revision: int, current_revision: int) -> None:
        self.requested_revision = requested_revision
        self.current_revision = current_revision
        super().__init__(
            f"revision {requested_revision} is in the future (current revision {current_revision})"
        )


class Unavailable(StorageError):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class WatchOverflow(Unavailable):
    """A watcher's queue filled up: it was ended so that it never slows writers or other watchers.

    Every event before ``next_revision`` was delivered; watching again from ``next_revision``
    continues without a gap (or raises :class:`Compacted` if that history is gone).
    """

    def __init__(self, prefix: str, next_revision: int) -> None:
        self.prefix = prefix
        self.next_revision = next_revision
        super().__init__(
            f"watch on {prefix!r} fell behind and was ended; resume from revision {next_revision}"
        )


class Unsupported(StorageError):
    """What was asked is not something this backend does (revision history beyond
    compaction, which only the SQLite store keeps): asking again will not help."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)
