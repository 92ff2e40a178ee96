"""The watch cache: one store watch per kind shared by every watcher, resume points, 410s,
selector transitions, bookmarks, watch-list, slow watchers, recovery and close."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import pytest

from kubelite.api.catalogue import ResourceInfo, load_builtin_catalogue
from kubelite.api.errors import APIError, status_body
from kubelite.api.kinds import new_registry
from kubelite.api.machinery import listing
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.watchcache import WatchCache, WatchCacheSet
from kubelite.api.machinery.watchevents import WatchEvent
from kubelite.api.machinery.watchoptions import validate_watch_options
from kubelite.storage import Store, StoreOptions, open_store

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def infos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ResourceInfo]:
    catalogue = load_builtin_catalogue(tmp_path_factory.mktemp("cache"))
    out = {}
    for plural in ("configmaps", "namespaces"):
        found = catalogue.lookup("", "v1", plural)
        assert found is not None
        out[plural] = found
    return out


@pytest.fixture
def cm(infos: dict[str, ResourceInfo]) -> ResourceInfo:
    return infos["configmaps"]


@pytest.fixture
async def registry(store: Store, infos: dict[str, ResourceInfo]) -> Registry:
    reg = new_registry(store, load_builtin_catalogue())
    for ns in ("default", "other"):
        await reg.create(infos["namespaces"], None, {"metadata": {"name": ns}})
    return reg


@pytest.fixture
async def caches(store: Store) -> AsyncIterator[WatchCacheSet]:
    cs = WatchCacheSet(store, bookmark_interval=0.05)
    try:
        yield cs
    finally:
        await cs.close()


async def take(events: AsyncGenerator[WatchEvent, None], n: int, seconds: float = 5) -> list[Any]:
    out: list[Any] = []
    async with asyncio.timeout(seconds):
        while len(out) < n:
            event = await anext(events)
            if event.type != "BOOKMARK":
                out.append(event)
    return out


def summary(events: list[WatchEvent]) -> list[tuple[str, str, int]]:
    return [(e.type, e.object["metadata"]["name"], e.revision) for e in events]


async def make(
    reg: Registry, info: ResourceInfo, name: str, ns: str = "default", **labels: str
) -> int:
    body: Obj = {"metadata": {"name": name, "labels": labels}, "data": {"v": "0"}}
    obj = await reg.create(info, ns, body)
    return int(obj["metadata"]["resourceVersion"])


async def change(
    reg: Registry, info: ResourceInfo, name: str, ns: str = "default", **kw: Any
) -> int:
    current = await reg.get(info, ns, name)
    current.setdefault("data", {})["v"] = str(int(current["data"]["v"]) + 1)
    if "labels" in kw:
        current["metadata"]["labels"] = kw["labels"]
    obj, _ = await reg.update(info, ns, name, current)
    return int(obj["metadata"]["resourceVersion"])


async def test_initial_added_then_live_in_order(
    registry: Registry, caches: WatchCacheSet, cm: ResourceInfo
) -> None:
    ra = await make(registry, cm, "a")
    rb = await make(registry, cm, "b")
    events = caches.get(cm).watch("default", None, None)
    assert summary(await take(events, 2)) == [("ADDED", "a", ra), ("ADDED", "b", rb)]
    r1 = await change(registry, cm, "a")
    await registry.delete(cm, "default", "b")
    r2 = await registry.store.current_revision()  # the deletion's revision
    got = summary(await take(events, 2))
    assert got == [("MODIFIED", "a", r1), ("DELETED", "b", r2)]
    assert got[1][2] > got[0][2]
    await events.aclose()
    assert caches.get(cm).watcher_count == 0


async def test_resume_exactly_after_rv(
    registry: Registry, caches: WatchCacheSet, cm: ResourceInfo
) -> None:
    await make(registry, cm, "a")
    first = caches.get(cm).watch("default", None, None)  # starts the cache
    await take(first, 1)
    revs = [await change(registry, cm, "a") for _ in range(5)]
    events = caches.get(cm).watch("default", revs[1], None)
    got = await take(events, 3)
    assert [e.revision for e in got] == revs[2:]
    assert [e.object["metadata"]["resourceVersion"] for e in got] == [str(r) for r in revs[2:]]
    assert {e.type for e in got} == {"MODIFIED"}
    # A future RV is accepted and waits for it.
    future = caches.get(cm).watch("default", revs[-1] + 2, None)
    waiting = asyncio.ensure_future(take(future, 1))
    later = [await change(registry, cm, "a") for _ in range(3)]
    assert [e.revision for e in await waiting] == [later[2]]
    for gen in (first, events, future):
        await gen.aclose()


async def test_thousand_watchers_share_one_store_watch(
    store: Store, registry: Registry, caches: WatchCacheSet, cm: ResourceInfo
) -> None:
    hub = store._hub  # type: ignore[attr-defined]
    before = hub.watcher_count
    rev = await make(registry, cm, "a")
    gens = [caches.get(cm).watch("default", rev, None) for _ in range(1000)]
    tasks = [asyncio.ensure_future(take(g, 1)) for g in gens]
    await asyncio.sleep(0.1)
    assert caches.get(cm).watcher_count == 1000
    assert hub.watcher_count == before + 1
    r = await change(registry, cm, "a")
    results = await asyncio.gather(*tasks)
    assert all(summary(res) == [("MODIFIED", "a", r)] for res in results)
    assert len({id(res[0].object) for res in results}) == 1  # decoded once, shared
    for g in gens:
        await g.aclose()
    assert hub.watcher_count == before + 1
    assert len(caches) == 1


async def test_too_old_rv_is_410_with_the_exact_message(
    store: Store, registry: Registry, caches: WatchCacheSet, cm: ResourceInfo
) -> None:
    await make(registry, cm, "a")
    for _ in range(5):
        await change(registry, cm, "a")
    compacted = await store.current_revision() - 1
    await store.compact(compacted)
    events = caches.get(cm).watch("default", 2, None)
    with pytest.raises(APIError) as info:
        await anext(events)
    assert info.value.code == 410
    assert status_body(info.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"too old resource version: 2 ({compacted})",
        "reason": "Expired",
        "code": 410,
    }


async def test_rv_older_than_window_falls_back_to_store_history(
    store: Store, registry: Registry, cm: ResourceInfo
) -> None:
    caches = WatchCacheSet(store, capacity=2, min_age_seconds=0, bookmark_interval=0)
    try:
        r0 = await make(registry, cm, "a")
        live = caches.get(cm).watch("default", r0, None)
        reading = asyncio.ensure_future(take(live, 10))
        await asyncio.sleep(0.05)
        revs = [await change(registry, cm, "a") for _ in range(10)]
        assert [e.revision for e in await reading] == revs
        cache = caches.get(cm)
        assert cache.window_size < 10
        assert cache.floor > r0
        hub = store._hub  # type: ignore[attr-defined]
        old = cache.watch("default", r0, None)
        assert [e.revision for e in await take(old, 10)] == revs
        assert hub.watcher_count == 2  # the fallback watcher has a store watch of its own
        await old.aclose()
        await live.aclose()
        assert hub.watcher_count == 1
        # A watcher the window trims past (a long replay) carries on from the store too.
        late = cache.watch("default", await store.current_revision(), None)
        more = [await change(registry, cm, "a") for _ in range(10)]
        assert [e.revision for e in await take(late, 10)] == more
        await late.aclose()
    finally:
        await caches.close()


async def test_selector_transitions(
    registry: Registry, caches: WatchCacheSet, cm: ResourceInfo
) -> None:
    rev = await make(registry, cm, "a")

    def matches(obj: Obj) -> bool:
        return bool((obj["metadata"].get("labels") or {}).get("app") == "x")

    events = caches.get(cm).watch("default", rev, matches)
    await change(registry, cm, "a")  # not matching before or after: nothing
    r_in = await change(registry, cm, "a", labels={"app": "x"})
    r_mod = await change(registry, cm, "a", labels={"app": "x"})
    r_out = await change(registry, cm, "a", labels={"app": "y"})
    got = await take(events, 3)
    assert summary(got) == [("ADDED", "a", r_in), ("MODIFIED", "a", r_mod), ("DELETED", "a", r_out)]
    gone = got[2].object
    assert gone["metadata"]["labels"] == {"app": "x"}  # the prior content ...
    assert gone["metadata"]["resourceVersion"] == str(r_out)  # ... at the event's RV
    await events.aclose()


async def test_namespace_and_name_filtering(
    registry: Registry, caches: WatchCacheSet, cm: ResourceInfo
) -> None:
    rev = await make(registry, cm, "a")
    cache = caches.get(cm)
    one_ns = cache.watch("other", rev, None)
    all_ns = cache.watch(None, rev, None)
    named = cache.watch("default", rev, lambda o: o["metadata"]["name"] == "b")
    ra = await make(registry, cm, "a", ns="other")
    rb = await make(registry, cm, "b")
    assert summary(await take(one_ns, 1)) == [("ADDED", "a", ra)]
    assert summary(await take(all_ns, 2)) == [("ADDED", "a", ra), ("ADDED", "b", rb)]
    assert summary(await take(named, 1)) == [("ADDED", "b", rb)]
    for g in (one_ns, all_ns, named):
        await g.aclose()


async def test_bookmarks(registry: Registry, caches: WatchCacheSet, cm: ResourceInfo) -> None:
    rev = await make(registry, cm, "a")
    events = caches.get(cm).watch("default", rev, None, allow_bookmarks=True)
    async with asyncio.timeout(2):
        first = await anext(events)
    assert first.type == "BOOKMARK"
    assert first.object == {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": str(rev)},
    }
    # An event in another namespace advances the bookmark past what this watcher received.
    other = await make(registry, cm, "z", ns="other")
    async with asyncio.timeout(2):
        while (event := await anext(events)).revision < other:
            assert event.type == "BOOKMARK"
    assert event.type == "BOOKMARK"
    assert event.object["metadata"]["resourceVersion"] == str(other)
    await events.aclose()
    quiet = caches.get(cm).watch("default", rev, None)  # bookmarks not allowed: none
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.3):
            await anext(quiet)
    await quiet.aclose()


async def test_send_initial_events(
    store: Store, registry: Registry, caches: WatchCacheSet, cm: ResourceInfo
) -> None:
    ra = await make(registry, cm, "a")
    rb = await make(registry, cm, "b")
    snapshot = await store.current_revision()
    cache = caches.get(cm)
    events = cache.watch("default", ra, None, send_initial_events=True, allow_bookmarks=True)
    got = [await anext(events) for _ in range(3)]
    assert summary(got[:2]) == [("ADDED", "a", ra), ("ADDED", "b", rb)]
    assert got[2].type == "BOOKMARK"
    assert got[2].object["metadata"] == {
        "resourceVersion": str(snapshot),
        "annotations": {"k8s.io/initial-events-end": "true"},
    }
    r = await change(registry, cm, "a")
    assert summary(await take(events, 1)) == [("MODIFIED", "a", r)]
    await events.aclose()
    # sendInitialEvents=false: no ADDED, only what happens next.
    none = cache.watch("default", None, None, send_initial_events=False)
    task = asyncio.ensure_future(take(none, 1))
    await asyncio.sleep(0.05)
    r = await change(registry, cm, "b")
    assert summary(await task) == [("MODIFIED", "b", r)]
    await none.aclose()


async def test_send_initial_events_future_rv_times_out_with_504(
    store: Store, caches: WatchCacheSet, cm: ResourceInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "WAIT_FOR_REVISION_SECONDS", 0.2)
    current = await store.current_revision()
    events = caches.get(cm).watch(None, current + 100, None, send_initial_events=True)
    with pytest.raises(APIError) as info:
        await anext(events)
    assert info.value.code == 504
    assert info.value.message == (
        f"Timeout: Too large resource version: {current + 100}, current: {current}"
    )


async def test_slow_watcher_is_ended_without_affecting_others(
    store: Store, registry: Registry, cm: ResourceInfo
) -> None:
    caches = WatchCacheSet(store, max_lag=5, bookmark_interval=0)
    try:
        rev = await make(registry, cm, "a")
        cache = caches.get(cm)
        slow = cache.watch("default", rev, None)
        fast = cache.watch("default", rev, None)
        first = await change(registry, cm, "a")
        assert [e.revision for e in await take(slow, 1)] == [first]
        reading = asyncio.ensure_future(take(fast, 20))
        revs = [first] + [await change(registry, cm, "a") for _ in range(19)]
        assert [e.revision for e in await reading] == revs
        assert [e async for e in slow] == []  # ended at its next step, no event lost silently
        assert cache.ended_slow == 1
        r = await change(registry, cm, "a")
        assert [e.revision for e in await take(fast, 1)] == [r]
        await fast.aclose()
    finally:
        await caches.close()


async def test_store_watch_overflow_is_recovered_without_a_gap(cm: ResourceInfo) -> None:
    store = await open_store(
        "sqlite://", StoreOptions(compaction_interval_seconds=0, watch_queue_size=4)
    )
    caches = WatchCacheSet(store, bookmark_interval=0)
    try:
        catalogue = load_builtin_catalogue()
        ns = catalogue.lookup("", "v1", "namespaces")
        assert ns is not None
        reg = new_registry(store, load_builtin_catalogue())
        await reg.create(ns, None, {"metadata": {"name": "default"}})
        rev = await store.current_revision()
        events = caches.get(cm).watch("default", rev, None)
        pending = asyncio.ensure_future(take(events, 200))
        await asyncio.sleep(0.05)
        bodies = [{"metadata": {"name": f"cm{i}"}} for i in range(200)]
        created = await asyncio.gather(*(reg.create(cm, "default", b) for b in bodies))
        got = await pending
        assert sorted(e.revision for e in got) == [e.revision for e in got]
        assert {e.object["metadata"]["name"] for e in got} == {
            c["metadata"]["name"] for c in created
        }
        assert store._hub.watcher_count == 1  # type: ignore[attr-defined]
        await events.aclose()
    finally:
        await caches.close()
        await store.close()


async def test_compacted_restart_ends_watchers_with_410(
    registry: Registry, caches: WatchCacheSet, cm: ResourceInfo
) -> None:
    rev = await make(registry, cm, "a")
    cache = caches.get(cm)
    events = cache.watch("default", rev, None)
    r = await change(registry, cm, "a")
    assert [e.revision for e in await take(events, 1)] == [r]
    await cache._restart()  # what the feeder does when its resume point was compacted
    with pytest.raises(APIError) as info:
        await anext(events)
    assert info.value.code == 410
    assert info.value.message == f"too old resource version: {r} ({cache.floor})"
    # New watchers are served by the restarted window.
    fresh = cache.watch("default", cache.floor, None)
    r2 = await change(registry, cm, "a")
    assert [e.revision for e in await take(fresh, 1)] == [r2]
    await fresh.aclose()


async def test_close_ends_every_watcher_and_the_store_watch(
    store: Store, registry: Registry, cm: ResourceInfo
) -> None:
    caches = WatchCacheSet(store)
    rev = await make(registry, cm, "a")
    gens = [caches.get(cm).watch("default", rev, None) for _ in range(10)]
    tasks = [asyncio.ensure_future(take(g, 1)) for g in gens]
    await asyncio.sleep(0.05)
    assert store._hub.watcher_count == 1  # type: ignore[attr-defined]
    await caches.close()
    for task in tasks:
        with pytest.raises(StopAsyncIteration):
            await task
    assert store._hub.watcher_count == 0  # type: ignore[attr-defined]
    assert caches.get(cm).closed


def test_watch_list_option_errors() -> None:
    validate_watch_options(True, "NotOlderThan")
    validate_watch_options(None, "")

    def message(sie: bool | None, rvm: str, **kw: Any) -> str:
        with pytest.raises(APIError) as info:
            validate_watch_options(sie, rvm, **kw)
        assert info.value.code == 422
        assert info.value.reason == "Invalid"
        return info.value.message

    head = 'ListOptions.meta.k8s.io "" is invalid: '
    assert message(True, "") == head + (
        "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
        "resourceVersionMatch to NotOlderThan"
    )
    assert message(None, "NotOlderThan") == head + (
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
        "sendInitialEvents is provided"
    )
    assert message(True, "NotOlderThan", watch_list_enabled=False) == head + (
        "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the "
        "WatchList feature gate is enabled"
    )
    assert message(True, "Exact") == head + (
        "[resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
        "resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "
        '"Exact": supported values: "NotOlderThan"]'
    )
    with pytest.raises(APIError) as info:
        validate_watch_options(True, "")
    assert status_body(info.value)["details"] == {
        "group": "meta.k8s.io",
        "kind": "ListOptions",
        "causes": [
            {
                "reason": "FieldValueForbidden",
                "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch "
                "to NotOlderThan",
                "field": "resourceVersionMatch",
            }
        ],
    }


async def test_watch_cache_class_is_usable_alone(store: Store, cm: ResourceInfo) -> None:
    cache = WatchCache(store, cm, bookmark_interval=0)
    await cache.start()
    assert cache.started
    await cache.close()
