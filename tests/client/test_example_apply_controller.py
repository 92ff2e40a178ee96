"""examples/apply_controller.py, the server-side apply controller, against a real server (HTTPS)
and in process: each labelled ConfigMap gets a summary of its keys that follows it; fields other
writers add to a summary survive the controller's applies; a hand edit of the controller's field
is put back; a summary goes with its source."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from client_harness import eventually

from kubelite.client import AsyncClient, NotFound

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import apply_controller


def source(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"mirror": "yes"}}, "data": data}  # fmt: skip


async def test_summaries_follow_their_sources_next_to_other_writers(aclient: AsyncClient) -> None:
    async def data_of(name: str) -> dict[str, str] | None:
        try:
            return dict((await aclient.get("v1", "ConfigMap", name)).get("data") or {})
        except NotFound:
            return None

    async def shows(name: str, expected: dict[str, str] | None) -> None:
        async def check() -> bool:
            return await data_of(name) == expected

        await eventually(check)

    await aclient.create(source("app", b="2", a="1"))
    await aclient.create(source("plain", x="1") | {"metadata": {"name": "plain"}})  # no label
    # a summary whose source went away while the controller was not running
    await aclient.apply(
        apply_controller.summary("default", "gone", "k"), field_manager=apply_controller.MANAGER
    )

    controller = apply_controller.KeySummary(aclient, "default")
    running = asyncio.ensure_future(controller.run())
    try:
        await shows("app-summary", {"keys": "a,b"})
        await shows("gone-summary", None)
        assert await data_of("plain-summary") is None

        # another writer adds a field of its own to the summary, with an ordinary patch
        await aclient.patch("v1", "ConfigMap", "app-summary", {"data": {"note": "hi"}})
        await aclient.patch("v1", "ConfigMap", "app", {"data": {"c": "3"}})
        await shows("app-summary", {"keys": "a,b,c", "note": "hi"})  # the note survives

        # someone edits the controller's field by hand: it is put back, the note kept
        await aclient.patch("v1", "ConfigMap", "app-summary", {"data": {"keys": "wrong"}})
        await shows("app-summary", {"keys": "a,b,c", "note": "hi"})
        managed = (await aclient.get("v1", "ConfigMap", "app-summary"))["metadata"]
        owners = {e["manager"]: e["fieldsV1"] for e in managed["managedFields"]}
        assert owners[apply_controller.MANAGER] == {
            "f:data": {"f:keys": {}},
            "f:metadata": {"f:labels": {f"f:{apply_controller.MANAGED_BY}": {}}},
        }
        assert owners["kubelite-client"] == {"f:data": {"f:note": {}}}

        # the summary goes when its source is unlabelled, or deleted; and comes back if deleted
        await aclient.patch("v1", "ConfigMap", "app", {"metadata": {"labels": {"mirror": None}}})
        await shows("app-summary", None)
        await aclient.create(source("db", user="u", password="p"))
        await shows("db-summary", {"keys": "password,user"})
        await aclient.delete("v1", "ConfigMap", "db-summary")
        await shows("db-summary", {"keys": "password,user"})
        await aclient.delete("v1", "ConfigMap", "db")
        await shows("db-summary", None)
    finally:
        controller.stop()
        await asyncio.wait_for(running, 30)
