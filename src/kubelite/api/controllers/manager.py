"""kube-controller-manager inside kubelite: the controllers that a cluster runs once, whichever
API server they talk to, held by name and run by the server that holds the Lease
``kube-system/kube-controller-manager`` (:mod:`kubelite.api.controllers.leaderelection`).

Over etcd several servers share one store and exactly one of them runs these controllers;
the others wait as candidates and take over when the leader's Lease expires or is released.
The controllers every server needs for itself (the CRD controller, which serves custom kinds,
and the followers of RBAC, admission policies and webhooks) are not here: they are
kube-apiserver's.

A controller is anything with ``start()`` (plain or async) and ``async close()`` that can be
started again after it was closed (a leader that loses the Lease stops them; it may lead again).
One with ``queue_depth()`` reports it as ``workqueue_depth{name=<its name>}`` on ``/metrics``.
One with ``wait_settled()`` is waited for (up to :data:`SETTLE_SECONDS`) when the server leads
from the start, so that a server that says it serves already has what these controllers make
for the namespaces it was started with (``default`` has its ServiceAccount and
``kube-root-ca.crt``), as tests that list a namespace's objects right away expect.
Adding one is one line where the server is assembled: ``manager.add(name, controller)``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable
from typing import Protocol, runtime_checkable

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.leaderelection import ElectionConfig, LeaderElector
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

#: how long :meth:`ControllerManager.start` waits for the controllers to settle, at the most
SETTLE_SECONDS = 10.0


class Controller(Protocol):
    def start(self) -> Awaitable[None] | None: ...

    async def close(self) -> None: ...


@runtime_checkable
class Queued(Protocol):
    def queue_depth(self) -> int: ...


@runtime_checkable
class Settles(Protocol):
    async def wait_settled(self) -> None: ...


class ControllerManager:
    """Named controllers, run while this server leads (``election``), or always (``None``)."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        election: ElectionConfig | None = None,
        identity: str | None = None,
    ) -> None:
        self.controllers: dict[str, Controller] = {}
        self.running = False
        self.elector: LeaderElector | None = None
        if election is not None:
            self.elector = LeaderElector(
                registry,
                catalogue,
                on_started_leading=self._start_controllers,
                on_stopped_leading=self._stop_controllers,
                config=election,
                identity=identity,
            )

    def add(self, name: str, controller: Controller) -> None:
        """Manage ``controller`` under ``name`` (kube-controller-manager's controller name);
        before :meth:`start`."""
        if name in self.controllers:
            raise ValueError(f"a controller named {name!r} is managed already")
        self.controllers[name] = controller

    def get(self, name: str) -> Controller:
        return self.controllers[name]

    @property
    def leading(self) -> bool:
        """Whether this server runs the controllers now."""
        return self.running

    async def start(self) -> None:
        """Stand for election (a first try before returning), or run the controllers; when
        they run, wait for them to settle."""
        if self.elector is not None:
            await self.elector.start()
        else:
            await self._start_controllers()
        if self.running:
            await self._settle()

    async def close(self) -> None:
        """Stop the controllers, then give up the Lease."""
        if self.elector is not None:
            await self.elector.close()
        else:
            await self._stop_controllers()

    async def _settle(self) -> None:
        waits = [c.wait_settled() for c in self.controllers.values() if isinstance(c, Settles)]
        try:
            async with asyncio.timeout(SETTLE_SECONDS):
                await asyncio.gather(*waits)
        except TimeoutError:
            log.warning("the controllers had not settled after %.0f s; serving", SETTLE_SECONDS)

    def queue_depths(self) -> dict[str, int]:
        """``workqueue_depth`` of each controller that has a queue (0 while not running)."""
        return {
            name: c.queue_depth() if self.running else 0
            for name, c in self.controllers.items()
            if isinstance(c, Queued)
        }

    def describe(self) -> str:
        """One line: which controllers, and whether this server runs them or waits."""
        names = ", ".join(self.controllers) or "none"
        if self.elector is None:
            return f"controllers: {names} (no leader election)"
        lease = self.elector.lock.describe()
        if self.running:
            return f"controllers: {names}; this server leads (lease {lease})"
        holder = self.elector.leader or "nobody"
        return f"controllers: {names}; waiting for lease {lease} (held by {holder})"

    async def _start_controllers(self) -> None:
        self.running = True
        for name, controller in self.controllers.items():
            try:
                started = controller.start()
                if inspect.isawaitable(started):
                    await started
            except Exception:
                log.exception("the %s did not start", name)

    async def _stop_controllers(self) -> None:
        self.running = False
        for name, controller in reversed(self.controllers.items()):
            try:
                await controller.close()
            except Exception:
                log.exception("the %s did not stop cleanly", name)
