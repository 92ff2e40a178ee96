"""The storages of the admission policy kinds (ValidatingAdmissionPolicy, MutatingAdmissionPolicy
and their bindings): the generic store, whose writes answer once this server's policy follower
holds them (:meth:`kubelite.api.admission.policy.PolicyFollower.settled`), so the client's next
request is admitted by the policy it just wrote, as RBAC's writes wait for the authorizer."""

from __future__ import annotations

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.resource import Wiring
from kubelite.api.kinds.settled import SettledWrites
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.registry import Storages
from kubelite.api.machinery.strategy import Strategy
from kubelite.api.machinery.subresources import generic_subresources


def policy_storages(
    info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring
) -> Storages:
    async def settled_here(plural: str, namespace: str, name: str, revision: int | None) -> None:
        await wiring.policy_write_settled(plural, name, revision)  # the kinds are cluster-scoped

    store = GenericStore(info, strategy, backing, hooks=SettledWrites(info, settled_here))
    return {"": store, **generic_subresources(store)}
