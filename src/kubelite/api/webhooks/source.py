"""The admission webhooks in force: every ValidatingWebhookConfiguration and
MutatingWebhookConfiguration held in memory as :class:`Hook` values, kept current like any
informer (kube's ``configuration/{validating,mutating}_webhook_manager.go``).

:class:`WebhookSource` lists both kinds through the registry, then watches each from the list's
revision (listing again when a watch ends), on every server over the same store, so a change
takes effect everywhere within a watch event's delay. The hooks of a kind are one immutable
tuple, replaced whole on each change: configurations sorted by name, each one's webhooks in
list order, as kube calls them. :meth:`WebhookSource.settled` lets a write of a configuration
answer once this server's hooks hold it, so the client's next request meets it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from kubelite.api.catalogue import Catalogue
from kubelite.api.listing import ListOptions
from kubelite.api.registry import Registry
from kubelite.api.rest import Context, Watcher, WatchOptions

log = logging.getLogger(__name__)

Obj = dict[str, Any]

GROUP = "admissionregistration.k8s.io"
VALIDATING = "validatingwebhookconfigurations"
MUTATING = "mutatingwebhookconfigurations"
PLURALS = (VALIDATING, MUTATING)
DEFAULT_TIMEOUT = 10
#: the AdmissionReview versions kubelite sends, in kube's order of preference
REVIEW_VERSIONS = ("v1", "v1beta1")
CAUGHT_UP_TIMEOUT = 10.0


@dataclass(frozen=True, eq=False)
class Hook:
    """One webhook of a configuration, with its defaults read once (kube's WebhookAccessor)."""

    configuration: str
    index: int
    spec: Obj
    mutating: bool

    @property
    def name(self) -> str:
        return str(self.spec.get("name") or "")

    @cached_property
    def uid(self) -> str:
        """Names the webhook across rounds of one write (kube's accessor UID)."""
        return f"{self.configuration}/{self.name}/{self.index}"

    @property
    def client_config(self) -> Obj:
        config = self.spec.get("clientConfig")
        return config if isinstance(config, dict) else {}

    @property
    def rules(self) -> list[Obj]:
        rules = self.spec.get("rules")
        return [r for r in rules if isinstance(r, dict)] if isinstance(rules, list) else []

    @property
    def ignores_failures(self) -> bool:
        return self.spec.get("failurePolicy") == "Ignore"

    @property
    def exact(self) -> bool:
        return self.spec.get("matchPolicy") == "Exact"

    @cached_property
    def timeout(self) -> int:
        seconds = self.spec.get("timeoutSeconds")
        if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0:
            return seconds
        return DEFAULT_TIMEOUT

    @property
    def side_effects(self) -> str | None:
        value = self.spec.get("sideEffects")
        return value if isinstance(value, str) else None

    @cached_property
    def review_version(self) -> str | None:
        """The first of ``admissionReviewVersions`` kubelite speaks (None: none of them)."""
        versions = self.spec.get("admissionReviewVersions")
        for version in versions if isinstance(versions, list) else []:
            if version in REVIEW_VERSIONS:
                return str(version)
        return None

    @cached_property
    def match_conditions(self) -> tuple[tuple[str, str], ...]:
        """(name, expression) of each ``matchConditions`` entry."""
        conditions = self.spec.get("matchConditions")
        return tuple(
            (str(c.get("name") or ""), str(c.get("expression") or ""))
            for c in (conditions if isinstance(conditions, list) else [])
            if isinstance(c, dict)
        )

    @property
    def reinvoked_if_needed(self) -> bool:
        return self.mutating and self.spec.get("reinvocationPolicy") == "IfNeeded"


def hooks_of(configurations: dict[str, Obj], mutating: bool) -> tuple[Hook, ...]:
    """The hooks of ``configurations`` (by name) in calling order."""
    hooks: list[Hook] = []
    for name in sorted(configurations):
        webhooks = configurations[name].get("webhooks")
        for index, spec in enumerate(webhooks if isinstance(webhooks, list) else []):
            if isinstance(spec, dict):
                hooks.append(Hook(name, index, spec, mutating))
    return tuple(hooks)


class WebhookSource:
    """The webhooks of both kinds, current with the store (:attr:`validating`,
    :attr:`mutating`); :meth:`start` lists them, then follows them until :meth:`close`."""

    def __init__(
        self, registry: Registry, catalogue: Catalogue, *, retry_seconds: float = 0.5
    ) -> None:
        self.registry = registry
        self.infos = {p: catalogue.require(GROUP, "v1", p) for p in PLURALS}
        self.retry_seconds = retry_seconds
        self.validating: tuple[Hook, ...] = ()
        self.mutating: tuple[Hook, ...] = ()
        self._objects: dict[str, dict[str, Obj]] = {p: {} for p in PLURALS}
        self._revisions = dict.fromkeys(PLURALS, 0)
        self._seen = asyncio.Condition()
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """List both kinds (the hooks are complete when this returns), then follow them."""
        revisions = {p: await self._relist(p) for p in PLURALS}
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._follow(p, revisions[p]), name=f"kubelite-webhooks-{p}")
            for p in PLURALS
        ]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    def following(self) -> bool:
        return bool(self._tasks) and not any(t.done() for t in self._tasks)

    def holds(self, plural: str, name: str) -> bool:
        return name in self._objects.get(plural, {})

    async def settled(self, plural: str, namespace: str, name: str, revision: int | None) -> None:
        """Return once the hooks hold every change of ``plural`` up to ``revision``, or (None)
        no longer hold ``name`` (or after :data:`CAUGHT_UP_TIMEOUT`, when the watch is
        behind). ``namespace`` is there for the storages' hook signature: both kinds are
        cluster-scoped."""

        def done() -> bool:
            if revision is None:
                return not self.holds(plural, name)
            return self._revisions[plural] >= revision

        async with self._seen:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._seen.wait_for(done), CAUGHT_UP_TIMEOUT)

    def _publish(self, plural: str) -> None:
        hooks = hooks_of(self._objects[plural], plural == MUTATING)
        if plural == MUTATING:
            self.mutating = hooks
        else:
            self.validating = hooks

    async def _relist(self, plural: str) -> int:
        listing = await self.registry.list(self.infos[plural], None, ListOptions())
        self._objects[plural] = {item["metadata"]["name"]: item for item in listing["items"]}
        self._publish(plural)
        revision = int(listing["metadata"]["resourceVersion"])
        await self._advance(plural, revision)
        return revision

    async def _follow(self, plural: str, revision: int) -> None:
        watcher = self.registry.storage(self.infos[plural])
        assert isinstance(watcher, Watcher)
        while True:
            try:
                options = WatchOptions(resource_version=str(revision))
                events = watcher.watch(Context(), options)
                async with contextlib.aclosing(events):
                    async for event in events:
                        name = event.object["metadata"]["name"]
                        if event.type == "DELETED":
                            self._objects[plural].pop(name, None)
                        elif event.type in ("ADDED", "MODIFIED"):
                            self._objects[plural][name] = event.object
                        else:
                            continue
                        self._publish(plural)
                        revision = event.revision
                        await self._advance(plural, revision)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.debug("webhooks: the watch of %s ended; listing again", plural, exc_info=True)
            await asyncio.sleep(self.retry_seconds)
            with contextlib.suppress(Exception):
                revision = await self._relist(plural)

    async def _advance(self, plural: str, revision: int) -> None:
        async with self._seen:
            self._revisions[plural] = max(self._revisions[plural], revision)
            self._seen.notify_all()
