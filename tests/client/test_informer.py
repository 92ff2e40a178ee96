"""The Informer against a real server (HTTPS) and in process: its cache equals the server after
random writes and deletes, and again after a forced 410 (history compacted while it was away);
watch-list when offered, list+watch when refused; reconnect with backoff; streams that end
resume without a relist; bookmarks advance it; resync; handlers see every change."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import orjson
import pytest
from client_harness import NOT_ROOT_CA, TOKEN, configmap, eventually, in_process_app

from kubelite.client import (
    ALL_NAMESPACES,
    AsyncClient,
    Informer,
    by_namespace,
    key_of,
    resource_version,
)

AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def server_state(client: AsyncClient, informer: Informer) -> dict[str, str]:
    """What the server holds of what ``informer`` follows."""
    listing = await client.list(
        "v1",
        "ConfigMap",
        informer.namespace,
        label_selector=informer.label_selector,
        field_selector=informer.field_selector,
    )
    return {key_of(item): resource_version(item) for item in listing["items"]}


def cache_state(informer: Informer) -> dict[str, str]:
    return {key_of(obj): resource_version(obj) for obj in informer.cache.objects()}


async def converged(client: AsyncClient, informer: Informer, mirror: dict[str, str]) -> None:
    async def same() -> bool:
        expected = await server_state(client, informer)
        return cache_state(informer) == expected and mirror == expected

    await eventually(same)


def mirrored(informer: Informer) -> dict[str, str]:
    """A dict kept by the handlers alone: proves they saw every add, update and delete."""
    mirror: dict[str, str] = {}

    def put(obj: dict[str, Any]) -> None:
        mirror[key_of(obj)] = resource_version(obj)

    informer.add_handlers(
        on_add=put,
        on_update=lambda old, new: put(new),
        on_delete=lambda obj: mirror.pop(key_of(obj), None),
    )
    return mirror


async def random_writes(client: AsyncClient, rng: random.Random, count: int, tag: str) -> str:
    """Creates, updates and deletes across two namespaces; returns the last write's RV."""
    last = ""
    for i in range(count):
        namespace = rng.choice(["default", "team"])
        name = f"cm-{rng.randrange(15)}"
        action = rng.random()
        try:
            if action < 0.5:
                obj = await client.update(
                    configmap(name, namespace),
                    lambda cm, i=i: cm.update(data={"v": str(i)}),
                )
            elif action < 0.75:
                obj = await client.create(configmap(f"new-{tag}-{i}", namespace))
            else:
                obj = await client.delete("v1", "ConfigMap", name, namespace)
        except Exception as exc:  # NotFound for an absent name: the test picks names at random
            if getattr(exc, "code", None) != 404:
                raise
            continue
        last = resource_version(obj) or last
    return last


@pytest.mark.parametrize("watch_list", [True, False], ids=["watch-list", "list-watch"])
async def test_cache_equals_server_after_random_writes_deletes_and_a_forced_410(
    aclient: AsyncClient, watch_list: bool
) -> None:
    await aclient.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    for i in range(15):
        await aclient.create(configmap(f"cm-{i}", "default"))
        await aclient.create(configmap(f"cm-{i}", "team"))
    rng = random.Random(5)
    informer = Informer(
        aclient,
        "v1",
        "ConfigMap",
        ALL_NAMESPACES,
        use_watch_list=watch_list,
        indexers={"namespace": by_namespace},
        page_size=7,
    )
    mirror = mirrored(informer)
    informer.start()
    try:
        async with asyncio.timeout(30):
            await informer.wait_synced()
        assert informer.has_synced
        await converged(aclient, informer, mirror)

        await random_writes(aclient, rng, 120, "first")
        await converged(aclient, informer, mirror)
        assert informer.stats.lists == 1
        assert informer.stats.expired == 0
        assert {key_of(o) for o in informer.cache.by_index("namespace", "team")} == {
            k for k in mirror if k.startswith("team/")
        }

        # Away while the history it would resume from is compacted: 410, then a relist that
        # also reports the deletes it missed.
        await informer.stop()
        deleted = [key_of(o) for o in informer.cache.objects()][:5]
        for key in deleted:
            namespace, name = key.split("/")
            await aclient.delete("v1", "ConfigMap", name, namespace)
        last = await random_writes(aclient, rng, 30, "away")
        await aclient.request("POST", "/kubelite/v1/compact", [("revision", last)])
        informer.start()
        await converged(aclient, informer, mirror)
        assert informer.stats.expired == 1
        assert informer.stats.lists == 2
        assert not set(deleted) & set(mirror)
        assert informer.use_watch_list is watch_list  # kubelite offers watch-list
    finally:
        await informer.stop()


