"""Storage benchmark: kubelite's SQLite backend side by side with raw sqlite3 doing the same work.

In one run, on the same disk and in the same process, interleaved and repeated (medians reported):

* durable compare-and-swap updates per second, 1 KiB values, synchronous=FULL (WAL):
  - raw sqlite3, one commit per write;
  - raw sqlite3, batched: N writes per ``BEGIN IMMEDIATE .. COMMIT`` for a few N, best taken;
  - for reference, raw sqlite3 one commit per write done by a minimal writer thread that the event
    loop hands each write to (a queue there, ``call_soon_threadsafe`` back): the floor any
    writer-thread design pays per write, kubelite's included;
  - kubelite with 1, 16, 64 and 256 updates in flight (one asyncio task per key, each doing
    read-modify-write ``update(key, value, expected_mod_revision)`` with the revision it got
    last, so there are no conflicts);
  and kubelite's ratio to raw sqlite3, checked against the targets below;
* watch delivery latency (p50/p99) with 100 watchers while a writer issues 1,000 writes/s on a
  fixed schedule (the send time travels in the value), and that every watcher got every event;
* the process's peak RSS.

The same work means: each write appends a ``log`` row (kubelite's schema, created by
:func:`kubelite.storage.sqlite.schema.migrate` on a connection from
:func:`kubelite.storage.sqlite.connection.connect`, so the pragmas match) and moves the key's
``live`` row with ``UPDATE live SET revision = ? WHERE key = ? AND revision = ?`` (rowcount
checked). kubelite additionally reads the values it replaced (it needs them for ``prev_kv``), in
one query per commit; that is part of what the ratio measures.

Event loop: everything on the asyncio side runs on uvloop, the loop ``kubelite serve`` runs on
(``--loop asyncio`` for the standard library's); kubelite one at a time is also measured on the
standard library's loop in every round, for comparison.

Targets: kubelite at 256 in flight >= 0.5 x raw sqlite3's best batched rate; kubelite one at a
time >= 0.75 x raw sqlite3's one-commit-per-write rate.

Run:
    make bench                                     # = .venv/bin/python bench/storage.py
    .venv/bin/python bench/storage.py --quick      # a smoke check of a few seconds
    .venv/bin/python bench/storage.py --seconds 5 --rounds 3 --json > results.json

Databases go in a fresh directory under --dir (default: the system temp dir); it must be on a real
disk, not tmpfs, or fsync costs nothing. Progress goes to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import queue
import resource
import shutil
import sqlite3
import statistics
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, TypeVar

from kubelite.storage import Store, StoreOptions, Watch, WatchOverflow, open_store
from kubelite.storage.sqlite.connection import connect
from kubelite.storage.sqlite.schema import migrate

VALUE_SIZE = 1024
VALUE = bytes(range(256)) * (VALUE_SIZE // 256)
IN_FLIGHT = (1, 16, 64, 256)
RAW_BATCHES = (64, 256, 1024)
RAW_KEYS = 256
TARGET_ONE = 0.75  # kubelite@1 / raw one commit per write
TARGET_MANY = 0.5  # kubelite@256 / raw best batched

WATCHERS = 100
WATCH_RATE = 1000.0  # writes/s
WATCH_KEYS = 1000  # the writer cycles over this many keys: create each once, then update
WATCH_PREFIX = "/bench/watch/"
STAMP = struct.Struct("<d")  # the send time (time.perf_counter()) at the front of each value

T = TypeVar("T")
RAW_ONE = "raw sqlite3, 1 commit per write"
RAW_THREAD = "raw sqlite3, 1 commit per write, via a thread"
KUBELITE_ONE_ASYNCIO = "kubelite, 1 in flight, stdlib asyncio loop"
RAW_BEST = "raw sqlite3, best batched"


def run_async(loop: str, coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a fresh event loop of the kind asked for ("uvloop" or "asyncio")."""
    if loop == "uvloop":
        import uvloop

        return uvloop.run(coro)
    return asyncio.run(coro)


def raw_batched_label(batch: int) -> str:
    return f"raw sqlite3, {batch} writes per commit"


def kubelite_label(in_flight: int) -> str:
    return f"kubelite, {in_flight} in flight"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Config:
    loop: str
    seconds: float
    warmup: float
    rounds: int
    watch_seconds: float
    raw_batches: tuple[int, ...]
    base_dir: str | None


