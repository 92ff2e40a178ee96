"""ServiceAccounts (kube's pkg/registry/core/serviceaccount): returned on delete, and
``serviceaccounts/<name>/token``, which signs a token for the account."""

from __future__ import annotations

from typing import Any

from kubelite.api import errors
from kubelite.api.auth import authn
from kubelite.api.auth.authn import AccountLookup
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.kinds.resource import Resource, Wiring
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.registry import Registry, Storages
from kubelite.api.machinery.rest import Context, GetOptions, WriteOptions
from kubelite.api.machinery.strategy import Strategy

Obj = dict[str, Any]


class TokenREST:
    """``POST .../serviceaccounts/<name>/token`` (``kubectl create token``): a TokenRequest
    answered with a token for the account; nothing is stored."""

    object_info = None

    def __init__(self, accounts: GenericStore, tokens: authn.ServiceAccountTokens) -> None:
        self.accounts = accounts
        self.info = accounts.info
        self.tokens = tokens

    async def create_named(self, ctx: Context, name: str, body: Obj, opts: WriteOptions) -> Obj:
        account = await self.accounts.get(ctx, name, GetOptions())
        return authn.token_request_response(self.tokens, account, body)


def service_account_storages(
    info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring
) -> Storages:
    store = GenericStore(info, strategy, backing)
    found: Storages = {"": store}
    if wiring.tokens is not None:
        found["token"] = TokenREST(store, wiring.tokens)
    return found


def service_account_lookup(registry: Registry, catalogue: Catalogue) -> AccountLookup:
    """How the token authenticator finds the account a token names (None when it is gone)."""
    info = catalogue.require("", "v1", "serviceaccounts")

    async def lookup(namespace: str, name: str) -> Obj | None:
        try:
            return await registry.get(info, namespace, name)
        except errors.APIError:
            return None

    return lookup


RESOURCE = Resource(
    "", "serviceaccounts", BuiltinStrategy(returns_deleted_object=True), service_account_storages
)
