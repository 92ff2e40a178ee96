"""The kind table: which strategy and which storages serve each kind.

Everything kind-specific lives in this package: a kind's strategy (its module by group family),
and for the few kinds with verbs of their own, their storages (namespaces, service accounts and
their tokens, pods and bindings, component statuses, the review kinds, CRDs, RBAC's roles and
bindings with their escalation checks, the webhook configurations). Every other built-in kind
is served by the generic store with its strategy (or the default one), plus the generic
``status`` and ``scale`` subresources it declares; every custom resource by the generic store
with the custom resource strategy. A resource whose keys the store keeps past versions of (the
history retention policy) also serves ``history`` (:mod:`kubelite.api.machinery.history`).

The generic machinery (``kubelite.api.machinery.generic``, ``registry``, ``rest``, ``strategy`` and
the server's handlers) never imports this package; an import-linter contract in ``make check``
keeps it so.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from kubelite.api.auth.authn import ServiceAccountTokens
from kubelite.api.auth.authorizer import Authorizer
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import Codec, storage_prefix
from kubelite.api.kinds import (
    admissionpolicies,
    core,
    defaults,
    namespaces,
    platform,
    rbacstorage,
    reviews,
    rules,
    validation,
    webhookconfigs,
    workloads,
)
from kubelite.api.kinds.allocation import ServiceRanges
from kubelite.api.kinds.apiextensions import CaughtUp, CRDStorages
from kubelite.api.kinds.custom import CustomResourceStrategy
from kubelite.api.kinds.reviews import ReviewREST, TokenCheck
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.kinds.settled import Settled
from kubelite.api.kinds.webhookconversion import WebhookConverter
from kubelite.api.machinery import history
from kubelite.api.machinery.generic import Backing, GenericStore
from kubelite.api.machinery.registry import Registry, Storages
from kubelite.api.machinery.strategy import Strategy
from kubelite.api.machinery.subresources import generic_subresources
from kubelite.api.machinery.user import User
from kubelite.api.machinery.webhookclient import WebhookClient
from kubelite.storage import Store

StorageFactory = Callable[[ResourceInfo, Backing], Storages]

#: Every built-in kind whose strategy is not the default, by (group, plural).
STRATEGIES: dict[tuple[str, str], Strategy] = {
    **core.STRATEGIES,
    **workloads.STRATEGIES,
    **platform.STRATEGIES,
}
DEFAULT_STRATEGY = BuiltinStrategy()

for _module in defaults.MODULES:
    rules.register(defaulters=_module.DEFAULTERS)
for _module in validation.MODULES:
    rules.register(validators=_module.VALIDATORS)


def standard_storages(
    info: ResourceInfo,
    strategy: Strategy,
    backing: Backing,
    converter: WebhookConverter | None = None,
) -> Storages:
    """The generic store and the generic subresources ``info`` declares."""
    store = GenericStore(info, strategy, backing, converter=converter)
    return {"": store, **generic_subresources(store)}


class BuiltinKinds:
    """The kind table of a server (:class:`kubelite.api.machinery.registry.Kinds`).

    ``tokens`` signs service account tokens (None: ``serviceaccounts/<n>/token`` is not served).
    :attr:`webhook_client` calls CRD conversion webhooks (None: a kind converted by a webhook
    answers every read and write at another version with the call's failure). Six hooks are
    set once the objects they belong to exist, as they need the registry built
    with this table: :attr:`check_token` (TokenReview asks who a token is), :attr:`authorizer`
    (the access reviews ask it, and RBAC's storages check writes of roles and bindings with it;
    None, without authentication or under AlwaysAllow: reviews allow everything and no write is
    checked), :attr:`rbac_settled` (an RBAC write waits for this server's authorizer),
    :attr:`policy_settled` (an admission policy write waits for this server's policy follower),
    :attr:`webhooks_settled` (a webhook configuration's write waits for this server's webhook
    source) and :meth:`set_crd_caught_up` (a CRD write waits for this server's CRD controller).
    """

    def __init__(
        self,
        catalogue: Catalogue,
        tokens: ServiceAccountTokens | None = None,
        service_ranges: ServiceRanges | None = None,
        retained: Collection[str] = (),
    ) -> None:
        self.catalogue = catalogue
        #: the key prefixes whose past versions the store keeps: their kinds serve ``history``
        self.retained = frozenset(retained)
        self.tokens = tokens
        self.service_ranges = service_ranges or ServiceRanges()
        self.custom = CustomResourceStrategy()
        self.crds = CRDStorages(catalogue)
        self.check_token: TokenCheck | None = None
        self.webhook_client: WebhookClient | None = None
        self.authorizer: Authorizer | None = None
        #: returns once the server's authorizer holds an RBAC write (None: answer at once)
        self.rbac_settled: Settled | None = None
        #: returns once the admission policy follower holds a write of a policy or binding
        self.policy_settled: admissionpolicies.Settled | None = None
        #: returns once the server's webhook source holds a webhook configuration write
        self.webhooks_settled: Settled | None = None
        self._special: dict[tuple[str, str], StorageFactory] = {
            (namespaces.GROUP, namespaces.PLURAL): namespaces.storages,
            ("", "serviceaccounts"): self._service_accounts,
            ("", "pods"): core.pod_storages,
            ("", "services"): self._services,
            ("", "bindings"): self._bindings,
            ("", "componentstatuses"): core.read_only_storages,
            ("apiextensions.k8s.io", "customresourcedefinitions"): self.crds,
        }
        for review in reviews.REVIEWS:
            self._special[review] = self._review
        for plural in rbacstorage.PLURALS:
            self._special[(rbacstorage.GROUP, plural)] = self._rbac
        for plural in admissionpolicies.PLURALS:
            self._special[(admissionpolicies.GROUP, plural)] = self._admission_policies
        for plural in webhookconfigs.PLURALS:
            self._special[(webhookconfigs.GROUP, plural)] = self._webhook_configs

    @property
    def terminating_custom_kinds(self) -> set[tuple[str, str]]:
        """(group, plural) of custom kinds whose CRD is being deleted (creates get 405)."""
        return self.custom.terminating

    def set_crd_caught_up(self, caught_up: CaughtUp) -> None:
        self.crds.caught_up = caught_up

    def storages(self, info: ResourceInfo, backing: Backing) -> Storages:
        found = self._storages(info, backing)
        if storage_prefix(info, None) in self.retained:
            main = found.get("")
            codec = main.codec if isinstance(main, GenericStore) else Codec(info)
            found = {**found, history.NAME: history.HistoryREST(info, backing.store, codec)}
        return found

    def _storages(self, info: ResourceInfo, backing: Backing) -> Storages:
        if not info.builtin:
            converter = WebhookConverter(info, self._webhook_client) if info.conversion else None
            return standard_storages(info, self.custom, backing, converter)
        key = (info.group, info.plural)
        special = self._special.get(key)
        if special is not None:
            return special(info, backing)
        return standard_storages(info, STRATEGIES.get(key, DEFAULT_STRATEGY), backing)

    def _services(self, info: ResourceInfo, backing: Backing) -> Storages:
        return core.service_storages(info, backing, self.service_ranges)

    def _service_accounts(self, info: ResourceInfo, backing: Backing) -> Storages:
        return core.service_account_storages(info, backing, self.tokens)

    def _bindings(self, info: ResourceInfo, backing: Backing) -> Storages:
        pods = self.catalogue.lookup("", "v1", "pods")
        assert pods is not None
        pod_store = GenericStore(pods, core.STRATEGIES[("", "pods")], backing)
        return {"": core.BindingREST(pod_store, info)}

    def _review(self, info: ResourceInfo, backing: Backing) -> Storages:
        return {"": ReviewREST(info, self._check_token, self._authorizer)}

    def _rbac(self, info: ResourceInfo, backing: Backing) -> Storages:
        return rbacstorage.storages(
            info, backing, self._authorizer, self.catalogue, self._rbac_settled
        )

    async def _rbac_settled(
        self, plural: str, namespace: str, name: str, revision: int | None
    ) -> None:
        if self.rbac_settled is not None:
            await self.rbac_settled(plural, namespace, name, revision)

    def _webhook_client(self) -> WebhookClient | None:
        return self.webhook_client

    def _admission_policies(self, info: ResourceInfo, backing: Backing) -> Storages:
        return admissionpolicies.storages(info, backing, self._policy_settled)

    async def _policy_settled(self, plural: str, name: str, revision: int | None) -> None:
        if self.policy_settled is not None:
            await self.policy_settled(plural, name, revision)

    def _webhook_configs(self, info: ResourceInfo, backing: Backing) -> Storages:
        return webhookconfigs.storages(info, backing, self._webhooks_settled)

    async def _webhooks_settled(
        self, plural: str, namespace: str, name: str, revision: int | None
    ) -> None:
        if self.webhooks_settled is not None:
            await self.webhooks_settled(plural, namespace, name, revision)

    def _authorizer(self) -> Authorizer | None:
        return self.authorizer

    async def _check_token(self, token: str) -> User | None:
        return None if self.check_token is None else await self.check_token(token)


def new_registry(store: Store, catalogue: Catalogue) -> Registry:
    """A registry serving every built-in kind, without controllers or admission plugins (for
    tests of the storages; a server is built by ``kubelite.server.assembly``)."""
    return Registry(store, BuiltinKinds(catalogue))
