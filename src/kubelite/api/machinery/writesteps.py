"""What one try of :meth:`~kubelite.api.machinery.generic.GenericStore.guaranteed_update` is made
of and what a write did: a :data:`Step` computes the new object from the current one (kube's
``storage.UpdateFunc``, k8s.io/apiserver ``pkg/storage/interface.go``) and answers the object to
store or :class:`Purge` (delete the key); :class:`Written` is what the loop stored; :func:`stamped`
the resourceVersion of a write's answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kubelite.api.encoding import resourceversion as rv

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Purge:
    """A step's answer that deletes the key; ``answer`` is what the verb returns: stamped with
    the deletion's revision (a DELETE), or with the revision it replaced (an update that removed
    the last finalizer answers with the object it was sent, as kube-apiserver does)."""

    answer: Obj
    at_deletion: bool = True


Step = Callable[[Obj | None], Awaitable[Obj | Purge]]


@dataclass(frozen=True, slots=True)
class Written:
    obj: Obj
    written: bool = False
    created: bool = False
    purged: bool = False


def stamped(obj: Obj, revision: int) -> Obj:
    """``obj`` with the resourceVersion of ``revision``; a dry-run create (revision 0) has
    none, as from kube-apiserver."""
    return rv.stamp(obj, revision) if revision else obj
