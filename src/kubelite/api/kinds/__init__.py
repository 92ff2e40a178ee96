"""The kind table: which strategy and which storages serve each kind.

Everything kind-specific lives in this package, one subpackage per API group
(``kinds/<group>/``), one module per resource with behaviour of its own
(``kinds/<group>/<resource>.py``: its strategy with its defaulters and validators, and its
storages when it has verbs of its own), declared as a :class:`~.resource.Resource`. Every
group's ``RESOURCES`` lists its resources; :data:`RESOURCES` joins them, and the server's
assembly builds its :class:`BuiltinKinds` from that tuple: nothing registers itself on import.

A built-in resource that no group lists is served by the generic store with the default
strategy, plus the generic ``status`` and ``scale`` subresources it declares; every custom
resource by the generic store with the custom resource strategy. A resource whose keys the
store keeps past versions of (the history retention policy) also serves ``history``
(:mod:`kubelite.api.machinery.history`).

The generic machinery (``kubelite.api.machinery``, ``encoding``, ``fieldmanager`` and the rest
of ``kubelite.api`` but this package and the controllers) and the server's handlers never
import this package; import-linter contracts in ``make check`` keep it so.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from kubelite.api.auth.authn import ServiceAccountTokens
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import Codec, storage_prefix
from kubelite.api.kinds import (
    admissionregistration,
    apiregistration,
    apps,
    authorization,
    autoscaling,
    batch,
    coordination,
    core,
    discovery,
    dra,
    flowcontrol,
    networking,
    node,
    policy,
    rbac,
    scheduling,
    storage,
)
from kubelite.api.kinds.apiextensions.customresourcedefinitions import CaughtUp, CRDStorages
from kubelite.api.kinds.apiextensions.customresources import CustomResourceStrategy
from kubelite.api.kinds.apiextensions.webhookconversion import WebhookConverter
from kubelite.api.kinds.core.serviceallocation import ServiceRanges
from kubelite.api.kinds.resource import Resource, Wiring, standard_storages
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery import history
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.registry import Registry, Storages
from kubelite.api.machinery.strategy import Strategy
from kubelite.api.machinery.subresources import generic_subresources
from kubelite.storage import Store

#: Every built-in resource whose strategy or storages are not the default ones, by group.
RESOURCES: tuple[Resource, ...] = (
    *core.RESOURCES,
    *apps.RESOURCES,
    *batch.RESOURCES,
    *autoscaling.RESOURCES,
    *policy.RESOURCES,
    *networking.RESOURCES,
    *discovery.RESOURCES,
    *rbac.RESOURCES,
    *authorization.RESOURCES,
    *admissionregistration.RESOURCES,
    *flowcontrol.RESOURCES,
    *dra.RESOURCES,
    *storage.RESOURCES,
    *coordination.RESOURCES,
    *scheduling.RESOURCES,
    *node.RESOURCES,
    *apiregistration.RESOURCES,
)
DEFAULT_STRATEGY = BuiltinStrategy()


class BuiltinKinds(Wiring):
    """The kind table of a server (:class:`kubelite.api.machinery.registry.Kinds`): the
    ``resources`` it is given (by (group, plural); a resource listed twice is an error), the
    CRD resource bound to ``catalogue``, and custom resources; the hooks its storages read are
    :class:`~.resource.Wiring`'s, plus :meth:`set_crd_caught_up` (a CRD write waits for this
    server's CRD controller)."""

    def __init__(
        self,
        catalogue: Catalogue,
        tokens: ServiceAccountTokens | None = None,
        service_ranges: ServiceRanges | None = None,
        retained: Collection[str] = (),
        resources: Iterable[Resource] = RESOURCES,
    ) -> None:
        super().__init__(catalogue, tokens, service_ranges or ServiceRanges())
        #: the key prefixes whose past versions the store keeps: their kinds serve ``history``
        self.retained = frozenset(retained)
        self.custom = CustomResourceStrategy()
        self.crds = CRDStorages(catalogue)
        self.table: dict[tuple[str, str], Resource] = {}
        for resource in (*resources, self.crds.resource()):
            if resource.key in self.table:
                raise ValueError(f"{resource.key} is listed twice in the kind table")
            self.table[resource.key] = resource

    @property
    def terminating_custom_kinds(self) -> set[tuple[str, str]]:
        """(group, plural) of custom kinds whose CRD is being deleted (creates get 405)."""
        return self.custom.terminating

    def set_crd_caught_up(self, caught_up: CaughtUp) -> None:
        self.crds.caught_up = caught_up

    def strategy(self, group: str, plural: str) -> Strategy:
        resource = self.table.get((group, plural))
        return DEFAULT_STRATEGY if resource is None else resource.strategy

    def storages(self, info: ResourceInfo, backing: Backing) -> Storages:
        found = self._storages(info, backing)
        if storage_prefix(info, None) in self.retained:
            main = found.get("")
            codec = main.codec if isinstance(main, GenericStore) else Codec(info)
            found = {**found, history.NAME: history.HistoryREST(info, backing.store, codec)}
        return found

    def _storages(self, info: ResourceInfo, backing: Backing) -> Storages:
        if not info.builtin:
            converter = None
            if info.conversion:
                converter = WebhookConverter(info, self.current_webhook_client)
            store = GenericStore(info, self.custom, backing, converter=converter)
            return {"": store, **generic_subresources(store)}
        resource = self.table.get((info.group, info.plural))
        if resource is None:
            return standard_storages(info, DEFAULT_STRATEGY, backing, self)
        return resource.storages(info, resource.strategy, backing, self)


def new_registry(store: Store, catalogue: Catalogue) -> Registry:
    """A registry serving every built-in kind, without controllers or admission plugins (for
    tests of the storages; a server is built by ``kubelite.server.assembly``)."""
    return Registry(store, BuiltinKinds(catalogue))
