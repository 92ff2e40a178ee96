"""The storages of the admission policy kinds (ValidatingAdmissionPolicy, MutatingAdmissionPolicy
and their bindings): the generic store, whose writes answer once this server's policy follower
holds them (:meth:`kubelite.api.admission.policy.PolicyFollower.settled`), so the client's next
request is admitted by the policy it just wrote, as RBAC's writes wait for the authorizer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds import platform
from kubelite.api.kinds.settled import SettledWrites
from kubelite.api.machinery.generic import Backing, GenericStore
from kubelite.api.machinery.registry import Storages
from kubelite.api.machinery.subresources import generic_subresources

#: (plural, name, revision): returns once the policy follower holds a write of that object at
#: ``revision`` (None: its removal)
Settled = Callable[[str, str, int | None], Awaitable[None]]
GROUP = "admissionregistration.k8s.io"
PLURALS = (
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
)


def storages(info: ResourceInfo, backing: Backing, settled: Settled) -> Storages:
    async def settled_here(plural: str, namespace: str, name: str, revision: int | None) -> None:
        await settled(plural, name, revision)  # the kinds are cluster-scoped

    strategy = platform.STRATEGIES[(GROUP, info.plural)]
    store = GenericStore(info, strategy, backing, hooks=SettledWrites(info, settled_here))
    return {"": store, **generic_subresources(store)}
