"""kubelite.client against a server injecting faults (``kubelite serve --inject``):
``retry_on_conflict`` and the client's read-mutate-write get every change through injected
409s, a Controller converges though its writes are refused, and an Informer's cache converges
to the store's state though its watch streams end (resumed) or fail with 410 (relisted) again
and again."""

from __future__ import annotations

import asyncio
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from client_harness import configmap, eventually
from harness import Server, start_in_process, stop_server

from kubelite.client import (
    AsyncClient,
    Backoff,
    Client,
    Conflict,
    Controller,
    ExponentialBackoff,
    Informer,
    Ref,
    key_of,
    resource_version,
    retry_on_conflict,
    retry_on_conflict_async,
)
from kubelite.server.faults import FaultSpec

# Each attempt loses at 0.3: client-go's DefaultRetry (5 attempts) gives up on 0.24% of the
# writes, so these tests allow more attempts, as a client under heavy contention would.
PATIENT = Backoff(steps=60, duration=0.001, factor=1.0, jitter=1.0)


def injected(server: Server) -> dict[str, int]:
    """The server's ``kubelite_injected_faults_total`` by fault."""
    req = urllib.request.Request(server.url + "/metrics")
    req.add_header("Authorization", f"Bearer {server.token}")
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    with urllib.request.urlopen(req, timeout=30, context=context) as resp:
        text = resp.read().decode()
    prefix = 'kubelite_injected_faults_total{fault="'
    return {
        line[len(prefix) :].split('"')[0]: int(float(line.split()[-1]))
        for line in text.splitlines()
        if line.startswith(prefix)
    }


@pytest.fixture
def conflicting(tmp_path: Path) -> Iterator[Server]:
    srv = start_in_process(tmp_path / "data", faults=FaultSpec.parse("conflicts=0.3,seed=1"))
    try:
        yield srv
    finally:
        stop_server(srv)


def test_a_lone_writer_meets_only_injected_conflicts_and_retries_through_them(
    conflicting: Server,
) -> None:
    refused = 0
    with Client.from_kubeconfig(conflicting.kubeconfig) as client:
        client.create(configmap("counter"))

        def increment() -> None:
            nonlocal refused
            cm = client.get("v1", "ConfigMap", "counter", "default")
            cm["data"]["v"] = str(int(cm["data"]["v"]) + 1)
            try:
                client.update(cm)
            except Conflict:
                refused += 1
                raise

        for _ in range(40):
            retry_on_conflict(increment, PATIENT)
        final = client.get("v1", "ConfigMap", "counter", "default")
    assert final["data"]["v"] == "40"
    assert refused > 0
    assert injected(conflicting)["conflict"] == refused  # nobody else wrote: all were injected


async def test_concurrent_increments_all_land_despite_injected_conflicts(
    conflicting: Server,
) -> None:
    writers, increments = 8, 5
    async with AsyncClient.from_kubeconfig(conflicting.kubeconfig) as client:
        await client.create(configmap("counter"))

        async def attempt() -> None:
            cm = await client.get("v1", "ConfigMap", "counter", "default")
            cm["data"]["v"] = str(int(cm["data"]["v"]) + 1)
            await client.update(cm)

        async def writer() -> None:
            for _ in range(increments):
                await retry_on_conflict_async(attempt, PATIENT)

        await asyncio.gather(*(writer() for _ in range(writers)))
        # the client's own read-mutate-write retries in the same way
        ref = Ref("v1", "ConfigMap", "counter", "default")
        for _ in range(10):
            await client.update(
                ref, lambda cm: cm["data"].update(v=str(int(cm["data"]["v"]) + 1)), backoff=PATIENT
            )
        final = await client.get("v1", "ConfigMap", "counter", "default")
    assert final["data"]["v"] == str(writers * increments + 10)
    assert injected(conflicting)["conflict"] > 0


async def test_a_controller_converges_though_its_writes_are_refused(conflicting: Server) -> None:
    names = [f"item-{i}" for i in range(10)]
    async with AsyncClient.from_kubeconfig(conflicting.kubeconfig) as client:
        informer = Informer(client, "v1", "ConfigMap", "default")

        async def reconcile(key: str) -> None:
            cached = informer.cache.get(key)
            if cached is None or "want" not in (cached.get("data") or {}):
                return
            if cached["data"].get("have") == cached["data"]["want"]:
                return
            changed = {**cached, "data": {**cached["data"], "have": cached["data"]["want"]}}
            await client.update(changed)  # as cached: a 409 is retried by the work queue

        limiter = ExponentialBackoff(base=0.005, cap=0.2)
        controller = Controller(reconcile, workers=3, rate_limiter=limiter)
        controller.watch(informer)
        running = asyncio.ensure_future(controller.run())
        try:
            await asyncio.wait_for(informer.wait_synced(), 30)
            for i, name in enumerate(names):
                cm = configmap(name)
                cm["data"] = {"want": str(i)}
                await client.create(cm)

            async def converged() -> bool:
                listing = await client.list("v1", "ConfigMap", "default")
                done = {
                    o["metadata"]["name"]
                    for o in listing["items"]
                    if (o.get("data") or {}).get("have") == (o.get("data") or {}).get("want")
                    and "want" in (o.get("data") or {})
                }
                return done == set(names)

            await eventually(converged, 60)
        finally:
            controller.stop()
            await asyncio.wait_for(running, 30)
    assert controller.failed > 0  # some reconciles were refused and retried
    assert injected(conflicting)["conflict"] > 0


@pytest.fixture
def dropping(tmp_path: Path) -> Iterator[Server]:
    srv = start_in_process(tmp_path / "data", faults=FaultSpec.parse("watch-drops=0.2,seed=4"))
    try:
        yield srv
    finally:
        stop_server(srv)


async def test_an_informer_converges_though_its_watches_are_cut(dropping: Server) -> None:
    async with AsyncClient.from_kubeconfig(dropping.kubeconfig) as client:
        informer = Informer(client, "v1", "ConfigMap", "default")
        informer.start()
        try:
            await asyncio.wait_for(informer.wait_synced(), 30)
            names = [f"cm-{i}" for i in range(30)]
            for name in names:
                await client.create(configmap(name))
            for round_ in range(3):
                for name in names:
                    cm = await client.get("v1", "ConfigMap", name, "default")
                    cm["data"]["v"] = str(round_ + 1)
                    await client.update(cm)
            for name in names[:10]:
                await client.delete("v1", "ConfigMap", name, "default")
            listing = await client.list("v1", "ConfigMap", "default")
            stored = {key_of(o): resource_version(o) for o in listing["items"]}

            def cached() -> dict[str, Any]:
                return {key_of(o): resource_version(o) for o in informer.cache.objects()}

            await eventually(lambda: cached() == stored, 60)
            counts = injected(dropping)
            assert counts["watch_expired"] > 0
            assert counts["watch_end"] > 0
            # every 410 made the informer list again; every clean end, watch again from where
            # it was without listing (a watch-list counts as a list and a watch); the last
            # fault's resume may still be under way
            stats = informer.stats
            try:
                await eventually(
                    lambda: (
                        (stats.expired, stats.watches - stats.lists)
                        == (counts["watch_expired"], counts["watch_end"])
                    )
                )
            except TimeoutError:
                raise AssertionError(f"the informer's {stats} for the faults {counts}") from None
            assert stats.errors == 0
        finally:
            await informer.stop()