@contextmanager
def scratch_db(base_dir: str | None) -> Iterator[str]:
    """A fresh database path in its own directory on disk, removed afterwards."""
    directory = tempfile.mkdtemp(prefix="kubelite-bench-", dir=base_dir)
    try:
        yield os.path.join(directory, "state.db")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# -- raw sqlite3 ------------------------------------------------------------------------------

_LOG_INSERT = (
    "INSERT INTO log (revision, key, value, create_revision, prev_revision, version, deleted)"
    " VALUES (?, ?, ?, ?, ?, ?, 0)"
)
_CAS = "UPDATE live SET revision = ? WHERE key = ? AND revision = ?"


class RawStore:
    """kubelite's schema driven directly: history row + CAS per write, explicit transactions."""

    def __init__(self, path: str, keys: int) -> None:
        self._db = connect(path, synchronous="full")
        migrate(self._db)
        self._keys = [f"/bench/raw/{i:04d}" for i in range(keys)]
        self._mod = [0] * keys
        self._version = [0] * keys
        self._created = [0] * keys
        self._revision = 0
        self._next = 0
        self._create_all()

    def _create_all(self) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        for i, key in enumerate(self._keys):
            rev = self._revision = self._revision + 1
            db.execute(_LOG_INSERT, (rev, key, VALUE, rev, 0, 1))
            db.execute("INSERT INTO live (key, revision) VALUES (?, ?)", (key, rev))
            self._mod[i], self._version[i], self._created[i] = rev, 1, rev
        db.execute("COMMIT")

    def commit(self, writes: int) -> int:
        """One transaction of ``writes`` CAS updates, round-robin over the keys."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        for _ in range(writes):
            i = self._next
            self._next = (i + 1) % len(self._keys)
            key, prev = self._keys[i], self._mod[i]
            rev = self._revision + 1
            db.execute(_LOG_INSERT, (rev, key, VALUE, self._created[i], prev, self._version[i] + 1))
            if db.execute(_CAS, (rev, key, prev)).rowcount != 1:
                raise RuntimeError(f"raw CAS on {key} at {prev} failed")
            self._revision, self._mod[i] = rev, rev
            self._version[i] += 1
        db.execute("COMMIT")
        return writes

    def close(self) -> None:
        self._db.close()


def timed_rate(step: Callable[[], int], warmup: float, seconds: float) -> float:
    """Writes/s of ``step`` (returns the writes it did) over ``seconds`` after ``warmup``."""
    until = time.perf_counter() + warmup
    while time.perf_counter() < until:
        step()
    done = 0
    start = now = time.perf_counter()
    while now < start + seconds:
        done += step()
        now = time.perf_counter()
    return done / (now - start)


def raw_rate(config: Config, batch: int) -> float:
    with scratch_db(config.base_dir) as path:
        raw = RawStore(path, RAW_KEYS)
        try:
            return timed_rate(lambda: raw.commit(batch), config.warmup, config.seconds)
        finally:
            raw.close()


async def handed_off_rate(raw: RawStore, warmup: float, seconds: float) -> float:
    """One commit per write, each handed from the event loop to a writer thread and answered
    with ``call_soon_threadsafe``: the bare cost of the handoff kubelite's writer also makes."""
    loop = asyncio.get_running_loop()
    inbox: queue.SimpleQueue[asyncio.Future[None] | None] = queue.SimpleQueue()

    def serve() -> None:
        while (future := inbox.get()) is not None:
            raw.commit(1)
            loop.call_soon_threadsafe(future.set_result, None)

    thread = threading.Thread(target=serve, name="bench-raw-writer")
    thread.start()

    async def write() -> None:
        future: asyncio.Future[None] = loop.create_future()
        inbox.put(future)
        await future

    try:
        until = time.perf_counter() + warmup
        while time.perf_counter() < until:
            await write()
        done = 0
        start = now = time.perf_counter()
        while now < start + seconds:
            await write()
            done += 1
            now = time.perf_counter()
        return done / (now - start)
    finally:
        inbox.put(None)
        await asyncio.to_thread(thread.join)


def raw_thread_rate(config: Config) -> float:
    with scratch_db(config.base_dir) as path:
        raw = RawStore(path, RAW_KEYS)
        try:
            return run_async(config.loop, handed_off_rate(raw, config.warmup, config.seconds))
        finally:
            raw.close()


# -- kubelite: CAS updates with N in flight ---------------------------------------------------


OPTIONS = StoreOptions(compaction_interval_seconds=0)  # durability "full": synchronous=FULL


