"""The loop every controller inside kubelite runs: a watch of one kind (through the registry's
storage, as any client's informer) flags that work is due, and a pass over the stored state
does it, until a pass finds nothing it can do (kube's informer and work queue, with the whole
state as the one key).

A :class:`PassController` subclass writes :meth:`PassController.run_pass` (one look at what is
stored: whether it wrote anything, and whether something still waits) and may narrow which
watch events wake it (:meth:`PassController.wakes`). The loop here:

- a pass starts when the watch flags one, ``debounce_seconds`` after the flag (a burst of
  changes is one pass), and every ``resync_seconds`` without one;
- after a pass that wrote, another pass at once (its writes may be work for it too);
- after a pass that left something waiting, another after an exponential back-off from
  ``retry_min_seconds`` to ``retry_max_seconds`` (or sooner, when the watch flags one); a
  failed pass counts as waiting;
- the watch is opened again whenever it ends, and a pass follows (events may have been missed).

:meth:`PassController.wait_idle` (for tests and start-up) returns once a pass begun after the
call wrote nothing and, unless ``idle_while_waiting``, left nothing waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import Context, Watcher, WatchOptions
from kubelite.api.machinery.watchevents import WatchEvent

log = logging.getLogger(__name__)


class PassController(ABC):
    """``start()`` runs the controller as tasks on the running loop; ``close()`` stops them."""

    #: names its tasks and log lines
    name = "controller"
    #: whether a pass that left something waiting (held by finalizers, say) counts as idle
    idle_while_waiting = False

    def __init__(
        self,
        registry: Registry,
        info: ResourceInfo,
        *,
        debounce_seconds: float = 0.0,
        retry_min_seconds: float = 0.05,
        retry_max_seconds: float = 2.0,
        resync_seconds: float | None = None,
    ) -> None:
        self.registry = registry
        self.info = info
        self.debounce_seconds = debounce_seconds
        self.retry_min_seconds = retry_min_seconds
        self.retry_max_seconds = retry_max_seconds
        self.resync_seconds = resync_seconds
        self._tasks: list[asyncio.Task[None]] = []
        self._wake = asyncio.Event()
        self._idle = asyncio.Condition()
        self._pass_seq = 0
        self._idle_seq = 0

    @abstractmethod
    async def run_pass(self) -> tuple[bool, bool]:
        """One look at what is stored: (wrote anything, something still waits)."""

    def wakes(self, event: WatchEvent) -> bool:
        """Whether a watch event flags a pass (default: every event)."""
        return True

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Run the controller on the running event loop (idempotent); a first pass looks at
        what is stored."""
        if self._tasks and not all(t.done() for t in self._tasks):
            return
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._run(), name=f"kubelite-{self.name}"),
            loop.create_task(self._follow(), name=f"kubelite-{self.name}-watch"),
        ]
        self._wake.set()

    async def close(self) -> None:
        """Stop the controller and wait for it to end; what it wrote so far is in storage."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        async with self._idle:
            self._idle.notify_all()

    def queue_depth(self) -> int:
        """kube's ``workqueue_depth`` of a queue whose one key is the whole state: 1 while a
        pass is flagged and not begun, else 0."""
        return int(bool(self._tasks) and self._wake.is_set())

    async def wait_idle(self) -> None:
        """Wait for a pass begun after this call that had nothing left to do."""
        if not self._tasks:
            raise RuntimeError(f"the {self.name} is not running")
        want = self._pass_seq + 1
        self._wake.set()
        async with self._idle:
            await self._idle.wait_for(lambda: self._idle_seq >= want or not self._tasks)

    # -- the loop --------------------------------------------------------------------------------

    async def _follow(self) -> None:
        watcher = self.registry.storage(self.info)
        assert isinstance(watcher, Watcher)
        while True:
            try:
                events = watcher.watch(Context(), WatchOptions())
                async with contextlib.aclosing(events):
                    async for event in events:
                        if self.wakes(event):
                            self._wake.set()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.debug("%s: the watch ended; watching again", self.name, exc_info=True)
            self._wake.set()  # events may have been missed
            await asyncio.sleep(self.retry_min_seconds)

    async def _run(self) -> None:
        delay = self.retry_min_seconds
        timeout = self.resync_seconds
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            if self.debounce_seconds:
                await asyncio.sleep(self.debounce_seconds)  # let a burst of changes arrive
            self._wake.clear()
            self._pass_seq += 1
            seq = self._pass_seq
            try:
                wrote, waiting = await self.run_pass()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: a pass failed; retrying", self.name)
                wrote, waiting = False, True
            if wrote:
                delay = self.retry_min_seconds
                self._wake.set()
                await asyncio.sleep(0)
                continue
            if not waiting or self.idle_while_waiting:
                async with self._idle:
                    self._idle_seq = seq
                    self._idle.notify_all()
            if waiting:
                timeout = delay
                delay = min(delay * 2, self.retry_max_seconds)
            else:
                delay = self.retry_min_seconds
                timeout = self.resync_seconds
