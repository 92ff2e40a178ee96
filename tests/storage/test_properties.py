"""Property test: random operation sequences give the same answers from SQLite as from a model.

:class:`Model` is the store contract (kubelite.storage.interface) written as plainly as possible:
one revision counter, create/update/delete with compare-and-swap, reads now and at any kept
revision, lists by prefix with ``limit``/``start_after``, compaction, and the full event history.
Hypothesis generates operation sequences over a few keys whose prefixes overlap ("/a", "/a/b",
"/b", "/ba", ...) and runs each against a fresh in-memory SQLite store and a fresh model.

Guarantees checked, after every operation: the same result or the same error with the same
fields (KeyExists.current, Conflict.current, NotFound.key, Compacted.compacted_revision,
FutureRevision.current_revision, ...), and the same current and compacted revisions. Watches
opened along the way deliver exactly the model's history from their start revision under their
prefix; at the end, a watch opened before the first write (so live all along) and a watch from
the earliest revision not compacted deliver exactly the model's events, with no gap, duplicate
or extra event.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubelite.storage import (
    Compacted,
    Conflict,
    Event,
    EventType,
    FutureRevision,
    KeyExists,
    KeyValue,
    ListResult,
    NotFound,
    StorageError,
    StoreOptions,
    Watch,
    open_store,
)

KEYS = ["/a", "/a/b", "/a/c", "/b", "/ba", "/b/a"]
PREFIXES = ["", "/", "/a", "/a/", "/b", "/ba", "/c"]
VALUES = [b"", b"x", b"y", b"\x00z"]
EVENT_TIMEOUT = 2.0
OPTIONS = StoreOptions(compaction_interval_seconds=0)
# A process crash is test_crash.py's business; here "relaxed" only saves fsyncs.
FILE_OPTIONS = StoreOptions(durability="relaxed", compaction_interval_seconds=0)

pytestmark = pytest.mark.slow


# -- the model ------------------------------------------------------------------------------


class Model:
    """The store contract over a Python list of events; nothing is ever really forgotten, so
    compaction only moves the line below which reads raise Compacted."""

    def __init__(self) -> None:
        self.revision = 0
        self.compacted = 0
        self.live: dict[str, KeyValue] = {}
        self.events: list[Event] = []  # events[i] is the write of revision i + 1

    def _append(self, event: Event) -> int:
        self.revision += 1
        assert event.revision == self.revision
        self.events.append(event)
        if event.type is EventType.PUT:
            self.live[event.kv.key] = event.kv
        else:
            del self.live[event.kv.key]
        return self.revision

    def _checked(self, key: str, expected: int | None) -> KeyValue:
        current = self.live.get(key)
        if current is None:
            raise NotFound(key)
        if expected is not None and current.mod_revision != expected:
            raise Conflict(key, expected, current)
        return current

    def _check_read(self, revision: int) -> None:
        if revision < self.compacted:
            raise Compacted(revision, self.compacted)
        if revision > self.revision:
            raise FutureRevision(revision, self.revision)

    def state_at(self, revision: int) -> dict[str, KeyValue]:
        state: dict[str, KeyValue] = {}
        for event in self.events[:revision]:
            if event.type is EventType.PUT:
                state[event.kv.key] = event.kv
            else:
                del state[event.kv.key]
        return state

    def create(self, key: str, value: bytes) -> int:
        if key in self.live:
            raise KeyExists(key, self.live[key])
        rev = self.revision + 1
        return self._append(Event(EventType.PUT, KeyValue(key, value, rev, rev, 1), None))

    def update(self, key: str, value: bytes, expected: int) -> int:
        prev = self._checked(key, expected)
        kv = KeyValue(key, value, prev.create_revision, self.revision + 1, prev.version + 1)
        return self._append(Event(EventType.PUT, kv, prev))

    def delete(self, key: str, expected: int | None) -> tuple[int, KeyValue]:
        prev = self._checked(key, expected)
        kv = KeyValue(key, b"", 0, self.revision + 1, 0)
        return self._append(Event(EventType.DELETE, kv, prev)), prev

    def get(self, key: str, revision: int | None) -> KeyValue | None:
        if revision is None:
            return self.live.get(key)
        self._check_read(revision)
        return self.state_at(revision).get(key)

    def list(
        self, prefix: str, revision: int | None, limit: int | None, start_after: str | None
    ) -> ListResult:
        at = self.revision if revision is None else revision
        self._check_read(at)
        items = sorted(
            (
                kv
                for key, kv in self.state_at(at).items()
                if key.startswith(prefix) and (start_after is None or key > start_after)
            ),
            key=lambda kv: kv.key,
        )
        more = limit is not None and len(items) > limit
        return ListResult(items[:limit] if limit is not None else items, at, more)

    def compact(self, revision: int) -> None:
        if revision <= self.compacted:
            raise Compacted(revision, self.compacted)
        if revision > self.revision:
            raise FutureRevision(revision, self.revision)
        self.compacted = revision

    def watch_start(self, start_revision: int) -> None:
        if start_revision <= self.compacted:
            raise Compacted(start_revision, self.compacted)

    def events_from(self, prefix: str, start_revision: int) -> list[Event]:
        return [
            e for e in self.events if e.revision >= start_revision and e.kv.key.startswith(prefix)
        ]


# -- operations -------------------------------------------------------------------------------
# Revisions are drawn as selectors and resolved against the model's state when the operation
# runs, so that they land on interesting values (current, compacted, just above, just below).


@dataclass(frozen=True)
class Create:
    key: str
    value: bytes


@dataclass(frozen=True)
class Update:
    key: str
    value: bytes
    expected: int | None  # None: the key's mod_revision now (a CAS that should win)


@dataclass(frozen=True)
class Delete:
    key: str
    expected: int | None  # None: no precondition
    match: bool  # with ``expected`` None: pass the key's mod_revision now as precondition


@dataclass(frozen=True)
class Get:
    key: str
    revision: int | None  # selector


@dataclass(frozen=True)
class ListOp:
    prefix: str
    revision: int | None  # selector
    limit: int | None
    start_after: str | None


@dataclass(frozen=True)
class Compact:
    revision: int  # selector, may land on or below the compacted revision, or above current


@dataclass(frozen=True)
class WatchFrom:
    prefix: str
    revision: int  # selector


@dataclass(frozen=True)
class Reopen:
    """Close the store and open its file again (file-backed runs only)."""


Op = Create | Update | Delete | Get | ListOp | Compact | WatchFrom | Reopen

keys = st.sampled_from(KEYS)
prefixes = st.sampled_from(PREFIXES)
values = st.sampled_from(VALUES)
selectors = st.integers(min_value=0, max_value=60)

_op_strategies: list[st.SearchStrategy[Op]] = [
    st.builds(Create, keys, values),
    st.builds(Create, keys, values),
    st.builds(Create, keys, values),
    st.builds(Update, keys, values, st.one_of(st.none(), st.none(), selectors)),
    st.builds(Update, keys, values, st.one_of(st.none(), st.none(), selectors)),
    st.builds(Delete, keys, st.one_of(st.none(), selectors), st.booleans()),
    st.builds(Get, keys, st.one_of(st.none(), selectors)),
    st.builds(
        ListOp,
        prefixes,
        st.one_of(st.none(), selectors),
        st.one_of(st.none(), st.integers(1, 3)),
        st.one_of(st.none(), st.sampled_from([*KEYS, "/", "/a0", "/az"])),
    ),
    st.builds(Compact, selectors),
    st.builds(WatchFrom, prefixes, selectors),
]
ops = st.one_of(*_op_strategies)
ops_with_reopen = st.one_of(*_op_strategies, st.just(Reopen()))


def read_revision(selector: int, model: Model) -> int:
    """A revision in [compacted - 1, current + 1], at least 1 (0 is not a revision)."""
    low = max(1, model.compacted - 1)
    return low + selector % (model.revision + 2 - low)


def mismatch_detail(op: Op, got: Any, want: Any) -> str:
    return f"{op}: store gave {got!r}, model {want!r}"


# -- running ----------------------------------------------------------------------------------

Outcome = tuple[str, Any]


def error(exc: StorageError) -> Outcome:
    return ("error", (type(exc).__name__, vars(exc)))


async def outcome_of(call: Any) -> Outcome:
    try:
        return ("ok", await call)
    except StorageError as exc:
        return error(exc)


def model_outcome(fn: Any, *args: Any) -> Outcome:
    try:
        return ("ok", fn(*args))
    except StorageError as exc:
        return error(exc)


def comparable(event: Event) -> tuple[Any, ...]:
    """What the contract fixes about an event: for a DELETE, ``kv`` carries only the key, an
    empty value and the deletion's revision."""
    kv = event.kv
    body = kv if event.type is EventType.PUT else (kv.key, kv.value, kv.mod_revision)
    return (event.type, body, event.prev_kv)