async def open_bench_store(path: str) -> Store:
    return await open_store(f"sqlite://{path}", OPTIONS)


@dataclass(slots=True)
class Progress:
    done: int = 0
    stop: bool = False


async def cas_loop(store: Store, key: str, revision: int, progress: Progress) -> None:
    while not progress.stop:
        revision = await store.update(key, VALUE, revision)
        progress.done += 1


async def kubelite_cas_rate(path: str, in_flight: int, warmup: float, seconds: float) -> float:
    store = await open_bench_store(path)
    try:
        keys = [f"/bench/cas/{i:04d}" for i in range(in_flight)]
        revisions = await asyncio.gather(*(store.create(key, VALUE) for key in keys))
        progress = Progress()
        tasks = [
            asyncio.create_task(cas_loop(store, key, rev, progress))
            for key, rev in zip(keys, revisions, strict=True)
        ]
        await asyncio.sleep(warmup)
        done0, t0 = progress.done, time.perf_counter()
        await asyncio.sleep(seconds)
        done1, t1 = progress.done, time.perf_counter()
        progress.stop = True
        await asyncio.gather(*tasks)
        return (done1 - done0) / (t1 - t0)
    finally:
        await store.close()


def kubelite_rate(config: Config, in_flight: int, loop: str | None = None) -> float:
    with scratch_db(config.base_dir) as path:
        rate = kubelite_cas_rate(path, in_flight, config.warmup, config.seconds)
        return run_async(loop or config.loop, rate)


# -- the interleaved rounds -------------------------------------------------------------------


def measure(samples: dict[str, list[float]], label: str, run: Callable[[], float]) -> float:
    rate = run()
    samples.setdefault(label, []).append(rate)
    log(f"  {label:<46} {rate:>10,.0f} /s")
    return rate


def run_round(config: Config, samples: dict[str, list[float]]) -> None:
    """One of each measurement; each raw figure sits next to the kubelite figure it is compared
    with, so slow drift in the machine's speed hits both."""
    measure(samples, RAW_ONE, partial(raw_rate, config, 1))
    measure(samples, RAW_THREAD, partial(raw_thread_rate, config))
    measure(samples, kubelite_label(1), partial(kubelite_rate, config, 1))
    if config.loop != "asyncio":
        measure(samples, KUBELITE_ONE_ASYNCIO, partial(kubelite_rate, config, 1, "asyncio"))
    batched = [
        measure(samples, raw_batched_label(batch), partial(raw_rate, config, batch))
        for batch in config.raw_batches
    ]
    samples.setdefault(RAW_BEST, []).append(max(batched))
    for in_flight in sorted(IN_FLIGHT[1:], reverse=True):
        measure(samples, kubelite_label(in_flight), partial(kubelite_rate, config, in_flight))


# -- watch delivery latency -------------------------------------------------------------------


@dataclass(slots=True)
class WatcherLog:
    latencies: list[float] = field(default_factory=list)
    overflowed: bool = False


async def consume(watch: Watch, expected: int) -> WatcherLog:
    got = WatcherLog()
    try:
        async for event in watch:
            got.latencies.append(time.perf_counter() - STAMP.unpack_from(event.kv.value)[0])
            if len(got.latencies) == expected:
                break
    except WatchOverflow:
        got.overflowed = True
    return got


async def paced_write(
    store: Store, key: str, sent: float, previous: asyncio.Task[int] | None
) -> int:
    value = STAMP.pack(sent) + VALUE[STAMP.size :]
    if previous is None:
        return await store.create(key, value)
    return await store.update(key, value, await previous)


async def paced_writer(store: Store, total: int, rate: float) -> float:
    """Issue ``total`` writes on a fixed schedule of ``rate``/s without waiting for their commits
    (each key's write waits only for that key's previous one); returns the achieved issue rate."""
    last: dict[int, asyncio.Task[int]] = {}
    issued = 0
    start = time.perf_counter()
    while issued < total:
        delay = start + issued / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        now = time.perf_counter()
        while issued < total and start + issued / rate <= now:
            slot = issued % WATCH_KEYS
            key = f"{WATCH_PREFIX}{slot:04d}"
            last[slot] = asyncio.create_task(paced_write(store, key, now, last.get(slot)))
            issued += 1
    elapsed = time.perf_counter() - start
    await asyncio.gather(*last.values())
    return (total - 1) / elapsed if elapsed > 0 else float("nan")


