"""Store keys under the URL's prefix, and etcd's protobuf key-values turned into the contract's.

A store key ``k`` is the etcd key ``prefix + k`` (UTF-8). etcd orders keys by bytes, as SQLite
orders UTF-8 text, so lists come back in the same order on both backends. etcd's ``KeyValue``
already carries ``create_revision``, ``mod_revision`` and ``version`` with the contract's
meaning; a DELETE event's ``kv`` has the key, the deletion's revision, and zeros, as on SQLite.
"""

from __future__ import annotations

from typing import Any

from kubelite.storage.interface import Event, EventType, KeyValue

# kube-apiserver's key for its compaction protocol, outside every prefix (prefixes start with /).
COMPACT_KEY = b"compact_rev_key"

_DELETE = 1  # mvccpb.Event.DELETE


def prefix_end(prefix: bytes) -> bytes:
    """The smallest key above every key that starts with ``prefix`` (etcd's range_end)."""
    head = prefix.rstrip(b"\xff")
    if not head:
        return b"\0"  # every key from `prefix` on
    return head[:-1] + bytes([head[-1] + 1])


class Keyspace:
    __slots__ = ("_len", "prefix")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix.encode()
        self._len = len(self.prefix)

    def key(self, key: str) -> bytes:
        return self.prefix + key.encode()

    def range(self, prefix: str, start_after: str | None = None) -> tuple[bytes, bytes]:
        """etcd's [key, range_end) for the store keys under ``prefix`` after ``start_after``."""
        start = self.key(prefix)
        end = prefix_end(start)
        if start_after is not None:
            start = max(start, self.key(start_after) + b"\0")
        return start, end

    def kv(self, pb: Any) -> KeyValue:
        return KeyValue(
            pb.key[self._len :].decode(), pb.value, pb.create_revision, pb.mod_revision, pb.version
        )

    def event(self, pb: Any) -> Event:
        prev = self.kv(pb.prev_kv) if pb.HasField("prev_kv") else None
        if pb.type == _DELETE:
            kv = pb.kv
            return Event(
                EventType.DELETE, KeyValue(self.kv(kv).key, b"", 0, kv.mod_revision, 0), prev
            )
        return Event(EventType.PUT, self.kv(pb.kv), prev)
