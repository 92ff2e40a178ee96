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

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from kubelite.api.catalogue import Catalogue
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry

Obj = dict[str, Any]

GROUP = "admissionregistration.k8s.io"
VALIDATING = "validatingwebhookconfigurations"
MUTATING = "mutatingwebhookconfigurations"
PLURALS = (VALIDATING, MUTATING)
DEFAULT_TIMEOUT = 10
#: the AdmissionReview versions kubelite sends, in kube's order of preference
REVIEW_VERSIONS = ("v1", "v1beta1")


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


class WebhookSource(StoreFollower):
    """The webhooks of both kinds, current with the store (:attr:`validating`,
    :attr:`mutating`); :meth:`start` lists them, then follows them until :meth:`close`."""

    def __init__(
        self, registry: Registry, catalogue: Catalogue, *, retry_seconds: float = 0.5
    ) -> None:
        infos = {p: catalogue.require(GROUP, "v1", p) for p in PLURALS}
        super().__init__(registry, infos, name="webhooks", retry_seconds=retry_seconds)
        self.validating: tuple[Hook, ...] = ()
        self.mutating: tuple[Hook, ...] = ()
        self._objects: dict[str, dict[str, Obj]] = {p: {} for p in PLURALS}

    def replace(self, plural: str, objects: list[Obj]) -> None:
        self._objects[plural] = {item["metadata"]["name"]: item for item in objects}

    def put(self, plural: str, obj: Obj) -> None:
        self._objects[plural][obj["metadata"]["name"]] = obj

    def remove(self, plural: str, namespace: str, name: str) -> None:
        self._objects[plural].pop(name, None)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        """Whether a configuration ``name`` of ``plural`` is held (both kinds are
        cluster-scoped: ``namespace`` is there for the base's signature)."""
        return name in self._objects.get(plural, {})

    def changed(self, plural: str) -> None:
        hooks = hooks_of(self._objects[plural], plural == MUTATING)
        if plural == MUTATING:
            self.mutating = hooks
        else:
            self.validating = hooks

    #: (plural, namespace, name, revision): returns once the hooks hold every change of
    #: ``plural`` up to ``revision``, or (None) no longer hold ``name``
    settled = StoreFollower.caught_up