@dataclass(frozen=True, slots=True)
class WatchResult:
    watchers: int
    target_rate: float
    achieved_rate: float
    writes: int
    received_min: int
    received_max: int
    overflowed: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    durability: str = OPTIONS.durability

    @property
    def complete(self) -> bool:
        return self.received_min == self.writes and not self.overflowed


def percentile(ordered: list[float], q: float) -> float:
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def watch_latency(path: str, seconds: float) -> WatchResult:
    store = await open_bench_store(path)
    total = int(WATCH_RATE * seconds)
    first = await store.current_revision() + 1
    watches = [store.watch(WATCH_PREFIX, first) for _ in range(WATCHERS)]
    try:
        for watch in watches:
            await watch.start()
        readers = [asyncio.create_task(consume(watch, total)) for watch in watches]
        achieved = await paced_writer(store, total, WATCH_RATE)
        done, _ = await asyncio.wait(readers, timeout=10 + seconds)
        logs = [task.result() for task in done]
    finally:
        for watch in watches:
            await watch.aclose()
        await store.close()
    ordered = sorted(lat for got in logs for lat in got.latencies)
    counts = [len(got.latencies) for got in logs] + [0] * (WATCHERS - len(logs))
    return WatchResult(
        watchers=WATCHERS,
        target_rate=WATCH_RATE,
        achieved_rate=achieved,
        writes=total,
        received_min=min(counts),
        received_max=max(counts),
        overflowed=sum(got.overflowed for got in logs),
        p50_ms=percentile(ordered, 0.50) * 1000,
        p99_ms=percentile(ordered, 0.99) * 1000,
        max_ms=(ordered[-1] if ordered else float("nan")) * 1000,
    )


def run_watch(config: Config) -> WatchResult:
    with scratch_db(config.base_dir) as path:
        result = run_async(config.loop, watch_latency(path, config.watch_seconds))
    log(
        f"  watch: p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms, "
        f"{result.achieved_rate:,.0f} writes/s"
    )
    return result


# -- the report -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Ratio:
    """``value`` is the ratio of the medians; ``rounds`` pairs each round's two figures."""

    name: str
    value: float
    rounds: list[float]
    target: float | None = None

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        return "PASS" if self.value >= self.target else "MISS"


def ratio(
    samples: dict[str, list[float]], name: str, top: str, bottom: str, target: float | None = None
) -> Ratio:
    value = statistics.median(samples[top]) / statistics.median(samples[bottom])
    rounds = [a / b for a, b in zip(samples[top], samples[bottom], strict=True)]
    return Ratio(name, value, rounds, target)


def ratios(samples: dict[str, list[float]]) -> list[Ratio]:
    """The two targets, the other in-flight levels against the best batching, then context: the
    same batch shape as kubelite@256, and what a bare writer-thread handoff costs."""
    found = [
        ratio(
            samples, "kubelite@1 / raw 1 commit per write", kubelite_label(1), RAW_ONE, TARGET_ONE
        )
    ]
    last = IN_FLIGHT[-1]
    for n in IN_FLIGHT[1:]:
        target = TARGET_MANY if n == last else None
        name = f"kubelite@{n} / raw best batched"
        found.append(ratio(samples, name, kubelite_label(n), RAW_BEST, target))
    same_shape = raw_batched_label(last)
    if same_shape in samples:
        name = f"kubelite@{last} / raw {last} per commit"
        found.append(ratio(samples, name, kubelite_label(last), same_shape))
    found.append(ratio(samples, "raw via a thread / raw 1 commit per write", RAW_THREAD, RAW_ONE))
    found.append(ratio(samples, "kubelite@1 / raw via a thread", kubelite_label(1), RAW_THREAD))
    if KUBELITE_ONE_ASYNCIO in samples:
        name = "kubelite@1 (stdlib loop) / raw 1 commit"
        found.append(ratio(samples, name, KUBELITE_ONE_ASYNCIO, RAW_ONE))
    return found


def filesystem_of(path: str) -> str:
    """The type of the filesystem holding ``path``, from /proc/mounts (Linux), else "?"."""
    best, fstype = "", "?"
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                _dev, mount, kind, *_ = line.split()
                inside = os.path.commonpath([os.path.realpath(path), mount]) == mount
                if inside and len(mount) > len(best):
                    best, fstype = mount, kind
    except OSError:
        pass
    return fstype


