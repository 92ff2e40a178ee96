"""What every storage of one server shares, handed to each resource's store when the registry
builds it: :class:`Backing` (kube's ``generic.RESTOptions``, k8s.io/apiserver
``pkg/registry/generic/options.go``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubelite.api.machinery.admission import Admission
from kubelite.api.machinery.recent import RecentValues
from kubelite.storage import Store

if TYPE_CHECKING:
    from kubelite.api.machinery.watchcache import WatchCacheSet


@dataclass(frozen=True, slots=True)
class Backing:
    """What every storage of one server shares: the store, the values this server wrote last
    (the starting guess of guaranteed_update), the watch caches and the admission chain."""

    store: Store
    recent: RecentValues
    caches: WatchCacheSet
    admission: Admission