async def take(watch: Watch, n: int) -> list[Event]:
    return [await asyncio.wait_for(anext(watch), EVENT_TIMEOUT) for _ in range(n)]


class Run:
    """One store and its model side by side, and a watch that has been live since before the
    first write (re-opened, from the next revision, each time the store is)."""

    def __init__(self, url: str, options: StoreOptions, live_prefix: str) -> None:
        self.url = url
        self.options = options
        self.model = Model()
        self.live_prefix = live_prefix
        self.live_events: list[Event] = []

    async def open(self) -> None:
        self.store = await open_store(self.url, self.options)
        # Start at the next revision: live at once, so nothing it delivers needs history.
        self.live_watch = self.store.watch(self.live_prefix, self.model.revision + 1)
        await self.live_watch.start()
        self.live_from = self.model.revision + 1

    async def drain_live_watch(self) -> None:
        want = self.model.events_from(self.live_prefix, self.live_from)
        self.live_events += await take(self.live_watch, len(want))
        self.live_from = self.model.revision + 1

    async def close(self) -> None:
        await self.live_watch.aclose()
        await self.store.close()

    async def reopen(self) -> None:
        await self.drain_live_watch()
        await self.close()
        await self.open()

    async def check_watch(self, op: WatchFrom) -> None:
        start = read_revision(op.revision, self.model)
        watch = self.store.watch(op.prefix, start)
        try:
            got = await outcome_of(watch.start())
            want = model_outcome(self.model.watch_start, start)
            assert got == want, mismatch_detail(op, got, want)
            if got[0] == "ok":
                expected = self.model.events_from(op.prefix, start)
                events = await take(watch, len(expected))
                assert list(map(comparable, events)) == list(map(comparable, expected)), op
        finally:
            await watch.aclose()

    async def apply(self, op: Op) -> None:
        """Run ``op`` on both and compare what they answer."""
        store, model = self.store, self.model
        if isinstance(op, WatchFrom):
            await self.check_watch(op)
            return
        if isinstance(op, Reopen):
            await self.reopen()
            return
        if isinstance(op, Create):
            got = await outcome_of(store.create(op.key, op.value))
            want = model_outcome(model.create, op.key, op.value)
        elif isinstance(op, Update):
            live = model.live.get(op.key)
            if op.expected is not None:
                expected = op.expected
            else:
                expected = live.mod_revision if live else model.revision
            got = await outcome_of(store.update(op.key, op.value, expected))
            want = model_outcome(model.update, op.key, op.value, expected)
        elif isinstance(op, Delete):
            live = model.live.get(op.key)
            cas = op.expected
            if cas is None and op.match:
                cas = live.mod_revision if live else model.revision
            got = await outcome_of(store.delete(op.key, cas))
            want = model_outcome(model.delete, op.key, cas)
        elif isinstance(op, Get):
            rev = None if op.revision is None else read_revision(op.revision, model)
            got = await outcome_of(store.get(op.key, rev))
            want = model_outcome(model.get, op.key, rev)
        elif isinstance(op, ListOp):
            rev = None if op.revision is None else read_revision(op.revision, model)
            got = await outcome_of(store.list(op.prefix, rev, op.limit, op.start_after))
            want = model_outcome(model.list, op.prefix, rev, op.limit, op.start_after)
        else:
            assert isinstance(op, Compact)
            low = model.compacted
            target = low + op.revision % (model.revision + 2 - low)  # compacted..current + 1
            got = await outcome_of(store.compact(target))
            want = model_outcome(model.compact, target)
        assert got == want, mismatch_detail(op, got, want)

    async def finish(self, final_prefix: str) -> None:
        """The end-of-run watch checks."""
        store, model = self.store, self.model
        # A sentinel write under each prefix ends both watches' expected streams, so an extra
        # event anywhere before it shows up as a mismatch without waiting for silence.
        for prefix in {self.live_prefix, final_prefix}:
            key = f"{prefix}~end"
            assert await store.create(key, b"end") == model.create(key, b"end")

        if model.compacted:
            too_old = store.watch(final_prefix, model.compacted)
            got = await outcome_of(too_old.start())
            await too_old.aclose()
            assert got == model_outcome(model.watch_start, model.compacted)
        earliest = model.compacted + 1
        async with store.watch(final_prefix, earliest) as final_watch:
            want = model.events_from(final_prefix, earliest)
            got_final = await take(final_watch, len(want))
        assert list(map(comparable, got_final)) == list(map(comparable, want))

        await self.drain_live_watch()
        want = model.events_from(self.live_prefix, 1)
        assert list(map(comparable, self.live_events)) == list(map(comparable, want))


