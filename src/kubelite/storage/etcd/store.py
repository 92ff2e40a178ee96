"""EtcdStore: the storage contract over an etcd cluster, with the transactions kube-apiserver
issues.

- create: ``If(mod_revision(k) == 0) Then(Put) Else(Get)``;
- update: ``If(mod_revision(k) == expected) Then(Put) Else(Get)``;
- delete: ``If(mod_revision(k) == expected) Then(DeleteRange prev_kv) Else(Get)``; an
  unconditional delete reads the key first and deletes that version (so that a retry can never
  delete a newer incarnation).

The Else branch returns the current value with the refusal, so a lost compare-and-swap costs no
extra read. Revisions are etcd's own. Reads are linearizable (quorum) Range requests, at a revision
when asked for one (point reads at the current revision are batched under load, see
:mod:`.reads`); ``current_revision`` is such a read too (the etcd versions here predate reliable
watch progress requests). Several kubelite servers may share one etcd: every decision is
made by etcd's compare, never by local state.

Writes to one key from this store are sent one after another, in the order they were issued (a
later write waits for the earlier one's answer); writes to different keys run concurrently. etcd
would otherwise be free to apply two in-flight requests in either order.

A write that fails with an unknown outcome (reset connection, deadline, leader change) is not
resent blindly: the key is re-read with a quorum read, and the write is sent again only if the key
still shows it was not applied; at most one of the two copies can then pass the compare. If the
key has changed (perhaps by this very write), or the re-sent copy loses its compare, the caller
gets ``Unavailable`` saying the outcome is unknown, as kube-apiserver answers with an etcd
timeout: never a false success and never a false ``Conflict``.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import grpc
from aetcd import rpc

from kubelite.storage.compaction import CompactionPolicy
from kubelite.storage.errors import (
    Compacted,
    Conflict,
    FutureRevision,
    KeyExists,
    NotFound,
    Unavailable,
    Unsupported,
)
from kubelite.storage.etcd.endpoints import (
    ATTEMPT_TIMEOUT,
    REQUIRE_LEADER,
    Endpoints,
    EtcdURL,
    Failure,
    backoff,
    classify,
    describe,
)
from kubelite.storage.etcd.keyspace import COMPACT_KEY, Keyspace
from kubelite.storage.etcd.reads import ReadBatcher
from kubelite.storage.etcd.watch import EtcdWatch
from kubelite.storage.interface import (
    HistoryEntry,
    KeyValue,
    ListResult,
    Store,
    StoreOptions,
    Watch,
    check_key,
    check_revision,
    check_value,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

# A raw etcd key-value (protobuf) or None: did a write leave no trace on it?
Unchanged = Callable[[Any], bool]

_MOD, _VERSION, _EQUAL = rpc.Compare.MOD, rpc.Compare.VERSION, rpc.Compare.EQUAL

# The health prober's key (kube's is path.Join("/", prefix, "health")), period and timeout
# (storagebackend's DefaultHealthcheckTimeout).
HEALTH_KEY = "/health"
PROBE_INTERVAL = 1.0
PROBE_TIMEOUT = 2.0


class EtcdStore(Store):
    """Open with ``await EtcdStore.open(EtcdURL.parse("h1:2379,h2:2379"))``."""

    def __init__(self, url: EtcdURL, options: StoreOptions) -> None:
        self.url = url
        self.endpoints = Endpoints(url.endpoints)
        self.keys = Keyspace(url.prefix)
        self.options = options
        self.compacted = 0  # the newest compaction known here (compact_rev_key, or etcd's word)
        self.watches: set[EtcdWatch] = set()
        self._compact_version = 0  # compact_rev_key's version as the compactor last saw it
        self._probe_version = 0  # compact_rev_key's version as the last probe saw it
        self._tails: dict[bytes, asyncio.Future[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._compaction_lock = asyncio.Lock()
        self._policy = CompactionPolicy(options.retention_seconds, options.min_retained_revisions)
        self._reads = ReadBatcher(self._range, self._read_txn)
        self._closed = False
        self._health_error: str | None = None

    @classmethod
    async def open(cls, url: EtcdURL, options: StoreOptions | None = None) -> EtcdStore:
        self = cls(url, options or StoreOptions())
        try:
            await self.endpoints.connect()
            await self._probe()  # fails with Unavailable when no member answers
        except BaseException:
            await self.endpoints.close()
            raise
        self._compact_version = self._probe_version
        self._spawn(self._watch_health())
        if self.options.compaction_interval_seconds > 0:
            self._spawn(self._auto_compact())
        return self

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _deadline(self) -> float:
        return self.endpoints.deadline()

    # -- health --------------------------------------------------------------------------------

    async def check(self) -> None:
        """kube-apiserver's etcd health check: the last probe's answer (a quorum read of
        ``<prefix>/health`` every ``PROBE_INTERVAL``, each given ``PROBE_TIMEOUT``, as
        storagebackend/factory/etcd3.go's prober with its 2 s health check timeout)."""
        if self._closed:
            raise Unavailable("closed")
        if self._health_error is not None:
            raise Unavailable(self._health_error)

    async def _watch_health(self) -> None:
        while True:
            self._health_error = await self._probe_health()
            await asyncio.sleep(PROBE_INTERVAL)

    async def _probe_health(self) -> str | None:
        """One try on the current member (failing over when it does not answer); None when
        it answered, else kube's error text."""
        member = await self.endpoints.current()
        request = rpc.RangeRequest(key=self.keys.key(HEALTH_KEY))
        try:
            await member.kv.Range(request, timeout=PROBE_TIMEOUT, metadata=REQUIRE_LEADER)
        except grpc.aio.AioRpcError as exc:
            self.endpoints.failed(member, exc)
            if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                return "error getting data from etcd: context deadline exceeded"
            return f"error getting data from etcd: {exc.details() or exc.code().name}"
        self.endpoints.answered()
        return None

    # -- reads ---------------------------------------------------------------------------------

    async def _range(self, request: Any, what: str) -> Any:
        if self._closed:
            raise Unavailable("store is closed")
        return await self.endpoints.retrying(
            lambda m, t: m.kv.Range(request, timeout=t, metadata=REQUIRE_LEADER),
            what,
            self._deadline(),
        )

    async def _read_txn(self, request: Any, what: str) -> Any:
        """A read-only Txn (several Ranges answered from one linearizable read)."""
        return await self.endpoints.retrying(
            lambda m, t: m.kv.Txn(request, timeout=t, metadata=REQUIRE_LEADER),
            what,
            self._deadline(),
        )

    async def _read(self, request: Any, revision: int, what: str) -> Any:
        """A Range at ``revision`` (0: now), with etcd's refusals mapped to the contract."""
        if revision and revision < self.compacted:
            raise Compacted(revision, self.compacted)
        try:
            return await self._range(request, what)
        except grpc.aio.AioRpcError as exc:
            details = exc.details() or ""
            if "compacted" in details:
                await self._probe()
                raise Compacted(revision, max(self.compacted, revision + 1))
            if "future revision" in details:
                raise FutureRevision(revision, await self._probe())
            raise Unavailable(f"{what}: etcd refused: {describe(exc)}")

    async def get(self, key: str, revision: int | None = None) -> KeyValue | None:
        check_key(key)
        check_revision(revision)
        if not revision:
            if self._closed:
                raise Unavailable("store is closed")
            try:
                kv = await self._reads.get(self.keys.key(key))
            except grpc.aio.AioRpcError as exc:
                raise Unavailable(f"get {key!r}: etcd refused: {describe(exc)}")
            return self.keys.kv(kv) if kv is not None else None
        request = rpc.RangeRequest(key=self.keys.key(key), revision=revision)
        response = await self._read(request, revision, f"get {key!r}")
        return self.keys.kv(response.kvs[0]) if response.kvs else None

    async def list(
        self,
        prefix: str,
        revision: int | None = None,
        limit: int | None = None,
        start_after: str | None = None,
        *,
        count: bool = False,
    ) -> ListResult:
        check_revision(revision)
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be positive, not {limit}")
        start, end = self.keys.range(prefix, start_after)
        request = rpc.RangeRequest(
            key=start, range_end=end, revision=revision or 0, limit=limit or 0
        )
        response = await self._read(request, revision or 0, f"list {prefix!r}")
        items = [self.keys.kv(kv) for kv in response.kvs]
        # etcd's count is the whole range's at the read's revision, whatever the limit: what
        # follows the page is the rest of it, at no extra cost.
        remaining = int(response.count) - len(items) if count else None
        revision = revision or int(response.header.revision)
        return ListResult(items, revision, bool(response.more), remaining)

    async def current_revision(self) -> int:
        return await self._probe()

    async def compacted_revision(self) -> int:
        await self._probe()
        return self.compacted

    async def _probe(self) -> int:
        """One quorum read of compact_rev_key: etcd's current revision (the response header), and
        the newest compaction any server started (the key's value)."""
        response = await self._range(rpc.RangeRequest(key=COMPACT_KEY), "read the revision")
        if response.kvs:
            kv = response.kvs[0]
            self.note_compacted(int(kv.value))
            self._probe_version = kv.version
        return int(response.header.revision)

    async def history(self, key: str) -> builtins.list[HistoryEntry]:
        """Not designed over etcd yet: etcd's own history is what compaction removes, and a
        second copy would need transactions spanning two keyspaces (docs/guarantees.md)."""
        check_key(key)
        raise Unsupported(
            "revision history beyond compaction is kept only by the SQLite store, not over etcd"
        )

    def note_compacted(self, revision: int) -> None:
        if revision > self.compacted:
            self.compacted = revision

    # -- writes --------------------------------------------------------------------------------

    async def create(self, key: str, value: bytes) -> int:
        check_key(key)
        check_value(value)
        k = self.keys.key(key)
        put = rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=value))
        response = await self._ordered(k, lambda: self._cas(k, 0, put))
        if response.succeeded:
            return int(response.header.revision)
        raise KeyExists(key, self.keys.kv(response.responses[0].response_range.kvs[0]))

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> int:
        check_key(key)
        check_value(value)
        expected = expected_mod_revision
        if expected < 1:  # mod_revision 0 would match an absent key and create it
            raise await self._refusal(key, expected)
        k = self.keys.key(key)
        put = rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=value))
        response = await self._ordered(k, lambda: self._cas(k, expected, put))
        if response.succeeded:
            return int(response.header.revision)
        raise self._failed(key, expected, response)

    async def delete(
        self, key: str, expected_mod_revision: int | None = None
    ) -> tuple[int, KeyValue]:
        check_key(key)
        expected = expected_mod_revision
        if expected is not None and expected < 1:
            raise await self._refusal(key, expected)
        k = self.keys.key(key)
        op = rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=k, prev_kv=True))

        async def delete() -> tuple[int, KeyValue]:
            want = expected
            if want is None:  # delete the version read here, in turn after earlier writes
                current = await self.get(key)
                if current is None:
                    raise NotFound(key)
                want = current.mod_revision
            while True:
                response = await self._cas(k, want, op)
                if response.succeeded:
                    prev = response.responses[0].response_delete_range.prev_kvs[0]
                    return int(response.header.revision), self.keys.kv(prev)
                failure = self._failed(key, want, response)
                if expected is not None or not isinstance(failure, Conflict):
                    raise failure
                want = failure.current.mod_revision

        return await self._ordered(k, delete)

    def _failed(self, key: str, expected: int, response: Any) -> Conflict | NotFound:
        kvs = response.responses[0].response_range.kvs
        return Conflict(key, expected, self.keys.kv(kvs[0])) if kvs else NotFound(key)

    async def _refusal(self, key: str, expected: int) -> Exception:
        current = await self.get(key)
        return NotFound(key) if current is None else Conflict(key, expected, current)

    async def _cas(self, k: bytes, expected: int, then: Any) -> Any:
        """``If(mod_revision(k) == expected) Then(then) Else(Get(k))``, sent by :meth:`_txn`."""
        txn = rpc.TxnRequest(
            compare=[rpc.Compare(key=k, target=_MOD, result=_EQUAL, mod_revision=expected)],
            success=[then],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=k))],
        )
        if expected == 0:
            return await self._txn(k, txn, lambda kv: kv is None)
        return await self._txn(k, txn, lambda kv: kv is not None and kv.mod_revision == expected)

    async def _ordered(self, key: bytes, write: Callable[[], Awaitable[T]]) -> T:
        """Run ``write`` once the previous write to ``key`` from this store has its answer."""
        if self._closed:
            raise Unavailable("store is closed")
        loop = asyncio.get_running_loop()
        previous = self._tails.get(key)
        mine: asyncio.Future[None] = loop.create_future()
        self._tails[key] = mine
        try:
            if previous is not None and not previous.done():
                await asyncio.shield(previous)
            return await write()
        finally:
            self._release(key, previous, mine)

    def _release(
        self, key: bytes, previous: asyncio.Future[None] | None, mine: asyncio.Future[None]
    ) -> None:
        def done(_: object = None) -> None:
            if not mine.done():
                mine.set_result(None)
            if self._tails.get(key) is mine:
                del self._tails[key]

        if previous is not None and not previous.done():  # cancelled while waiting: keep order
            previous.add_done_callback(done)
        else:
            done()

    async def _txn(self, key: bytes, txn: Any, unchanged: Unchanged) -> Any:
        """Send a compare-and-swap; fail over and retry without ever resending it blindly."""
        loop = asyncio.get_running_loop()
        deadline = self._deadline()
        doubt: BaseException | None = None  # a copy's fate is unknown: re-read before resending
        doubted: BaseException | None = None  # the first such failure, kept after a resend
        attempt = 0
        while True:
            if doubt is not None:
                current = await self._reread(key, doubt, deadline)
                if not unchanged(current):
                    raise _unknown(key, doubt, "the key has changed since")
                doubt = None  # not applied as of a quorum read: safe to send again
            if self.endpoints.closed:
                raise Unavailable("store is closed")
            member = await self.endpoints.current()
            timeout = min(ATTEMPT_TIMEOUT, max(deadline - loop.time(), 0.01))
            try:
                response = await self.endpoints.send(
                    member.kv.Txn(txn, timeout=timeout, metadata=REQUIRE_LEADER)
                )
            except grpc.aio.AioRpcError as exc:
                failure = classify(exc)
                if failure is Failure.REJECTED:
                    self.endpoints.answered()
                    raise Unavailable(f"etcd refused the write of {key!r}: {describe(exc)}")
                self.endpoints.failed(member, exc)
                if failure is Failure.IN_DOUBT:
                    doubt = doubted = exc
                if self.endpoints.give_up(deadline):
                    if doubted is not None:  # an earlier copy may still be applied
                        raise _unknown(key, doubted, "no etcd member answered in time")
                    raise Unavailable(f"write of {key!r} not applied: {describe(exc)}")
                await backoff(attempt)
                attempt += 1
                continue
            self.endpoints.answered()
            if doubted is not None and not response.succeeded:
                # The re-sent copy lost its compare: perhaps to the first copy, applied late.
                raise _unknown(key, doubted, "a re-sent copy lost its compare")
            return response

    async def _reread(self, key: bytes, doubt: BaseException, deadline: float) -> Any:
        try:
            response = await self.endpoints.retrying(
                lambda m, t: m.kv.Range(
                    rpc.RangeRequest(key=key), timeout=t, metadata=REQUIRE_LEADER
                ),
                "re-read after an unanswered write",
                deadline,
            )
        except (Unavailable, grpc.aio.AioRpcError):
            raise _unknown(key, doubt, "the key could not be re-read")
        return response.kvs[0] if response.kvs else None

    # -- watch ---------------------------------------------------------------------------------

    def watch(self, prefix: str, start_revision: int) -> Watch:
        if start_revision < 1:
            raise ValueError(f"start_revision must be at least 1, not {start_revision}")
        return EtcdWatch(self, prefix, start_revision)

    # -- compaction ----------------------------------------------------------------------------

    async def compact(self, revision: int) -> None:
        async with self._compaction_lock:
            while True:
                current = await self._probe()
                if revision <= self.compacted:
                    raise Compacted(revision, self.compacted)
                if revision > current:
                    raise FutureRevision(revision, current)
                if await self._claim(revision, self._probe_version):
                    break
            await self._compact(revision)

    async def _claim(self, revision: int, version: int) -> bool:
        """kube-apiserver's protocol: ``If(version(compact_rev_key) == version)
        Then(Put(compact_rev_key, revision)) Else(Get)``. Of several servers that saw the same
        version, one wins; the others learn the new version and skip this interval."""
        op = rpc.RequestOp(
            request_put=rpc.PutRequest(key=COMPACT_KEY, value=str(revision).encode())
        )
        txn = rpc.TxnRequest(
            compare=[rpc.Compare(key=COMPACT_KEY, target=_VERSION, result=_EQUAL, version=version)],
            success=[op],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=COMPACT_KEY))],
        )
        response = await self._ordered(
            COMPACT_KEY,
            lambda: self._txn(
                COMPACT_KEY, txn, lambda kv: (kv.version if kv is not None else 0) == version
            ),
        )
        if response.succeeded:
            self._compact_version = version + 1
            return True
        kvs = response.responses[0].response_range.kvs
        if kvs:
            self._compact_version = kvs[0].version
            self.note_compacted(int(kvs[0].value))
        return False

    async def _compact(self, revision: int) -> None:
        request = rpc.CompactionRequest(revision=revision)
        try:
            await self.endpoints.retrying(
                lambda m, t: m.kv.Compact(request, timeout=t, metadata=REQUIRE_LEADER),
                f"compact to {revision}",
                self._deadline(),
            )
        except grpc.aio.AioRpcError as exc:
            if "compacted" not in (exc.details() or ""):  # already there: nothing to do
                raise Unavailable(f"etcd refused to compact to {revision}: {describe(exc)}")
        self.note_compacted(revision)
        log.info("compacted etcd to revision %d", revision)

    async def compaction_tick(self) -> int | None:
        """One interval of automatic compaction: compact to what the policy allows, unless
        another server sharing this etcd has compacted since this one last tried (the version
        compare in :meth:`_claim` decides). Returns the revision compacted, or None."""
        current = await self._probe()
        target = self._policy.target(time.monotonic(), current, self.compacted)
        if target is None or not await self._claim(target, self._compact_version):
            return None
        await self._compact(target)
        return target

    async def _auto_compact(self) -> None:
        while True:
            await asyncio.sleep(self.options.compaction_interval_seconds)
            try:
                await self.compaction_tick()
            except Unavailable as exc:
                log.warning("automatic compaction skipped: %s", exc)

    # -- closing -------------------------------------------------------------------------------

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True  # new writes are refused; those already issued are finished
        pending = [f for f in self._tails.values() if not f.done()]
        if pending:
            await asyncio.wait(pending)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for watch in list(self.watches):
            await watch.end(Unavailable("store is closed"))
        self._reads.close()
        await self.endpoints.close()


def _unknown(key: bytes, doubt: BaseException, why: str) -> Unavailable:
    return Unavailable(
        f"write of {key.decode(errors='replace')!r}: outcome unknown ({describe(doubt)}; {why}); "
        "it may or may not have been applied: read the key again"
    )


__all__ = ["EtcdStore"]