class Gate:
    """kubelite's app behind a gate that can refuse watch-list (as a server with the WatchList
    feature off does) or fail the first watch requests with a 500; it records every request."""

    def __init__(self, app: Any, refuse_watch_list: bool = False, fail_watches: int = 0) -> None:
        self.app = app
        self.refuse_watch_list = refuse_watch_list
        self.fail_watches = fail_watches
        self.requests: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        query = scope.get("query_string", b"").decode()
        self.requests.append(f"{scope['method']} {scope['path']}?{query}")
        refuse = self.refuse_watch_list and "sendInitialEvents=true" in query
        failing = "watch=true" in query and self.fail_watches > 0
        if not refuse and not failing:
            await self.app(scope, receive, send)
            return
        if failing:
            self.fail_watches -= 1
            code, body = 500, {"kind": "Status", "status": "Failure", "code": 500,
                               "message": "injected failure"}  # fmt: skip
        else:
            code, body = 422, {
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Invalid",
                "code": 422, "message": 'ListOptions.meta.k8s.io "" is invalid: '
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless "
                "the WatchList feature gate is enabled",
            }  # fmt: skip
        data = orjson.dumps(body)
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": code, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    def lists(self) -> list[str]:
        return [
            r
            for r in self.requests
            if r.startswith("GET ") and "/configmaps?" in r and "watch=true" not in r
        ]


async def test_watch_list_is_used_when_offered() -> None:
    async with in_process_app() as app:
        gate = Gate(app)
        async with AsyncClient(app=gate, headers=AUTH) as client:
            await client.create(configmap("a"))
            async with Informer(client, "v1", "ConfigMap") as informer:
                await asyncio.wait_for(informer.wait_synced(), 30)
                assert set(informer.cache.keys()) == {"default/a"}
    assert gate.lists() == []  # synced from the watch stream alone
    assert any("sendInitialEvents=true" in r for r in gate.requests)


async def test_a_server_refusing_watch_list_is_listed_and_watched() -> None:
    async with in_process_app() as app:
        gate = Gate(app, refuse_watch_list=True)
        async with AsyncClient(app=gate, headers=AUTH) as client:
            await client.create(configmap("a"))
            async with Informer(client, "v1", "ConfigMap", page_size=1) as informer:
                await asyncio.wait_for(informer.wait_synced(), 30)
                assert set(informer.cache.keys()) == {"default/a"}
                assert informer.use_watch_list is False
                await client.create(configmap("b"))
                await eventually(lambda: len(informer.cache) == 2)
    assert len(gate.lists()) == 1


async def test_failed_watches_are_retried_with_backoff() -> None:
    async with in_process_app() as app:
        gate = Gate(app, fail_watches=3)
        async with AsyncClient(app=gate, headers=AUTH) as client:
            await client.create(configmap("a"))
            informer = Informer(client, "v1", "ConfigMap", backoff_initial=0.01)
            async with informer:
                await asyncio.wait_for(informer.wait_synced(), 30)
            assert informer.stats.errors == 3
            assert set(informer.cache.keys()) == {"default/a"}


async def test_a_stream_that_ends_resumes_from_its_resource_version(aclient: AsyncClient) -> None:
    informer = Informer(aclient, "v1", "ConfigMap", watch_timeout=1)
    mirror = mirrored(informer)
    async with informer:
        await asyncio.wait_for(informer.wait_synced(), 30)
        for i in range(3):
            await aclient.create(configmap(f"cm-{i}"))
            watches = informer.stats.watches
            await eventually(lambda w=watches: informer.stats.watches > w)  # a new stream
        await converged(aclient, informer, mirror)
        assert informer.stats.lists == 1  # resumed each time, never listed again


async def test_bookmarks_advance_the_resource_version() -> None:
    async with (
        in_process_app(bookmark_interval=0.05) as app,
        AsyncClient(app=app, headers=AUTH) as client,
        Informer(client, "v1", "ConfigMap", label_selector="app=mine") as informer,
    ):
        await asyncio.wait_for(informer.wait_synced(), 30)
        seen: list[str] = []
        informer.add_handlers(on_add=lambda obj: seen.append(key_of(obj)))
        other = await client.create(configmap("not-mine"))  # outside the selector
        target = int(resource_version(other))
        await eventually(lambda: int(informer.resource_version) >= target)
        assert seen == []  # no event of the watch carried it there: a bookmark did


async def test_resync_replays_every_cached_object_as_an_update(aclient: AsyncClient) -> None:
    await aclient.create(configmap("a"))
    await aclient.create(configmap("b"))
    resynced: set[str] = set()

    def on_update(old: dict[str, Any], new: dict[str, Any]) -> None:
        if old is new:
            resynced.add(key_of(new))

    informer = Informer(aclient, "v1", "ConfigMap", field_selector=NOT_ROOT_CA, resync_period=0.05)
    informer.add_handlers(on_update=on_update)
    async with informer:
        await eventually(lambda: resynced == {"default/a", "default/b"})


async def test_handlers_added_late_catch_up_and_async_handlers_run_in_order(
    aclient: AsyncClient,
) -> None:
    await aclient.create(configmap("a"))
    async with Informer(aclient, "v1", "ConfigMap", field_selector=NOT_ROOT_CA) as informer:
        await asyncio.wait_for(informer.wait_synced(), 30)
        order: list[str] = []

        async def on_add(obj: dict[str, Any]) -> None:
            await asyncio.sleep(0)
            order.append(key_of(obj))

        informer.add_handlers(on_add=on_add)
        for name in ("b", "c", "d"):
            await aclient.create(configmap(name))
        await eventually(lambda: len(order) == 4)
        assert order == ["default/a", "default/b", "default/c", "default/d"]
