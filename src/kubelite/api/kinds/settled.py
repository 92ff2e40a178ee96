"""The generic store of a kind whose writes answer only once this server's follower holds them
(RBAC's kinds, the admission policy kinds, the webhook configurations), so the client's next
request already meets what it just wrote, or no longer meets what it removed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.generic import Backing, GenericStore
from kubelite.api.rest import Context, DeleteOptions, ObjectUpdate, WriteOptions
from kubelite.api.strategy import Strategy

Obj = dict[str, Any]
#: (plural, namespace, name, revision): returns once the follower holds a write of that object
#: at ``revision`` (None: its removal).
Settled = Callable[[str, str, str, int | None], Awaitable[None]]


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
                await self.settled(self.info.plural, self.namespace(ctx) or "", name, None)
            else:
                await self._settle(answer)
        return answer, gone

    async def _settle(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        await self.settled(
            self.info.plural,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            int(meta.get("resourceVersion") or 0),
        )
