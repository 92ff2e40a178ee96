"""The storages of ValidatingWebhookConfiguration and MutatingWebhookConfiguration: the generic
store, each write answered once the server's webhook source holds it (like RBAC's writes,
:mod:`kubelite.api.kinds.rbacstorage`), so the client's next request already meets the
webhook it just configured, or no longer meets the one it removed.

The hook that waits is set by the assembly once the source exists
(:attr:`kubelite.api.kinds.BuiltinKinds.webhooks_settled`); until then a write answers at once.
"""

from __future__ import annotations

from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.generic import Backing, GenericStore
from kubelite.api.kinds import platform
from kubelite.api.kinds.rbacstorage import Settled
from kubelite.api.registry import Storages
from kubelite.api.rest import Context, DeleteOptions, ObjectUpdate, WriteOptions
from kubelite.api.strategy import Strategy

Obj = dict[str, Any]

GROUP = "admissionregistration.k8s.io"
PLURALS = ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")


def storages(info: ResourceInfo, backing: Backing, settled: Settled) -> Storages:
    return {"": SettledStore(info, platform.STRATEGIES[(GROUP, info.plural)], backing, settled)}


class SettledStore(GenericStore):
    """The generic store, each write (not a dry run) waiting for ``settled``."""

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
                await self.settled(self.info.plural, "", name, None)
            else:
                await self._settle(answer)
        return answer, gone

    async def _settle(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        revision = int(meta.get("resourceVersion") or 0)
        await self.settled(self.info.plural, "", str(meta.get("name") or ""), revision)
