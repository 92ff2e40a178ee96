"""The storage engine: a versioned key-value store with compare-and-swap, history, watch and
compaction. It knows nothing of Kubernetes; see :mod:`kubelite.storage.interface` for the
contract and docs/guarantees.md for what every backend promises."""

from kubelite.storage.errors import (
    Compacted,
    Conflict,
    FutureRevision,
    KeyExists,
    NotFound,
    StorageError,
    Unavailable,
    Unsupported,
    WatchOverflow,
)
from kubelite.storage.interface import (
    Event,
    EventType,
    HistoryEntry,
    KeyValue,
    ListResult,
    Retention,
    Store,
    StoreOptions,
    Watch,
)
from kubelite.storage.urls import open_store

__all__ = [
    "Compacted",
    "Conflict",
    "Event",
    "EventType",
    "FutureRevision",
    "HistoryEntry",
    "KeyExists",
    "KeyValue",
    "ListResult",
    "NotFound",
    "Retention",
    "StorageError",
    "Store",
    "StoreOptions",
    "Unavailable",
    "Unsupported",
    "Watch",
    "WatchOverflow",
    "open_store",
]
