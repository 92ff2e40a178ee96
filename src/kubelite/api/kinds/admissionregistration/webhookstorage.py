"""The storages of ValidatingWebhookConfiguration and MutatingWebhookConfiguration: the generic
store, each write answered once the server's webhook source holds it (like RBAC's writes,
:mod:`kubelite.api.kinds.rbac.storage`), so the client's next request already meets the
webhook it just configured, or no longer meets the one it removed.

The hook that waits is set by the assembly once the source exists
(:attr:`kubelite.api.kinds.resource.Wiring.webhooks_settled`); until then a write answers at
once.
"""

from __future__ import annotations

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.resource import Wiring
from kubelite.api.kinds.settled import SettledWrites
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.registry import Storages
from kubelite.api.machinery.strategy import Strategy


def webhook_storages(
    info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring
) -> Storages:
    hooks = SettledWrites(info, wiring.webhook_write_settled)
    return {"": GenericStore(info, strategy, backing, hooks=hooks)}
