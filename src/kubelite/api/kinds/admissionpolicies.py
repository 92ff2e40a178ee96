"""The storages of the admission policy kinds (ValidatingAdmissionPolicy, MutatingAdmissionPolicy
and their bindings): the generic store, whose writes answer once this server's policy follower
holds them (:meth:`kubelite.api.policy.PolicyFollower.settled`), so the client's next request
is admitted by the policy it just wrote, as RBAC's writes wait for the authorizer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.generic import Backing, GenericStore
from kubelite.api.kinds import platform
from kubelite.api.registry import Storages
from kubelite.api.rest import Context, DeleteOptions, ObjectUpdate, WriteOptions
from kubelite.api.strategy import Strategy
from kubelite.api.subresources import generic_subresources

Obj = dict[str, Any]
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
    store = SettledStore(info, platform.STRATEGIES[(GROUP, info.plural)], backing, settled)
    return {"": store, **generic_subresources(store)}


class SettledStore(GenericStore):
    """The generic store; a write (not a dry run) answers once ``settled`` says so."""

    def __init__(
        self, info: ResourceInfo, strategy: Strategy, backing: Backing, settled: Settled
    ) -> None:
        super().__init__(info, strategy, backing)
        self.settled = settled

    async def create(self, ctx: Context, body: Obj, opts: WriteOptions) -> Obj:
        created = await super().create(ctx, body, opts)
        if not opts.dry_run:
            await self._settle(created)
        return created

    async def update(
        self,
        ctx: Context,
        name: str,
        update: ObjectUpdate,
        opts: WriteOptions,
        *,
        strategy: Strategy | None = None,
        subresource: str = "",
    ) -> tuple[Obj, bool]:
        result = await super().update(
            ctx, name, update, opts, strategy=strategy, subresource=subresource
        )
        if not opts.dry_run:
            await self._settle(result[0])
        return result

    async def delete(self, ctx: Context, name: str, opts: DeleteOptions) -> tuple[Obj, bool]:
        answer, gone = await super().delete(ctx, name, opts)
        if not opts.dry_run:
            if gone:
                await self.settled(self.info.plural, name, None)
            else:
                await self._settle(answer)
        return answer, gone

    async def _settle(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        await self.settled(
            self.info.plural, str(meta.get("name") or ""), int(meta.get("resourceVersion") or 0)
        )
