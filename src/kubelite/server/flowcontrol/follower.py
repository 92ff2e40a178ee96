"""The FlowSchemas and PriorityLevelConfigurations followed from the store (an informer, as
kube-apiserver's APF config controller has), and the work around them:

- every change is digested at once (:meth:`FlowControl.digest`), so a FlowSchema created or a
  level's shares changed take effect on this server's next requests;
- each schema's ``Dangling`` condition is written when it should change (``status`` patched as
  ``api-priority-and-fairness-config-consumer-v1``, in the background);
- every 10 s, the borrowing adjustment (:meth:`FlowControl.adjust`), from the levels' seat
  demand since the last one;
- every minute, the bootstrap configuration is ensured again (kube's ``priority-and-fairness-
  config-producer`` post-start hook), reading the objects this follower holds (as kube's reads
  its informers'): the caller hands in what ensures it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import APIError
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry
from kubelite.server.flowcontrol.config import FlowControl

log = logging.getLogger(__name__)

Obj = dict[str, Any]

STATUS_MANAGER = "api-priority-and-fairness-config-consumer-v1"
STRATEGIC = "application/strategic-merge-patch+json"
#: borrowingAdjustmentPeriod
ADJUST_SECONDS = 10.0
#: how often the bootstrap configuration is ensured again
ENSURE_SECONDS = 60.0


class ConfigFollower(StoreFollower):
    """Follows ``schemas`` (FlowSchemas) and ``levels`` (PriorityLevelConfigurations) into
    ``control``; ``ensure`` (re)creates the bootstrap configuration."""

    def __init__(
        self,
        registry: Registry,
        schemas: ResourceInfo,
        levels: ResourceInfo,
        control: FlowControl,
        ensure: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(
            registry, {schemas.plural: schemas, levels.plural: levels}, name="flowcontrol"
        )
        self.schemas, self.levels = schemas, levels
        self.control = control
        self.ensure = ensure
        self.held: dict[str, dict[str, Obj]] = {schemas.plural: {}, levels.plural: {}}
        self._ready = False
        self._pending = False
        self._statuses: dict[str, Obj] = {}
        self._wake = asyncio.Event()
        self._background: list[asyncio.Task[None]] = []

    # -- StoreFollower ---------------------------------------------------------------------------

    def replace(self, plural: str, objects: list[Obj]) -> None:
        self.held[plural] = {o["metadata"]["name"]: o for o in objects}

    def put(self, plural: str, obj: Obj) -> None:
        self.held[plural][obj["metadata"]["name"]] = obj

    def remove(self, plural: str, namespace: str, name: str) -> None:
        self.held[plural].pop(name, None)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        return name in self.held[plural]

    def changed(self, plural: str) -> None:
        """Digest soon: the changes of one burst (the bootstrap objects created, their status
        written) are digested once."""
        if self._ready and not self._pending:
            self._pending = True
            asyncio.get_running_loop().call_soon(self.digest)

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        await super().start()
        self._ready = True
        self.digest()
        loop = asyncio.get_running_loop()
        self._background = [
            loop.create_task(self._write_statuses(), name="kubelite-flowcontrol-status"),
            loop.create_task(self._every(ADJUST_SECONDS, self._adjust), name="kubelite-apf-borrow"),
        ]
        if self.ensure is not None:
            self._background.append(
                loop.create_task(
                    self._every(ENSURE_SECONDS, self.ensure), name="kubelite-apf-ensure"
                )
            )

    async def close(self) -> None:
        for task in self._background:
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        self._background = []
        await super().close()

    async def settle(self, revisions: dict[str, int]) -> None:
        """Return once the writes up to ``revisions`` (by plural) are held and digested."""
        for plural, revision in revisions.items():
            await self.caught_up(plural, "", "", revision)
        self.digest()

    def digest(self) -> None:
        self._pending = False
        updates = self.control.digest(
            list(self.held[self.schemas.plural].values()),
            list(self.held[self.levels.plural].values()),
        )
        for name, condition in updates:
            self._statuses[name] = condition
        if updates:
            self._wake.set()

    # -- background work -------------------------------------------------------------------------

    async def _adjust(self) -> None:
        self.control.adjust()

    async def _every(self, seconds: float, work: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await work()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("API Priority and Fairness: %s failed", work, exc_info=True)

    async def _write_statuses(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._statuses:
                name, condition = self._statuses.popitem()
                patch = {"status": {"conditions": [condition]}}
                try:
                    await self.registry.patch(
                        self.schemas, None, name, STRATEGIC, patch,
                        subresource="status", field_manager=STATUS_MANAGER,
                    )  # fmt: skip
                except APIError:  # gone meanwhile: nothing to say
                    pass
                except Exception:
                    log.warning("FlowSchema %s: status not written", name, exc_info=True)
