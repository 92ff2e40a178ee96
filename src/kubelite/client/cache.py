"""An informer's local cache: objects by key (``namespace/name``) with secondary indexes.

An index is a function from an object to the values it is filed under (client-go's
``IndexFunc``), for example :func:`by_namespace`, or the owners of a Pod. ``by_index(name,
value)`` answers "every object filed under value" without a scan. The cache is owned by one
informer and changed only from its task; readers on the same loop always see a consistent state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kubelite.client.objects import Object, key_of, namespace_of, resource_version

IndexFunc = Callable[[Object], Iterable[str]]


def by_namespace(obj: Object) -> list[str]:
    """The index kubectl and client-go use most: an object's namespace."""
    namespace = namespace_of(obj)
    return [namespace] if namespace else []


class Indexer:
    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._items: dict[str, Object] = {}
        self._index_funcs = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._index_funcs}

    # -- reads ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def get(self, key: str) -> Object | None:
        return self._items.get(key)

    def keys(self) -> list[str]:
        return list(self._items)

    def objects(self) -> list[Object]:
        return list(self._items.values())

    def by_index(self, index: str, value: str) -> list[Object]:
        return [self._items[k] for k in sorted(self._indices[index].get(value, ()))]

    def index_values(self, index: str) -> list[str]:
        return sorted(value for value, keys in self._indices[index].items() if keys)

    # -- writes (the informer's) ------------------------------------------------------------

    def upsert(self, obj: Object, key: str | None = None) -> Object | None:
        """Store ``obj`` (under ``key``, default :func:`key_of`); returns the object it
        replaced, if any."""
        key = key or key_of(obj)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        self._index(key, obj)
        return old

    def delete(self, key: str) -> Object | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def replace(
        self, objects: Mapping[str, Object]
    ) -> tuple[list[Object], list[tuple[Object, Object]], list[Object]]:
        """Make the cache hold exactly ``objects`` (key -> object: a relist); returns what was
        added, what changed (old, new: a different resourceVersion) and what was removed."""
        added: list[Object] = []
        updated: list[tuple[Object, Object]] = []
        for key, obj in objects.items():
            old = self.upsert(obj, key)
            if old is None:
                added.append(obj)
            elif resource_version(old) != resource_version(obj):
                updated.append((old, obj))
        gone = [key for key in self._items if key not in objects]
        removed = [old for key in gone if (old := self.delete(key)) is not None]
        return added, updated, removed

    def _index(self, key: str, obj: Object) -> None:
        for name, func in self._index_funcs.items():
            index = self._indices[name]
            for value in func(obj):
                index.setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: Object) -> None:
        for name, func in self._index_funcs.items():
            index = self._indices[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
