"""The write hooks of a kind whose writes answer only once this server's follower holds them
(RBAC's kinds, the admission policy kinds, the webhook configurations), so the client's next
request already meets what it just wrote, or no longer meets what it removed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.machinery.rest import Context
from kubelite.api.machinery.writehooks import WriteHooks
from kubelite.api.machinery.writesteps import Written

Obj = dict[str, Any]
#: (plural, namespace, name, revision): returns once the follower holds a write of that object
#: at ``revision`` (None: its removal).
Settled = Callable[[str, str, str, int | None], Awaitable[None]]


class SettledWrites(WriteHooks):
    """A create, update or delete (not a dry run) answers once ``settled`` says the follower
    holds what it answers (an update's object even when nothing changed), or a removal once
    the follower no longer holds the object."""

    def __init__(self, info: ResourceInfo, settled: Settled) -> None:
        self.info = info
        self.settled = settled

    async def after_create(self, ctx: Context, obj: Obj) -> None:
        await self._settle(obj)

    async def after_update(self, ctx: Context, result: Written) -> None:
        await self._settle(result.obj)

    async def after_delete(self, ctx: Context, name: str, result: Written) -> None:
        if result.purged:
            namespace = ctx.namespace if self.info.namespaced else None
            await self.settled(self.info.plural, namespace or "", name, None)
        else:
            await self._settle(result.obj)

    async def _settle(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        await self.settled(
            self.info.plural,
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
            int(meta.get("resourceVersion") or 0),
        )
