"""Reads over a generic store: :class:`ReadsOf`, the get, list and watch of a
:class:`~kubelite.api.machinery.generic.GenericStore` for a storage that serves only some of its
verbs (kube's REST types that embed a ``*genericregistry.Store`` and expose a few of its methods,
as k8s.io/kubernetes ``pkg/registry/core/namespace/storage/storage.go`` does), and :func:`collect`,
a whole List read page by page (the list ``Store.List`` answers, k8s.io/apiserver
``pkg/registry/generic/registry/store.go``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.machinery.listing import ListOptions, ListScan
from kubelite.api.machinery.rest import Context, GetOptions, WatchOptions

if TYPE_CHECKING:
    from kubelite.api.machinery.generic import GenericStore
    from kubelite.api.machinery.watchevents import WatchEvent

Obj = dict[str, Any]


class ReadsOf:
    """The reads (get, list, watch) of a generic store, for a storage that serves some of its
    verbs and not others (a read-only kind; the Namespace without deletecollection)."""

    def __init__(self, store: GenericStore) -> None:
        self.store = store
        self.info = store.info

    @property
    def object_info(self) -> ResourceInfo:
        return self.info

    async def get(self, ctx: Context, name: str, opts: GetOptions) -> Obj:
        return await self.store.get(ctx, name, opts)

    def list(self, ctx: Context, opts: ListOptions) -> ListScan:
        return self.store.list(ctx, opts)

    def watch(self, ctx: Context, opts: WatchOptions) -> AsyncGenerator[WatchEvent, None]:
        return self.store.watch(ctx, opts)

    def reset_fields(self) -> tuple[str, ...]:
        return self.store.reset_fields()


async def collect(scan: ListScan) -> Obj:
    """A whole List read through ``scan``."""
    items = [obj async for page in scan.pages() for obj in page]
    info = scan.info
    return {
        "kind": info.list_kind,
        "apiVersion": info.group_version,
        "metadata": scan.metadata,
        "items": items,
    }
