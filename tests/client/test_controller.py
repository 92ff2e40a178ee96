"""The Controller against a real server (HTTPS) and in process: every key is reconciled at least
once after its last change, never by two workers at once; failures are retried with backoff
(and dropped after max_retries); a periodic requeue; a graceful shutdown waits for the
reconcile in progress."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from client_harness import NOT_ROOT_CA, configmap, eventually

from kubelite.client import (
    AsyncClient,
    Controller,
    ExponentialBackoff,
    Informer,
    NotFound,
    key_of,
    resource_version,
)


async def test_every_key_is_reconciled_after_its_last_change(aclient: AsyncClient) -> None:
    informer = Informer(aclient, "v1", "ConfigMap")
    seen: dict[str, str] = {}  # key -> the resourceVersion its last reconcile saw ("" = gone)
    in_flight: set[str] = set()
    overlaps: list[str] = []

    async def reconcile(key: str) -> None:
        if key in in_flight:
            overlaps.append(key)
        in_flight.add(key)
        try:
            await asyncio.sleep(0.002)  # a little work, so that changes pile up meanwhile
            obj = informer.cache.get(key)
            seen[key] = resource_version(obj) if obj else ""
        finally:
            in_flight.discard(key)

    controller = Controller(reconcile, workers=4)
    controller.watch(informer)
    running = asyncio.ensure_future(controller.run())
    try:
        await asyncio.wait_for(informer.wait_synced(), 30)
        rng = random.Random(7)
        names = [f"cm-{i}" for i in range(12)]
        for i in range(150):
            name = rng.choice(names)
            try:
                if rng.random() < 0.8:
                    await aclient.update(
                        configmap(name), lambda cm, i=i: cm.update(data={"v": str(i)})
                    )
                else:
                    await aclient.delete("v1", "ConfigMap", name)
            except NotFound:
                await aclient.create(configmap(name, value=str(i)))
        listing = await aclient.list("v1", "ConfigMap")
        final = {key_of(o): resource_version(o) for o in listing["items"]}
        expected = {f"default/{n}": final.get(f"default/{n}", "") for n in names}
        await eventually(lambda: {k: seen.get(k) for k in expected} == expected)
        assert overlaps == []
        assert controller.failed == 0
    finally:
        controller.stop()
        await asyncio.wait_for(running, 30)
    assert not informer.running  # the controller stopped the informer it started


async def test_failures_are_retried_with_per_key_backoff(aclient: AsyncClient) -> None:
    await aclient.create(configmap("flaky"))
    await aclient.create(configmap("doomed"))
    attempts: dict[str, int] = {}

    async def reconcile(key: str) -> None:
        attempts[key] = attempts.get(key, 0) + 1
        if key == "default/doomed" or attempts[key] <= 3:
            raise RuntimeError(f"not yet: {key}")

    informer = Informer(aclient, "v1", "ConfigMap", field_selector=NOT_ROOT_CA)
    limiter = ExponentialBackoff(base=0.001, cap=0.05)
    controller = Controller(reconcile, rate_limiter=limiter, max_retries=5)
    controller.watch(informer)
    running = asyncio.ensure_future(controller.run())
    try:
        await eventually(lambda: controller.reconciled == 1 and attempts.get("default/doomed") == 6)
        assert attempts["default/flaky"] == 4  # three failures, then success
        assert limiter.failures("default/flaky") == 0  # forgotten after the success
        assert limiter.failures("default/doomed") == 0  # dropped after 1 + 5 retries
        await asyncio.sleep(0.1)
        assert attempts["default/doomed"] == 6  # and not tried again
    finally:
        controller.stop()
        await asyncio.wait_for(running, 30)


async def test_a_number_returned_by_reconcile_requeues_after_that_long(
    aclient: AsyncClient,
) -> None:
    await aclient.create(configmap("periodic"))
    calls: list[str] = []

    async def reconcile(key: str) -> float:
        calls.append(key)
        return 0.01

    controller = Controller(reconcile)
    controller.watch(Informer(aclient, "v1", "ConfigMap", field_selector=NOT_ROOT_CA))
    running = asyncio.ensure_future(controller.run())
    try:
        await eventually(lambda: len(calls) >= 3)
        assert set(calls) == {"default/periodic"}
    finally:
        controller.stop()
        await asyncio.wait_for(running, 30)


async def test_shutdown_waits_for_the_reconcile_in_progress(aclient: AsyncClient) -> None:
    await aclient.create(configmap("slow"))
    started = asyncio.Event()
    release = asyncio.Event()
    finished: list[str] = []

    async def reconcile(key: str) -> None:
        started.set()
        await release.wait()
        finished.append(key)

    controller = Controller(reconcile, workers=2)
    controller.watch(Informer(aclient, "v1", "ConfigMap", field_selector=NOT_ROOT_CA))
    running = asyncio.ensure_future(controller.run())
    await asyncio.wait_for(started.wait(), 30)
    controller.stop()
    await asyncio.sleep(0.05)
    assert not running.done()  # still waiting for the reconcile it holds
    release.set()
    await asyncio.wait_for(running, 30)
    assert finished == ["default/slow"]
    assert controller.queue.shutting_down


async def test_keys_can_map_to_an_owner(aclient: AsyncClient) -> None:
    """One key for many objects: every ConfigMap of a namespace reconciles the namespace."""
    calls: list[str] = []

    async def reconcile(key: str) -> None:
        calls.append(key)

    controller = Controller(reconcile)

    def namespace_key(obj: dict[str, Any]) -> str:
        return str(obj["metadata"]["namespace"])

    controller.watch(Informer(aclient, "v1", "ConfigMap"), key=namespace_key)
    for i in range(5):
        await aclient.create(configmap(f"cm-{i}"))
    running = asyncio.ensure_future(controller.run())
    try:
        await eventually(lambda: calls == ["default"])
    finally:
        controller.stop()
        await asyncio.wait_for(running, 30)
