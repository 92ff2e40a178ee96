"""The storage contract: keys are ``str``, values ``bytes``, revisions ``int``.

It mirrors etcd so that an etcd backend implements it with plain transactions, and it knows nothing
of Kubernetes. The semantics every backend must meet are written here, checked by the conformance
suite in :mod:`kubelite.storage.testing`, and listed by name in docs/guarantees.md.

KeyValue and Event are named tuples: they are made for every write, and cost least that way.

Revisions: one counter for the whole keyspace, starting at 1 for the first write and rising by
exactly one per successful create, update or delete. A key carries ``create_revision`` (the write
that created this incarnation), ``mod_revision`` (its last write) and ``version`` (writes since
creation, 1 after create). A key that is not live compares as mod_revision 0.
"""

from __future__ import annotations

import abc
import builtins
import enum
import itertools
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, NamedTuple


class KeyValue(NamedTuple):
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int


class EventType(enum.Enum):
    PUT = "PUT"
    DELETE = "DELETE"


class Event(NamedTuple):
    """One change. For PUT, ``kv`` is the new value and ``prev_kv`` the one it replaced (None on
    create). For DELETE, ``kv`` has the key, an empty value and ``mod_revision`` set to the
    deletion's revision; ``prev_kv`` is the value that was deleted."""

    type: EventType
    kv: KeyValue
    prev_kv: KeyValue | None

    @property
    def revision(self) -> int:
        return self.kv.mod_revision


@dataclass(frozen=True, slots=True)
class ListResult:
    """Items in key order, the store revision the read was taken at, and whether more items
    matched beyond ``limit`` (page on with ``start_after=items[-1].key, revision=revision``).

    ``remaining`` is only filled when the list was asked to ``count``: how many live keys under
    the prefix come after the last item, at ``revision`` (0 when ``more`` is False). kube-apiserver
    answers a paged list's ``remainingItemCount`` from etcd's count; counting is opt-in because it
    costs SQLite a scan of the rest of the range, which plain lists should not pay."""

    items: list[KeyValue]
    revision: int
    more: bool
    remaining: int | None = None


class HistoryEntry(NamedTuple):
    """One past version of a key, kept by a history retention policy: the write's revision,
    the ``create_revision`` of the incarnation it belongs to (equal to ``revision`` for a
    create), the value written (for a deletion: the value it deleted), its wall-clock time
    (Unix seconds), and whether the write was a deletion."""

    key: str
    revision: int
    create_revision: int
    value: bytes
    time: float
    deleted: bool


@dataclass(frozen=True, slots=True)
class Retention:
    """How long past versions of the keys under one prefix are kept: at most ``max_versions``
    per key (counting a deletion as one), or for ``max_age_seconds`` after their write. Either
    or both; None is no limit of that sort."""

    max_age_seconds: float | None = None
    max_versions: int | None = None

    def __post_init__(self) -> None:
        if self.max_age_seconds is not None and not self.max_age_seconds > 0:
            raise ValueError(f"max_age_seconds must be positive, not {self.max_age_seconds}")
        if self.max_versions is not None and self.max_versions < 1:
            raise ValueError(f"max_versions must be at least 1, not {self.max_versions}")


Durability = Literal["full", "relaxed"]


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """Knobs shared by every backend.

    durability: "full" acknowledges a write only once it is on stable storage (SQLite
        synchronous=FULL); "relaxed" (SQLite synchronous=NORMAL) survives a process crash but may
        lose the last commits on power loss.
    retention_seconds, min_retained_revisions: automatic compaction keeps at least this much
        history (both must hold); set ``compaction_interval_seconds`` to 0 to turn it off.
    watch_queue_size: events a watcher may have waiting before it is ended with WatchOverflow.
    history_retention: key prefix -> :class:`Retention`: past versions of the keys under each
        prefix kept beyond compaction, read with :meth:`Store.history` (empty: none kept; a
        backend that keeps none refuses a non-empty policy only when history is read). No
        prefix may start with another (each key has one policy).
    """

    durability: Durability = "full"
    retention_seconds: float = 300.0
    min_retained_revisions: int = 1000
    compaction_interval_seconds: float = 30.0
    watch_queue_size: int = 1000
    history_retention: Mapping[str, Retention] = field(default_factory=dict)

    def __post_init__(self) -> None:
        prefixes = sorted(self.history_retention)
        for shorter, longer in itertools.pairwise(prefixes):
            if longer.startswith(shorter):
                raise ValueError(f"history retention prefixes {shorter!r} and {longer!r} overlap")
        if "" in self.history_retention:
            raise ValueError("a history retention prefix may not be empty")


