"""examples/replica_mirror.py, the example controller, against a real server (HTTPS) and in
process: the ConfigMap follows Deployments created, scaled and deleted, and is put back after
someone edits or deletes it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from client_harness import eventually
from harness import deployment

from kubelite.client import AsyncClient, NotFound, Ref

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import replica_mirror


async def test_replica_counts_follow_the_deployments(aclient: AsyncClient) -> None:
    for name, replicas in [("web", 3), ("api", 2)]:
        await aclient.create(deployment(name, replicas))

    async def mirrored() -> dict[str, str] | None:
        try:
            cm = await aclient.get("v1", "ConfigMap", replica_mirror.MIRROR)
        except NotFound:
            return None
        return dict(cm.get("data") or {})

    async def shows(expected: dict[str, str]) -> None:
        async def check() -> bool:
            return await mirrored() == expected

        await eventually(check)

    controller = replica_mirror.ReplicaMirror(aclient, "default")
    running = asyncio.ensure_future(controller.run())
    try:
        await shows({"web": "3", "api": "2"})

        await aclient.patch("apps/v1", "Deployment", "web", {"spec": {"replicas": 5}},
                            subresource="scale")  # fmt: skip
        await aclient.create(deployment("worker", 1))
        await aclient.delete("apps/v1", "Deployment", "api")
        await shows({"web": "5", "worker": "1"})

        await aclient.update(  # someone edits the mirror by hand
            Ref("v1", "ConfigMap", replica_mirror.MIRROR), lambda cm: cm.update(data={"x": "9"})
        )
        await shows({"web": "5", "worker": "1"})

        await aclient.delete("v1", "ConfigMap", replica_mirror.MIRROR)  # or deletes it
        await shows({"web": "5", "worker": "1"})
    finally:
        controller.stop()
        await asyncio.wait_for(running, 30)
