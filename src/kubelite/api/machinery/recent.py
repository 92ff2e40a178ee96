"""The values this server last wrote, by key: a guess at the current value of a recently written
object, so that ``GenericStore.guaranteed_update`` can skip its read (kube-apiserver's cacher hands
GuaranteedUpdate the watch cache's copy for the same reason).

A guess is never trusted: the compare-and-swap decides. A stale guess (another server wrote the
key, over etcd) costs one failed CAS, which returns the current value; ``guaranteed_update`` also
re-reads before it reports an error or a no-op computed from a guess.
"""

from __future__ import annotations

from collections import OrderedDict

from kubelite.storage import KeyValue

DEFAULT_CAPACITY = 4096


class RecentValues:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._values: OrderedDict[str, KeyValue] = OrderedDict()

    def get(self, key: str) -> KeyValue | None:
        return self._values.get(key)

    def put(self, kv: KeyValue) -> None:
        values = self._values
        values[kv.key] = kv
        values.move_to_end(kv.key)
        if len(values) > self.capacity:
            values.popitem(last=False)

    def drop(self, key: str) -> None:
        self._values.pop(key, None)

    def __len__(self) -> int:
        return len(self._values)
