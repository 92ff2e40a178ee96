"""What a built-in resource's module declares (:class:`Resource`), and what its storages may be
handed (:class:`Wiring`).

A resource with behaviour of its own has one module, ``kinds/<group>/<resource>.py``, ending in
``RESOURCE = Resource(group, plural, strategy, storages)``: its strategy (kube's flags, with the
kind's defaulters and validators) and, for the few with verbs of their own, the factory of its
storages. A resource that differs from the default only in kube's flags is a row of its group's
``RESOURCES`` (``kinds/<group>/__init__.py``). The kind table (:mod:`kubelite.api.kinds`) is
built from those tuples where the server is assembled; nothing registers itself on import.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubelite.api.auth.authn import ServiceAccountTokens
from kubelite.api.auth.authorizer import Authorizer
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.kinds.settled import Settled
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.registry import Storages
from kubelite.api.machinery.strategy import Strategy
from kubelite.api.machinery.subresources import generic_subresources
from kubelite.api.machinery.user import User
from kubelite.api.machinery.webhookclient import WebhookClient

if TYPE_CHECKING:
    from kubelite.api.kinds.core.serviceallocation import ServiceRanges

#: (token): who the token authenticates (None: nobody)
TokenCheck = Callable[[str], Awaitable[User | None]]
#: (plural, name, revision): returns once the policy follower holds a write of that object at
#: ``revision`` (None: its removal)
PolicySettled = Callable[[str, str, int | None], Awaitable[None]]


class Wiring:
    """What a server hands the storages of its kinds: the catalogue, the service account token
    signer (None: ``serviceaccounts/<n>/token`` is not served), the Service IP and port ranges, the
    table's strategies (:meth:`strategy`), and hooks set once the objects they belong to exist (as
    they need the registry built with the kind table): :attr:`check_token` (TokenReview asks who a
    token is), :attr:`authorizer` (the access reviews ask it, and RBAC's storages check writes of
    roles and bindings with it; None, without authentication or under AlwaysAllow: reviews allow
    everything and no write is checked), :attr:`rbac_settled` (an RBAC write waits for this server's
    authorizer), :attr:`policy_settled` (an admission policy write waits for this server's policy
    follower), :attr:`webhooks_settled` (a webhook configuration's write waits for this server's
    webhook source) and :attr:`webhook_client` (calls CRD conversion webhooks; None: a kind
    converted by a webhook answers every read and write at another version with the call's failure).
    A storage reads a hook when it runs (the methods below), never when it is built."""

    def __init__(
        self,
        catalogue: Catalogue,
        tokens: ServiceAccountTokens | None,
        service_ranges: ServiceRanges,
    ) -> None:
        self.catalogue = catalogue
        self.tokens = tokens
        self.service_ranges = service_ranges
        self.check_token: TokenCheck | None = None
        self.webhook_client: WebhookClient | None = None
        self.authorizer: Authorizer | None = None
        #: returns once the server's authorizer holds an RBAC write (None: answer at once)
        self.rbac_settled: Settled | None = None
        #: returns once the admission policy follower holds a write of a policy or binding
        self.policy_settled: PolicySettled | None = None
        #: returns once the server's webhook source holds a webhook configuration write
        self.webhooks_settled: Settled | None = None

    def strategy(self, group: str, plural: str) -> Strategy:
        """The strategy of a built-in resource (its table's)."""
        raise NotImplementedError

    def current_authorizer(self) -> Authorizer | None:
        return self.authorizer

    def current_webhook_client(self) -> WebhookClient | None:
        return self.webhook_client

    async def token_user(self, token: str) -> User | None:
        return None if self.check_token is None else await self.check_token(token)

    async def rbac_write_settled(
        self, plural: str, namespace: str, name: str, revision: int | None
    ) -> None:
        if self.rbac_settled is not None:
            await self.rbac_settled(plural, namespace, name, revision)

    async def policy_write_settled(self, plural: str, name: str, revision: int | None) -> None:
        if self.policy_settled is not None:
            await self.policy_settled(plural, name, revision)

    async def webhook_write_settled(
        self, plural: str, namespace: str, name: str, revision: int | None
    ) -> None:
        if self.webhooks_settled is not None:
            await self.webhooks_settled(plural, namespace, name, revision)


StorageFactory = Callable[[ResourceInfo, Strategy, Backing, Wiring], Storages]


def standard_storages(
    info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring
) -> Storages:
    """The generic store and the generic subresources ``info`` declares."""
    store = GenericStore(info, strategy, backing)
    return {"": store, **generic_subresources(store)}


@dataclass(frozen=True)
class Resource:
    """A built-in resource: its strategy, and the factory of its storages (handed the
    resource's info, this strategy, the store's backing and the server's :class:`Wiring`)."""

    group: str
    plural: str
    strategy: Strategy
    storages: StorageFactory = standard_storages

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)