async def run_case(url: str, sequence: list[Op], live_prefix: str, final_prefix: str) -> None:
    options = OPTIONS if url == "sqlite://" else FILE_OPTIONS
    run = Run(url, options, live_prefix)
    await run.open()
    try:
        for op in sequence:
            await run.apply(op)
            assert await run.store.current_revision() == run.model.revision, op
            assert await run.store.compacted_revision() == run.model.compacted, op
        await run.finish(final_prefix)
    finally:
        await run.close()


def scratch_dir() -> str:
    """A directory in RAM (tmpfs) when the machine has one: the file store without the disk."""
    shm = "/dev/shm"
    return tempfile.mkdtemp(prefix="kubelite-props-", dir=shm if os.access(shm, os.W_OK) else None)


@settings(max_examples=200, deadline=None)
@given(
    sequence=st.lists(ops, min_size=20, max_size=150), live_prefix=prefixes, final_prefix=prefixes
)
def test_sqlite_agrees_with_model(sequence: list[Op], live_prefix: str, final_prefix: str) -> None:
    """The private store (``sqlite://``) and the model agree on every result, error and event
    of a random sequence."""
    asyncio.run(run_case("sqlite://", sequence, live_prefix, final_prefix))


@settings(max_examples=100, deadline=None)
@given(
    sequence=st.lists(ops_with_reopen, min_size=20, max_size=150),
    live_prefix=prefixes,
    final_prefix=prefixes,
)
def test_sqlite_file_agrees_with_model_across_reopens(
    sequence: list[Op], live_prefix: str, final_prefix: str
) -> None:
    """The same on a database file that is closed and opened again at random points: what a
    reopened store answers (revision, compacted revision, values, history, CAS checks) still
    agrees with the model."""
    folder = scratch_dir()
    try:
        asyncio.run(run_case(f"sqlite://{folder}/state.db", sequence, live_prefix, final_prefix))
    finally:
        shutil.rmtree(folder)
