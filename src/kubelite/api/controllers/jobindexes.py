"""Indexed Jobs (pkg/controller/job/indexed_job_utils.go): completion indexes as ordered
intervals (``status.completedIndexes`` reads ``"0-2,4"``), the index of a pod, the indexes still to
run, and what a pod of an index gets (its name prefix, hostname, annotation, label and the
``JOB_COMPLETION_INDEX`` variable)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Obj = dict[str, Any]
Interval = tuple[int, int]
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
INDEX_ENV = "JOB_COMPLETION_INDEX"
UNKNOWN = -1
#: apiserver's names.MaxGeneratedNameLength (63 less the 5 random characters)
MAX_GENERATED_NAME_LENGTH = 58


def parse_indexes(text: str | None, completions: int) -> list[Interval]:
    """``parseIndexesFromString``: ``"1,3-5"`` as sorted intervals below ``completions``;
    unreadable parts are skipped."""
    result: list[Interval] = []
    for part in (text or "").split(","):
        if not part:
            continue
        first_text, sep, last_text = part.partition("-")
        try:
            first = int(first_text)
            last = int(last_text) if sep else first
        except ValueError:
            continue
        if first < 0 or first >= completions or last < first:
            continue
        last = min(last, completions - 1)
        if result and result[-1][1] + 1 >= first:
            result[-1] = (result[-1][0], max(result[-1][1], last))
        else:
            result.append((first, last))
    return result


def format_indexes(intervals: list[Interval]) -> str:
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in intervals)


def total(intervals: list[Interval]) -> int:
    return sum(b - a + 1 for a, b in intervals)


def has(intervals: list[Interval], index: int) -> bool:
    return any(a <= index <= b for a, b in intervals)


def with_indexes(intervals: list[Interval], indexes: Iterable[int]) -> list[Interval]:
    """``withOrderedIndexes``: the intervals with these indexes added."""
    found = {i for a, b in intervals for i in range(a, b + 1)} | set(indexes)
    result: list[Interval] = []
    for index in sorted(found):
        if result and result[-1][1] + 1 == index:
            result[-1] = (result[-1][0], index)
        else:
            result.append((index, index))
    return result


def completion_index(pod: Obj) -> int:
    """``getCompletionIndex``: the pod's annotation as a number, or UNKNOWN."""
    text = ((pod.get("metadata") or {}).get("annotations") or {}).get(INDEX_KEY)
    if not isinstance(text, str) or not text.isdigit():
        return UNKNOWN
    return int(text)


def first_pending(
    succeeded: list[Interval], busy: Iterable[int], count: int, completions: int
) -> list[int]:
    """``firstPendingIndexes``: the lowest ``count`` indexes neither succeeded nor ``busy``
    (held by an active pod, or a terminating one that is not replaced until it failed)."""
    taken = {i for a, b in succeeded for i in range(a, b + 1)} | set(busy)
    result: list[int] = []
    for index in range(completions):
        if len(result) >= count:
            break
        if index not in taken:
            result.append(index)
    return result


def generate_name(job_name: str, index: int) -> str:
    """``podGenerateNameWithIndex``: ``<job>-<index>-``, the job's name cut to fit."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = job_name[: MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix


def add_index_env(template: Obj) -> None:
    """``addCompletionIndexEnvVariables``: every container and init container gets
    ``JOB_COMPLETION_INDEX`` from the index annotation, unless it declares it."""
    spec = template.get("spec") or {}
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            env = container.setdefault("env", [])
            if any(v.get("name") == INDEX_ENV for v in env):
                continue
            env.append({
                "name": INDEX_ENV,
                "valueFrom": {"fieldRef": {
                    "fieldPath": f"metadata.annotations['{INDEX_KEY}']",
                }},
            })  # fmt: skip


def mark_index(template: Obj, job_name: str, index: int) -> None:
    """The annotation and label of the index, and the hostname ``<job>-<index>``."""
    meta = template.setdefault("metadata", {})
    meta.setdefault("annotations", {})[INDEX_KEY] = str(index)
    meta.setdefault("labels", {})[INDEX_KEY] = str(index)
    template.setdefault("spec", {})["hostname"] = f"{job_name}-{index}"


def _overlap(rule: list[Interval], done: list[Interval]) -> int:
    """How many of the rule's indexes succeeded (``matchSucceededIndexesRule``'s walk)."""
    contains = r = d = 0
    while r < len(rule) and d < len(done):
        overlap = min(rule[r][1], done[d][1]) - max(rule[r][0], done[d][0]) + 1
        if overlap > 0:
            contains += overlap
        if done[d][1] < rule[r][1]:
            d += 1
        else:
            r += 1
    return contains


def match_success_policy(policy: Obj | None, completions: int, done: list[Interval]) -> str | None:
    """``matchSuccessPolicy`` (pkg/controller/job/success_policy.go): the message of the first
    rule the succeeded indexes satisfy (``Matched rules at index <i>``), or None. A rule with
    ``succeededIndexes`` needs all of them, or ``succeededCount`` of them; a rule with only
    ``succeededCount`` needs that many indexes."""
    if not policy or not done:
        return None
    for index, rule in enumerate(policy.get("rules") or []):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(rule["succeededIndexes"], completions)
            if not required:
                continue
            contains = _overlap(required, done)
            if (count is None and contains == total(required)) or (
                count is not None and contains >= int(count)
            ):
                return f"Matched rules at index {index}"
        elif count is not None and total(done) >= int(count):
            return f"Matched rules at index {index}"
    return None
