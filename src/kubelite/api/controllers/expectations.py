"""What a workload controller waits to see in its informer before it acts on a key again
(pkg/controller/controller_utils.go's ``ControllerExpectations``, and the Job controller's
``uidTrackingExpectations`` in pkg/controller/job/tracking_utils.go).

A controller that creates 3 pods writes them, but its informer holds them only once their watch
events arrive. A sync in between would count 0 pods and create 3 more. So before creating (or
deleting) it records how many it expects (:meth:`Expectations.expect`); the informer's handlers
count each one seen (:meth:`Expectations.creation_observed`,
:meth:`Expectations.deletion_observed`); and a sync changes the number of pods only once
:meth:`Expectations.satisfied`: all seen, none recorded, or recorded more than
:data:`EXPECTATIONS_TIMEOUT_SECONDS` ago (a watch event that never came must not stall the
controller for ever).

:class:`UIDExpectations` is the same for writes that do not create or delete: the uids of pods
whose tracking finalizer the controller removed, until the informer shows them without it.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
#: kube's ExpectationsTimeout
EXPECTATIONS_TIMEOUT_SECONDS = 300.0


@dataclass(slots=True)
class _Expected:
    add: int
    delete: int
    since: float = field(default_factory=time.monotonic)


class Expectations(Generic[K]):
    """Creations and deletions expected per key (``ControllerExpectations``)."""

    def __init__(self, timeout: float = EXPECTATIONS_TIMEOUT_SECONDS) -> None:
        self.timeout = timeout
        self._by_key: dict[K, _Expected] = {}

    def expect(self, key: K, *, add: int = 0, delete: int = 0) -> None:
        """``ExpectCreations`` / ``ExpectDeletions``: replaces what was expected."""
        self._by_key[key] = _Expected(add, delete)

    def creation_observed(self, key: K) -> None:
        found = self._by_key.get(key)
        if found is not None:
            found.add -= 1

    def deletion_observed(self, key: K) -> None:
        found = self._by_key.get(key)
        if found is not None:
            found.delete -= 1

    def satisfied(self, key: K) -> bool:
        """``SatisfiedExpectations``: nothing expected, all seen, or expected too long ago."""
        found = self._by_key.get(key)
        if found is None:
            return True
        if found.add <= 0 and found.delete <= 0:
            return True
        return time.monotonic() - found.since > self.timeout

    def forget(self, key: K) -> None:
        """``DeleteExpectations``: the object is gone."""
        self._by_key.pop(key, None)

    def clear(self) -> None:
        self._by_key.clear()


class UIDExpectations(Generic[K]):
    """Per key, the uids whose change the controller wrote and waits to see."""

    def __init__(self) -> None:
        self._by_key: dict[K, set[str]] = {}

    def expect(self, key: K, uids: Iterable[str]) -> None:
        self._by_key.setdefault(key, set()).update(uids)

    def observed(self, key: K, uid: str) -> None:
        found = self._by_key.get(key)
        if found is None:
            return
        found.discard(uid)
        if not found:
            del self._by_key[key]

    def expected(self, key: K) -> frozenset[str]:
        return frozenset(self._by_key.get(key, ()))

    def forget(self, key: K) -> None:
        self._by_key.pop(key, None)

    def clear(self) -> None:
        self._by_key.clear()
