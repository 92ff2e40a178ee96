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
    WatchOverflow,
)
from kubelite.storage.interface import (
    Event,
    EventType,
    KeyValue,
    ListResult,
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
    "KeyExists",
    "KeyValue",
    "ListResult",
    "NotFound",
    "StorageError",
    "Store",
    "StoreOptions",
    "Unavailable",
    "Watch",
    "WatchOverflow",
    "open_store",
]