def machine(config: Config) -> dict[str, Any]:
    base = config.base_dir or tempfile.gettempdir()
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "db_dir": base,
        "db_fs": filesystem_of(base),
    }


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def labels(config: Config) -> list[str]:
    return [
        RAW_ONE,
        RAW_THREAD,
        *(raw_batched_label(b) for b in config.raw_batches),
        RAW_BEST,
        *(kubelite_label(n) for n in IN_FLIGHT),
        *([KUBELITE_ONE_ASYNCIO] if config.loop != "asyncio" else []),
    ]


def print_report(
    config: Config,
    samples: dict[str, list[float]],
    found: list[Ratio],
    watch: WatchResult,
    info: dict[str, Any],
) -> None:
    print(
        f"kubelite storage benchmark: {config.rounds} round(s) x {config.seconds:g} s per "
        f"figure, median of rounds, on {config.loop}"
    )
    print(
        f"machine: {info['cpus']} cpus, {info['platform']}, Python {info['python']}, "
        f"SQLite {info['sqlite']}, databases in {info['db_dir']} ({info['db_fs']})"
    )
    title = "durable CAS updates/s (1 KiB values, synchronous=FULL)"
    print(f"\n{title:<57}median      min      max")
    for label in labels(config):
        runs = samples[label]
        print(
            f"  {label:<52} {statistics.median(runs):>8,.0f} {min(runs):>8,.0f} {max(runs):>8,.0f}"
        )
    print(f"\n{'ratios':<49}median    per round")
    for r in found:
        spread = f"{min(r.rounds):.2f}..{max(r.rounds):.2f}"
        target = f"   target >= {r.target:.2f}  {r.verdict}" if r.target else ""
        print(f"  {r.name:<46} {r.value:>6.2f}   {spread:>10}{target}")
    everyone = "every watcher got every event" if watch.complete else "EVENTS MISSING"
    print(
        f"\nwatch delivery ({watch.durability} durability): {watch.watchers} watchers, "
        f"{watch.target_rate:,.0f} writes/s asked, {watch.achieved_rate:,.0f} achieved, "
        f"{watch.writes} writes"
    )
    print(
        f"  latency p50 {watch.p50_ms:.2f} ms, p99 {watch.p99_ms:.2f} ms, max {watch.max_ms:.2f} ms"
    )
    print(
        f"  received per watcher: {watch.received_min}..{watch.received_max} of {watch.writes}, "
        f"{watch.overflowed} overflowed: {everyone}"
    )
    print(f"\npeak RSS: {peak_rss_mib():.1f} MiB")


def json_report(
    config: Config,
    samples: dict[str, list[float]],
    found: list[Ratio],
    watch: WatchResult,
    info: dict[str, Any],
) -> dict[str, Any]:
    return {
        "config": asdict(config),
        "machine": info,
        "updates_per_second": {
            label: {"median": statistics.median(samples[label]), "runs": samples[label]}
            for label in labels(config)
        },
        "ratios": [{**asdict(r), "verdict": r.verdict} for r in found],
        "watch": {**asdict(watch), "complete": watch.complete},
        "peak_rss_mib": peak_rss_mib(),
    }


# -- main -------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> tuple[Config, bool]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of each measurement")
    parser.add_argument("--rounds", type=int, default=3, help="repeats of each measurement")
    parser.add_argument("--watch-seconds", type=float, default=5.0, help="length of watch run")
    parser.add_argument("--dir", default=None, help="where the databases go (a real disk)")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument(
        "--loop", choices=("uvloop", "asyncio"), default="uvloop", help="event loop to run on"
    )
    args = parser.parse_args(argv)
    if args.quick:
        config = Config(args.loop, 0.5, 0.1, 1, 1.0, (256,), args.dir)
    else:
        config = Config(
            args.loop, args.seconds, 0.5, args.rounds, args.watch_seconds, RAW_BATCHES, args.dir
        )
    return config, args.json


def main(argv: list[str] | None = None) -> int:
    config, as_json = parse_args(argv)
    info = machine(config)
    if info["db_fs"] in ("tmpfs", "ramfs"):
        log(f"warning: {info['db_dir']} is {info['db_fs']}: fsync is free there")
    samples: dict[str, list[float]] = {}
    for number in range(1, config.rounds + 1):
        log(f"round {number}/{config.rounds}")
        run_round(config, samples)
    watch = run_watch(config)
    found = ratios(samples)
    if as_json:
        print(json.dumps(json_report(config, samples, found, watch, info), indent=2))
    else:
        print_report(config, samples, found, watch, info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
