"""Borrowing between priority levels: kube-apiserver's ``computeConcurrencyAllocation``
(``pkg/util/flowcontrol/conc_alloc.go``) and the smoothed seat demand it is fed
(``seatDemandStats`` in ``apf_controller.go``).

Every 10 seconds each level's current concurrency limit is set anew: the levels share the sum
of their nominal limits, each getting ``fair * target`` clamped to ``[lower, upper]``, where
``target`` is its smoothed seat demand, ``lower`` what it may not lend (never below its recent
peak demand, up to its nominal limit) and ``upper`` its nominal limit plus what it may borrow.
kube finds ``fair`` by walking the sorted bounds; bisection finds the same value (the sum is
monotonic in ``fair``) to within a millionth of a seat, which rounding to whole seats hides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: seatDemandSmoothingCoefficient: a half-life of 5 minutes at one adjustment per 10 s
SMOOTHING = 0.977
#: MinTarget
MIN_TARGET = 0.001


@dataclass(frozen=True, slots=True)
class Item:
    """allocProblemItem: ``target >= lower >= 0`` and ``upper >= lower``."""

    target: float
    lower: float
    upper: float


def allocate(required: int, items: list[Item]) -> list[float]:
    """The allocations (summing to ``required`` when the bounds allow it)."""
    if not items or required <= 0:
        return [0.0 for _ in items]
    targets = [max(item.target, MIN_TARGET) for item in items]

    def total(fair: float) -> float:
        return sum(
            max(item.lower, min(item.upper, fair * target))
            for item, target in zip(items, targets, strict=True)
        )

    low = min(item.lower / t for item, t in zip(items, targets, strict=True))
    high = max(item.upper / t for item, t in zip(items, targets, strict=True))
    if total(low) >= required:
        fair = low
    elif total(high) <= required:
        fair = high
    else:
        for _ in range(200):
            mid = (low + high) / 2
            if total(mid) < required:
                low = mid
            else:
                high = mid
            if high - low <= 1e-12 * max(1.0, high):
                break
        fair = (low + high) / 2
    return [
        max(item.lower, min(item.upper, fair * target))
        for item, target in zip(items, targets, strict=True)
    ]


@dataclass(slots=True)
class DemandStats:
    """seatDemandStats: the last period's average, deviation and peak, and the smoothed
    envelope ``max(avg + stddev, A * smoothed + (1 - A) * (avg + stddev))``."""

    average: float = 0.0
    deviation: float = 0.0
    high: float = 0.0
    smoothed: float = 0.0

    def update(self, duration: float, average: float, deviation: float, high: float) -> None:
        self.high = high
        if duration <= 0:
            return
        if math.isnan(deviation):
            deviation = 0.0
        self.average, self.deviation = average, deviation
        envelope = average + deviation
        self.smoothed = max(envelope, SMOOTHING * self.smoothed + (1 - SMOOTHING) * envelope)
