"""The admission policies and their bindings in memory, compiled, kept current by watches
(apiserver ``pkg/admission/plugin/policy/generic/policy_source.go``).

:class:`PolicySet` holds one pair of kinds (ValidatingAdmissionPolicy and its bindings, or the
mutating pair): each policy compiled once per change, and the hooks the plugin runs, each a
policy with the bindings that name it (a policy without bindings is no hook; a binding naming
no policy is ignored), in name order.

:class:`PolicyFollower` keeps the sets current like any informer (:class:`Mirror`: list, then
watch from the list's revision; list again when the watch ends), on every server over the same
store, so a change takes effect everywhere within the watch's delay.
:meth:`PolicyFollower.settled` lets a write of a policy or binding answer only once this
server's set holds it, so the client's next request is admitted by what it just wrote.

:class:`NamespaceMirror` holds the namespaces the matchers and ``namespaceObject`` read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.errors import APIError
from kubelite.api.listing import ListOptions
from kubelite.api.registry import Registry
from kubelite.api.rest import Context, Watcher, WatchOptions

log = logging.getLogger(__name__)

Obj = dict[str, Any]
C = TypeVar("C")

GROUP = "admissionregistration.k8s.io"
VALIDATING_POLICIES = "validatingadmissionpolicies"
VALIDATING_BINDINGS = "validatingadmissionpolicybindings"
MUTATING_POLICIES = "mutatingadmissionpolicies"
MUTATING_BINDINGS = "mutatingadmissionpolicybindings"
PLURALS = (VALIDATING_POLICIES, VALIDATING_BINDINGS, MUTATING_POLICIES, MUTATING_BINDINGS)
CAUGHT_UP_TIMEOUT = 10.0


class Hook(NamedTuple, Generic[C]):
    """A policy to run: the object, its compiled form and its bindings (by name)."""

    policy: Obj
    compiled: C
    bindings: tuple[Obj, ...]


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


class PolicySet(Generic[C]):
    """The policies of one kind (compiled with ``compile``) and their bindings."""

    def __init__(self, compile: Callable[[Obj], C]) -> None:
        self.compile = compile
        self.policies: dict[str, tuple[Obj, C]] = {}
        self.bindings: dict[str, Obj] = {}
        self._hooks: list[Hook[C]] | None = []

    def hooks(self) -> list[Hook[C]]:
        """The policies that have bindings, each with its bindings, in name order."""
        if self._hooks is None:
            named: dict[str, list[Obj]] = {}
            for name in sorted(self.bindings):
                binding = self.bindings[name]
                policy_name = str((binding.get("spec") or {}).get("policyName", ""))
                named.setdefault(policy_name, []).append(binding)
            self._hooks = [
                Hook(self.policies[name][0], self.policies[name][1], tuple(named[name]))
                for name in sorted(named)
                if name in self.policies
            ]
        return self._hooks

    def holds_policy(self, name: str) -> bool:
        return name in self.policies

    def put_policy(self, obj: Obj) -> None:
        name = _name(obj)
        held = self.policies.get(name)
        if held is not None and _same(held[0], obj):
            return
        try:
            self.policies[name] = (obj, self.compile(obj))
        except Exception:  # a policy kubelite cannot compile must not stop the others
            log.exception("admission policy %s could not be compiled; it is not applied", name)
            self.policies.pop(name, None)
        self._hooks = None

    def remove_policy(self, name: str) -> None:
        if self.policies.pop(name, None) is not None:
            self._hooks = None

    def put_binding(self, obj: Obj) -> None:
        self.bindings[_name(obj)] = obj
        self._hooks = None

    def remove_binding(self, name: str) -> None:
        if self.bindings.pop(name, None) is not None:
            self._hooks = None

    def replace_policies(self, items: list[Obj]) -> None:
        names = {_name(obj) for obj in items}
        for name in [n for n in self.policies if n not in names]:
            self.remove_policy(name)
        for obj in items:
            self.put_policy(obj)

    def replace_bindings(self, items: list[Obj]) -> None:
        self.bindings = {_name(obj): obj for obj in items}
        self._hooks = None


def _same(a: Obj, b: Obj) -> bool:
    """The same stored version (a policy is compiled again only when it changed)."""
    version = (a.get("metadata") or {}).get("resourceVersion")
    return bool(version) and version == (b.get("metadata") or {}).get("resourceVersion")


class Mirror:
    """One kind followed like an informer: listed through ``registry`` (``replace`` gets the
    items), then watched from the list's revision (``put`` and ``remove`` get the changes),
    listed again when the watch ends or fails. ``advanced`` is called with each revision
    reached."""

    def __init__(
        self,
        registry: Registry,
        info: ResourceInfo,
        replace: Callable[[list[Obj]], None],
        put: Callable[[Obj], None],
        remove: Callable[[str], None],
        advanced: Callable[[int], Any] | None = None,
        *,
        retry_seconds: float = 0.5,
    ) -> None:
        self.registry = registry
        self.info = info
        self.replace, self.put, self.remove = replace, put, remove
        self.advanced = advanced
        self.retry_seconds = retry_seconds
        self.revision = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """List (the callbacks hold every object when this returns), then follow."""
        revision = await self._relist()
        name = f"kubelite-mirror-{self.info.plural}"
        self._task = asyncio.get_running_loop().create_task(self._follow(revision), name=name)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    def following(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _relist(self) -> int:
        listing = await self.registry.list(self.info, None, ListOptions())
        self.replace(listing["items"])
        revision = int(listing["metadata"]["resourceVersion"])
        await self._advance(revision)
        return revision

    async def _follow(self, revision: int) -> None:
        watcher = self.registry.storage(self.info)
        assert isinstance(watcher, Watcher)
        while True:
            try:
                options = WatchOptions(resource_version=str(revision))
                events = watcher.watch(Context(), options)
                async with contextlib.aclosing(events):
                    async for event in events:
                        if event.type == "DELETED":
                            self.remove(_name(event.object))
                        elif event.type in ("ADDED", "MODIFIED"):
                            self.put(event.object)
                        else:
                            continue
                        revision = event.revision
                        await self._advance(revision)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.debug("the watch of %s ended; listing again", self.info.plural, exc_info=True)
            await asyncio.sleep(self.retry_seconds)
            with contextlib.suppress(Exception):
                revision = await self._relist()

    async def _advance(self, revision: int) -> None:
        self.revision = max(self.revision, revision)
        if self.advanced is not None:
            await self.advanced(self.revision)


class PolicyFollower:
    """Keeps a validating and a mutating :class:`PolicySet` current with the stored objects
    (one :class:`Mirror` per kind)."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        validating: PolicySet[Any],
        mutating: PolicySet[Any],
        *,
        retry_seconds: float = 0.5,
    ) -> None:
        self._seen = asyncio.Condition()
        self.sets = {
            VALIDATING_POLICIES: validating,
            VALIDATING_BINDINGS: validating,
            MUTATING_POLICIES: mutating,
            MUTATING_BINDINGS: mutating,
        }
        self.mirrors: dict[str, Mirror] = {}
        for plural, held in self.sets.items():
            info = catalogue.lookup(GROUP, "v1", plural)
            if info is None:
                continue
            policies = plural.endswith("policies")
            self.mirrors[plural] = Mirror(
                registry,
                info,
                held.replace_policies if policies else held.replace_bindings,
                held.put_policy if policies else held.put_binding,
                held.remove_policy if policies else held.remove_binding,
                self._advanced,
                retry_seconds=retry_seconds,
            )

    async def start(self) -> None:
        """List the kinds (the sets are complete when this returns), then follow them."""
        for mirror in self.mirrors.values():
            await mirror.start()

    async def close(self) -> None:
        for mirror in self.mirrors.values():
            await mirror.close()

    def following(self) -> bool:
        return bool(self.mirrors) and all(m.following() for m in self.mirrors.values())

    async def settled(self, plural: str, name: str, revision: int | None) -> None:
        """Return once the sets hold every change of ``plural`` up to ``revision``, or (None)
        no longer hold the object (or after :data:`CAUGHT_UP_TIMEOUT`, when the watch is
        behind)."""
        mirror = self.mirrors.get(plural)
        if mirror is None:
            return

        def done() -> bool:
            if revision is None:
                return not self._holds(plural, name)
            return mirror.revision >= revision

        async with self._seen:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._seen.wait_for(done), CAUGHT_UP_TIMEOUT)

    def _holds(self, plural: str, name: str) -> bool:
        held = self.sets[plural]
        return held.holds_policy(name) if plural.endswith("policies") else name in held.bindings

    async def _advanced(self, revision: int) -> None:
        async with self._seen:
            self._seen.notify_all()


class NamespaceMirror:
    """The namespaces in memory (kube's namespace lister, which its policy and webhook
    matchers read): ``get`` answers from memory, and reads the store for a name it does not
    hold (created a moment ago), as kube falls back to a live GET."""

    def __init__(self, registry: Registry, info: ResourceInfo) -> None:
        self.registry = registry
        self.info = info
        self.held: dict[str, Obj] = {}
        self.mirror = Mirror(registry, info, self._replace, self._put, self._remove)

    def _replace(self, items: list[Obj]) -> None:
        self.held = {_name(obj): obj for obj in items}

    def _put(self, obj: Obj) -> None:
        self.held[_name(obj)] = obj

    def _remove(self, name: str) -> None:
        self.held.pop(name, None)

    async def get(self, name: str) -> Obj | None:
        found = self.held.get(name)
        return found if found is not None else await self._read(name)

    async def _read(self, name: str) -> Obj | None:
        try:
            return await self.registry.get(self.info, None, name)
        except APIError as exc:
            if exc.code == 404:
                return None
            raise