class Watch(abc.ABC):
    """An async iterator of events, usable as an async context manager.

    Entering (or the first ``__anext__``) checks the start revision, raising ``Compacted`` when
    the history it needs is gone. Events then arrive in revision order, each exactly once: first
    from history, then live, with no gap and no duplicate at the seam. A watcher whose queue fills
    is ended with ``WatchOverflow``; closing the store ends every watch with ``Unavailable``.
    """

    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    async def aclose(self) -> None: ...

    @abc.abstractmethod
    async def __anext__(self) -> Event: ...

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __aenter__(self) -> Watch:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class Store(abc.ABC):
    """A versioned key-value store with compare-and-swap, history, watch and compaction."""

    #: True when no other process can write this store while it is open (SQLite's writer holds
    #: a lock on the file); False when several may (etcd: several servers share one prefix).
    exclusive: bool = False

    @abc.abstractmethod
    async def get(self, key: str, revision: int | None = None) -> KeyValue | None:
        """The key's value now, or as it was at ``revision``; None if not live then.
        ``revision`` None or 0 means now (as in etcd). Raises Compacted below the compacted
        revision, FutureRevision above the current one."""

    @abc.abstractmethod
    async def list(
        self,
        prefix: str,
        revision: int | None = None,
        limit: int | None = None,
        start_after: str | None = None,
        *,
        count: bool = False,
    ) -> ListResult:
        """Live keys starting with ``prefix`` in key order, now or at ``revision``, after
        ``start_after`` and at most ``limit``. With ``count``, ``remaining`` says how many more
        live keys follow the page, read at the same revision. Same errors as :meth:`get`."""

    @abc.abstractmethod
    async def create(self, key: str, value: bytes) -> int:
        """Write a key that is not live; returns the new revision. Raises KeyExists."""

    @abc.abstractmethod
    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> int:
        """Write a live key only if its mod_revision is ``expected_mod_revision``; returns the new
        revision. Raises Conflict (carrying the current value) or NotFound."""

    @abc.abstractmethod
    async def delete(
        self, key: str, expected_mod_revision: int | None = None
    ) -> tuple[int, KeyValue]:
        """Delete a live key (only if its mod_revision matches, when given); returns the
        deletion's revision and the deleted value. Raises Conflict or NotFound."""

    @abc.abstractmethod
    def watch(self, prefix: str, start_revision: int) -> Watch:
        """Every change to keys under ``prefix`` at revision >= ``start_revision``, then live.
        Raises Compacted (on start) when ``start_revision`` is not above the compacted revision.
        A start revision in the future is allowed: the watch waits for it."""

    @abc.abstractmethod
    async def current_revision(self) -> int:
        """The revision of the last acknowledged write (0 for an empty store)."""

    @abc.abstractmethod
    async def compacted_revision(self) -> int:
        """Reads below this revision, and watches starting at or below it, raise Compacted."""

    @abc.abstractmethod
    async def compact(self, revision: int) -> None:
        """Drop history that no read at ``revision`` or later needs. Raises Compacted if
        ``revision`` is not above the compacted revision, FutureRevision if above current."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Finish acknowledged work, end every watch and release the backend."""

    @abc.abstractmethod
    async def history(self, key: str) -> builtins.list[HistoryEntry]:
        """The past versions of ``key`` kept by the store's history retention policy, oldest
        first: one per create, update and delete, across incarnations of the key, each written
        in the same transaction as its write and unaffected by :meth:`compact`. A key under no
        retained prefix has none. Raises Unsupported when the backend keeps no history."""

    async def check(self) -> None:
        """Raise ``Unavailable``, saying why, when the store is not answering: what the server's
        ``etcd`` health check reports (kube-apiserver's, for every backend). Quick: callers
        serve /livez and /readyz from it. This default asks for the current revision."""
        await self.current_revision()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


# -- argument checks every backend makes (programming errors, not storage errors) -------------


def check_key(key: str) -> None:
    if not isinstance(key, str) or not key:
        raise ValueError(f"key must be a non-empty str, not {key!r}")


def check_value(value: bytes) -> None:
    if not isinstance(value, bytes):
        raise TypeError(f"value must be bytes, not {type(value).__name__}")


def check_revision(revision: int | None) -> None:
    if revision is not None and revision < 0:
        raise ValueError(f"revision must not be negative, not {revision}")
