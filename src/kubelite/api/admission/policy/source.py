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

import logging
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.errors import APIError
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]
C = TypeVar("C")

GROUP = "admissionregistration.k8s.io"
VALIDATING_POLICIES = "validatingadmissionpolicies"
VALIDATING_BINDINGS = "validatingadmissionpolicybindings"
MUTATING_POLICIES = "mutatingadmissionpolicies"
MUTATING_BINDINGS = "mutatingadmissionpolicybindings"
PLURALS = (VALIDATING_POLICIES, VALIDATING_BINDINGS, MUTATING_POLICIES, MUTATING_BINDINGS)


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


class Mirror(StoreFollower):
    """One kind followed like an informer: listed through ``registry`` (``replace`` gets the
    items), then watched from the list's revision (``put`` and ``remove`` get the changes),
    listed again when the watch ends or fails."""

    def __init__(
        self,
        registry: Registry,
        info: ResourceInfo,
        replace: Callable[[list[Obj]], None],
        put: Callable[[Obj], None],
        remove: Callable[[str], None],
        *,
        retry_seconds: float = 0.5,
    ) -> None:
        super().__init__(registry, {info.plural: info}, name="mirror", retry_seconds=retry_seconds)
        self.info = info
        self._replace, self._put, self._remove = replace, put, remove

    def replace(self, plural: str, objects: list[Obj]) -> None:
        self._replace(objects)

    def put(self, plural: str, obj: Obj) -> None:
        self._put(obj)

    def remove(self, plural: str, namespace: str, name: str) -> None:
        self._remove(name)


class PolicyFollower(StoreFollower):
    """Keeps a validating and a mutating :class:`PolicySet` current with the stored objects
    (each kind the catalogue serves)."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        validating: PolicySet[Any],
        mutating: PolicySet[Any],
        *,
        retry_seconds: float = 0.5,
    ) -> None:
        self.sets = {
            VALIDATING_POLICIES: validating,
            VALIDATING_BINDINGS: validating,
            MUTATING_POLICIES: mutating,
            MUTATING_BINDINGS: mutating,
        }
        infos = {p: catalogue.lookup(GROUP, "v1", p) for p in self.sets}
        served = {p: info for p, info in infos.items() if info is not None}
        super().__init__(registry, served, name="policies", retry_seconds=retry_seconds)

    def replace(self, plural: str, objects: list[Obj]) -> None:
        held = self.sets[plural]
        (held.replace_policies if _is_policy(plural) else held.replace_bindings)(objects)

    def put(self, plural: str, obj: Obj) -> None:
        held = self.sets[plural]
        (held.put_policy if _is_policy(plural) else held.put_binding)(obj)

    def remove(self, plural: str, namespace: str, name: str) -> None:
        held = self.sets[plural]
        (held.remove_policy if _is_policy(plural) else held.remove_binding)(name)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        held = self.sets[plural]
        return held.holds_policy(name) if _is_policy(plural) else name in held.bindings

    async def settled(self, plural: str, name: str, revision: int | None) -> None:
        """Return once the sets hold every change of ``plural`` up to ``revision``, or (None)
        no longer hold the object (or after
        :data:`kubelite.api.machinery.following.CAUGHT_UP_TIMEOUT`, when the watch is
        behind). The kinds are cluster-scoped."""
        await self.caught_up(plural, "", name, revision)


def _is_policy(plural: str) -> bool:
    return plural.endswith("policies")


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
