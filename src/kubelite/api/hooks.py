"""What a kind adds to the registry's generic write path: kube-apiserver's per-kind strategies.

The registry calls :meth:`KindHooks.on_create` on a prepared new object, :meth:`on_update` on the
object a write is about to store (inside the optimistic loop, so it may run more than once),
and :meth:`after_write` once a write is stored. Hooks raise :class:`~kubelite.api.errors.APIError`
to refuse a write; they never write to storage themselves.
"""

from __future__ import annotations

from typing import Any

from kubelite.api.catalogue import ResourceInfo

Obj = dict[str, Any]


class KindHooks:
    """The default: nothing added."""

    def on_create(self, info: ResourceInfo, obj: Obj) -> None:
        """Mutate or refuse a new object before it is stored."""

    def on_update(self, info: ResourceInfo, current: Obj, new: Obj, subresource: str) -> None:
        """Mutate or refuse the replacement of ``current`` by ``new``."""

    async def after_write(self, info: ResourceInfo, obj: Obj) -> None:
        """Called with the stored object (or the deleted one) after a successful write."""
