"""The storages of ValidatingWebhookConfiguration and MutatingWebhookConfiguration: the generic
store, each write answered once the server's webhook source holds it (like RBAC's writes,
:mod:`kubelite.api.kinds.rbacstorage`), so the client's next request already meets the
webhook it just configured, or no longer meets the one it removed.

The hook that waits is set by the assembly once the source exists
(:attr:`kubelite.api.kinds.BuiltinKinds.webhooks_settled`); until then a write answers at once.
"""

from __future__ import annotations

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds import platform
from kubelite.api.kinds.settled import Settled, SettledWrites
from kubelite.api.machinery.generic import Backing, GenericStore
from kubelite.api.machinery.registry import Storages

GROUP = "admissionregistration.k8s.io"
PLURALS = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")


def storages(info: ResourceInfo, backing: Backing, settled: Settled) -> Storages:
    strategy = platform.STRATEGIES[(GROUP, info.plural)]
    return {"": GenericStore(info, strategy, backing, hooks=SettledWrites(info, settled))}
