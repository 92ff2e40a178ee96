"""When to compact: keep at least ``retention_seconds`` and at least ``min_revisions`` of history.

The policy samples (time, store revision) at each tick. The revision the store had
``retention_seconds`` ago is the newest revision that may be compacted by time; the store revision
minus ``min_revisions`` is the newest by count; the target is the smaller of the two. Samples live
in memory, so after a restart nothing is compacted until ``retention_seconds`` have passed:
history is kept longer, never shorter.
"""

from __future__ import annotations

from collections import deque


class CompactionPolicy:
    def __init__(self, retention_seconds: float, min_revisions: int) -> None:
        self.retention_seconds = retention_seconds
        self.min_revisions = min_revisions
        self._samples: deque[tuple[float, int]] = deque()

    def target(self, now: float, revision: int, compacted: int) -> int | None:
        """Record a sample; the revision to compact to now, or None if nothing is due."""
        self._samples.append((now, revision))
        by_time = 0
        while self._samples and self._samples[0][0] <= now - self.retention_seconds:
            by_time = self._samples.popleft()[1]
        if by_time:
            # Keep the sample we used: it is still the newest old enough until a newer one is.
            self._samples.appendleft((now - self.retention_seconds, by_time))
        target = min(by_time, revision - self.min_revisions)
        return target if target > compacted else None
