"""A :class:`Store` that reports how long each call to the store under it took, for kube's
``etcd_request_duration_seconds`` (k8s.io/apiserver ``pkg/storage/etcd3/metrics``, recorded in
``pkg/storage/etcd3/store.go`` by ``RecordEtcdRequest``). Either backend, SQLite or etcd, sits
under it; the metric keeps kube's name for both, as the dashboards that read it expect.

The operation names are kube's: ``get``, ``create``, ``update``, ``delete``, ``list``,
``listWithCount`` (a list that also counts what follows the page) and
``getCurrentResourceVersion``. Watches are not timed (kube times none either); compaction is
not a request.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable

from kubelite.storage.interface import HistoryEntry, KeyValue, ListResult, Store, Watch

#: ``observe(operation, key, seconds)``: the key (or list prefix) tells the resource.
Observer = Callable[[str, str, float], None]


class TimedStore(Store):
    def __init__(self, store: Store, observe: Observer) -> None:
        self.inner = store
        self.observe = observe
        self.exclusive = store.exclusive

    async def get(self, key: str, revision: int | None = None) -> KeyValue | None:
        started = time.perf_counter()
        try:
            return await self.inner.get(key, revision)
        finally:
            self.observe("get", key, time.perf_counter() - started)

    async def list(
        self,
        prefix: str,
        revision: int | None = None,
        limit: int | None = None,
        start_after: str | None = None,
        *,
        count: bool = False,
    ) -> ListResult:
        started = time.perf_counter()
        try:
            return await self.inner.list(prefix, revision, limit, start_after, count=count)
        finally:
            operation = "listWithCount" if count else "list"
            self.observe(operation, prefix, time.perf_counter() - started)

    async def create(self, key: str, value: bytes) -> int:
        started = time.perf_counter()
        try:
            return await self.inner.create(key, value)
        finally:
            self.observe("create", key, time.perf_counter() - started)

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> int:
        started = time.perf_counter()
        try:
            return await self.inner.update(key, value, expected_mod_revision)
        finally:
            self.observe("update", key, time.perf_counter() - started)

    async def delete(
        self, key: str, expected_mod_revision: int | None = None
    ) -> tuple[int, KeyValue]:
        started = time.perf_counter()
        try:
            return await self.inner.delete(key, expected_mod_revision)
        finally:
            self.observe("delete", key, time.perf_counter() - started)

    def watch(self, prefix: str, start_revision: int) -> Watch:
        return self.inner.watch(prefix, start_revision)

    async def current_revision(self) -> int:
        started = time.perf_counter()
        try:
            return await self.inner.current_revision()
        finally:
            self.observe("getCurrentResourceVersion", "", time.perf_counter() - started)

    async def compacted_revision(self) -> int:
        return await self.inner.compacted_revision()

    async def history(self, key: str) -> builtins.list[HistoryEntry]:
        return await self.inner.history(key)  # not a kube request: not timed

    async def compact(self, revision: int) -> None:
        await self.inner.compact(revision)

    async def close(self) -> None:
        await self.inner.close()
