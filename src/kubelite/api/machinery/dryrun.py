"""The generic store's writes, where dry-run is decided once (kube-apiserver's
DryRunnableStorage), together with this server's record of what it wrote (:mod:`recent`).

A dry run goes through every step of a write (strategy, admission, validation, the checks of the
optimistic loop) from a fresh read, and at the write itself stores nothing: a create checks the
name is free and answers revision 0 (the object gets no resourceVersion, as from kube), an update
or delete answers the revision the object has. Nothing else in the API layer branches on it but
the after-write hooks, which run only for what was stored.
"""

from __future__ import annotations

from kubelite.api.machinery.recent import RecentValues
from kubelite.storage import KeyExists, KeyValue, Store


class Writes:
    def __init__(self, store: Store, recent: RecentValues) -> None:
        self.store = store
        self.recent = recent

    def starting_guess(self, key: str, dry_run: bool) -> KeyValue | None:
        """The value this server last wrote for ``key`` (a guess, never trusted); none for a
        dry run, which always reads."""
        return None if dry_run else self.recent.get(key)

    async def create(self, key: str, value: bytes, dry_run: bool) -> int:
        if dry_run:
            current = await self.store.get(key)
            if current is not None:
                raise KeyExists(key, current)
            return 0
        revision = await self.store.create(key, value)
        self.recent.put(KeyValue(key, value, revision, revision, 1))
        return revision

    async def update(self, key: str, value: bytes, current: KeyValue, dry_run: bool) -> int:
        if dry_run:
            return current.mod_revision
        revision = await self.store.update(key, value, current.mod_revision)
        self.recent.put(
            KeyValue(key, value, current.create_revision, revision, current.version + 1)
        )
        return revision

    async def delete(self, key: str, current: KeyValue, dry_run: bool) -> int:
        if dry_run:
            return current.mod_revision
        revision, _ = await self.store.delete(key, current.mod_revision)
        self.recent.drop(key)
        return revision

    def forget(self, key: str) -> None:
        """The key is gone (another writer deleted it): no guess for it any more."""
        self.recent.drop(key)
