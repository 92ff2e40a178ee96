"""Automatic compaction keeps at least `retention_seconds` and at least `min_revisions`."""

from __future__ import annotations

from kubelite.storage.compaction import CompactionPolicy


def test_nothing_is_due_before_retention_has_passed() -> None:
    policy = CompactionPolicy(retention_seconds=300, min_revisions=10)
    assert policy.target(now=0, revision=5_000, compacted=0) is None
    assert policy.target(now=299, revision=9_000, compacted=0) is None


def test_target_is_the_revision_the_store_had_retention_seconds_ago() -> None:
    policy = CompactionPolicy(retention_seconds=300, min_revisions=10)
    policy.target(now=0, revision=1_000, compacted=0)
    policy.target(now=100, revision=2_000, compacted=0)
    assert policy.target(now=300, revision=5_000, compacted=0) == 1_000
    assert policy.target(now=350, revision=6_000, compacted=1_000) is None
    assert policy.target(now=400, revision=7_000, compacted=1_000) == 2_000


def test_min_revisions_bounds_the_target() -> None:
    policy = CompactionPolicy(retention_seconds=300, min_revisions=1_000)
    policy.target(now=0, revision=1_500, compacted=0)
    # By time 1,500 is due; by count only 1,800 - 1,000 = 800.
    assert policy.target(now=301, revision=1_800, compacted=0) == 800
    # A quiet store is not compacted below its last min_revisions revisions.
    assert policy.target(now=900, revision=1_800, compacted=800) is None


def test_sample_used_stays_valid_until_a_newer_one_is_old_enough() -> None:
    policy = CompactionPolicy(retention_seconds=10, min_revisions=0)
    policy.target(now=0, revision=100, compacted=0)
    assert policy.target(now=10, revision=200, compacted=0) == 100
    # No new sample is 10 s old yet: the target is still what the store had 10 s ago, at most.
    assert policy.target(now=15, revision=300, compacted=100) is None
    assert policy.target(now=20, revision=300, compacted=100) == 200
