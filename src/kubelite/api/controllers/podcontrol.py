"""What kube's workload controllers share about the pods they own
(pkg/controller/controller_utils.go, pkg/controller/controller_ref_manager.go,
pkg/api/v1/pod/util.go):

- :func:`controller_ref` (``NewControllerRef``) and :func:`pod_from_template`
  (``GetPodFromTemplate``: the template's labels, annotations, finalizers and spec,
  ``generateName: <owner>-`` and the ownerReference);
- which pods count: :func:`is_pod_active` (``IsPodActive``), :func:`is_pod_terminating`
  (``FilterTerminatingPods``), :func:`is_pod_available` (``IsPodAvailable``: Ready for at least
  ``minReadySeconds``);
- :class:`Expectations` (``UIDTrackingControllerExpectations``): the creations and deletions a
  controller made and has not yet seen in its informer, so that a sync in between neither
  creates nor deletes twice; a record expires after five minutes (``ExpectationsTimeout``);
- :func:`slow_start_batch` (replica_set.go's ``slowStartBatch``): batches of 1, 2, 4 ... that
  stop at the first batch with a failure;
- :func:`pods_to_delete` (replica_set.go's ``getPodsToDelete`` over ``ActivePodsWithRanks``);
- :class:`PodClaimer` (``PodControllerRefManager.ClaimPods``): adoption of matching orphans and
  release of owned pods that stopped matching, by strategic merge patches of the pod's
  ownerReferences carrying its uid.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cmp_to_key
from typing import Any

from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.kinds.policy.disruption import is_pod_ready
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.selectors import LabelSelector

Obj = dict[str, Any]
#: replica_set.go's BurstReplicas: at most this many pods created or deleted per sync
BURST_REPLICAS = 500
#: controller_utils.go's SlowStartInitialBatchSize
SLOW_START_INITIAL_BATCH_SIZE = 1
#: controller_utils.go's ExpectationsTimeout
EXPECTATIONS_TIMEOUT_SECONDS = 300.0
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
MANAGER = "kube-controller-manager"
SMP = "application/strategic-merge-patch+json"
_TERMINAL = ("Succeeded", "Failed")
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def controller_of(obj: Obj) -> Obj | None:
    """metav1.GetControllerOf: the ownerReference with ``controller: true``."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def controller_ref(owner: Obj, api_version: str, kind: str) -> Obj:
    """metav1.NewControllerRef."""
    meta = owner["metadata"]
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(template: Obj, owner: Obj, ref: Obj) -> Obj:
    """GetPodFromTemplate: a pod named ``<owner>-`` plus the API server's random suffix."""
    meta = template.get("metadata") or {}
    pod_meta: Obj = {}
    if meta.get("labels"):
        pod_meta["labels"] = dict(meta["labels"])
    if meta.get("annotations"):
        pod_meta["annotations"] = dict(meta["annotations"])
    pod_meta["generateName"] = f"{owner['metadata']['name']}-"
    if meta.get("finalizers"):
        pod_meta["finalizers"] = list(meta["finalizers"])
    pod_meta["ownerReferences"] = [dict(ref)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": pod_meta,
        "spec": clone(template.get("spec") or {}),
    }


def is_pod_active(pod: Obj) -> bool:
    """IsPodActive: not Succeeded nor Failed, and not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in _TERMINAL and not pod["metadata"].get("deletionTimestamp")


def is_pod_terminating(pod: Obj) -> bool:
    """What FilterTerminatingPods keeps: being deleted, and not yet Succeeded nor Failed."""
    phase = (pod.get("status") or {}).get("phase")
    return bool(pod["metadata"].get("deletionTimestamp")) and phase not in _TERMINAL


def _seconds(text: Any) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def ready_since(pod: Obj) -> float | None:
    """The Ready condition's lastTransitionTime of a ready pod (``podReadyTime``); None if not."""
    if not is_pod_ready(pod):
        return None
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return _seconds(condition.get("lastTransitionTime"))
    return None


def is_pod_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """IsPodAvailable: Ready, and (with ``minReadySeconds``) Ready since before ``now`` minus it."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds < now


# -- expectations ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Expected:
    add: int = 0
    deletes: set[str] = field(default_factory=set)
    stamp: float = field(default_factory=time.monotonic)


class Expectations:
    """UIDTrackingControllerExpectations, keyed by the controller's ``namespace/name``."""

    def __init__(self, timeout: float = EXPECTATIONS_TIMEOUT_SECONDS) -> None:
        self.timeout = timeout
        self._records: dict[str, _Expected] = {}

    def satisfied(self, key: str) -> bool:
        """SatisfiedExpectations: nothing expected, all of it seen, or the record expired."""
        record = self._records.get(key)
        if record is None:
            return True
        if record.add <= 0 and not record.deletes:
            return True
        return time.monotonic() - record.stamp > self.timeout

    def expect_creations(self, key: str, count: int) -> None:
        self._records[key] = _Expected(add=count)

    def expect_deletions(self, key: str, pod_keys: list[str]) -> None:
        self._records[key] = _Expected(deletes=set(pod_keys))

    def creation_observed(self, key: str) -> None:
        record = self._records.get(key)
        if record is not None:
            record.add -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        record = self._records.get(key)
        if record is not None:
            record.deletes.discard(pod_key)

    def delete(self, key: str) -> None:
        self._records.pop(key, None)

    def clear(self) -> None:
        self._records.clear()


def pod_key(pod: Obj) -> str:
    """controller.PodKey: ``namespace/name``."""
    meta = pod["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


async def slow_start_batch(
    count: int, initial: int, call: Callable[[], Awaitable[None]]
) -> tuple[int, Exception | None]:
    """Call ``call`` ``count`` times in batches doubling from ``initial`` (each batch at once);
    stop after the first batch with a failure. Returns (successes, the first error)."""
    remaining, successes = count, 0
    size = min(remaining, initial)
    while size > 0:
        results = await asyncio.gather(*(call() for _ in range(size)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, Exception)]
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result
        successes += size - len(errors)
        if errors:
            return successes, errors[0]
        remaining -= size
        size = min(2 * size, remaining)
    return successes, None


# -- which pods go first ---------------------------------------------------------------------------


def _deletion_cost(pod: Obj) -> int:
    """GetDeletionCostFromPodAnnotations (an int32; anything else counts as 0)."""
    text = str((pod["metadata"].get("annotations") or {}).get(DELETION_COST_ANNOTATION) or "")
    if not text.lstrip("+-").isdigit():
        return 0
    cost = int(text)
    return cost if -(2**31) <= cost < 2**31 else 0


def _max_restarts(pod: Obj) -> tuple[int, int]:
    """maxContainerRestarts: the most restarts of a regular container, and of a sidecar."""
    status = pod.get("status") or {}
    regular = max((int(s.get("restartCount") or 0) for s in status.get("containerStatuses") or []),
                  default=0)  # fmt: skip
    sidecars = {
        c.get("name")
        for c in (pod.get("spec") or {}).get("initContainers") or []
        if c.get("restartPolicy") == "Always"
    }
    sidecar = max(
        (
            int(s.get("restartCount") or 0)
            for s in status.get("initContainerStatuses") or []
            if s.get("name") in sidecars
        ),
        default=0,
    )
    return regular, sidecar


def _log_rank_diff(t1: float, t2: float, now: float) -> int:
    """logarithmicRankDiff: the difference of the log2 buckets of two ages (in nanoseconds)."""

    def bucket(t: float) -> int:
        age = (now - t) * 1e9
        return int(math.log2(age)) if age > 0 else -1

    return bucket(t1) - bucket(t2)


def _after_or_zero(t1: float | None, t2: float | None) -> bool:
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


@dataclass(slots=True)
class _Ranked:
    pod: Obj
    rank: int


def _less(a: _Ranked, b: _Ranked, now: float) -> bool:
    """ActivePodsWithRanks.Less: whether ``a`` is deleted before ``b``."""
    pa, pb = a.pod, b.pod
    node_a = (pa.get("spec") or {}).get("nodeName") or ""
    node_b = (pb.get("spec") or {}).get("nodeName") or ""
    if node_a != node_b and (not node_a or not node_b):  # 1. unassigned first
        return not node_a
    phase_a = _PHASE_ORDINAL.get((pa.get("status") or {}).get("phase") or "", 0)
    phase_b = _PHASE_ORDINAL.get((pb.get("status") or {}).get("phase") or "", 0)
    if phase_a != phase_b:  # 2. Pending < Unknown < Running
        return phase_a < phase_b
    ready_a, ready_b = is_pod_ready(pa), is_pod_ready(pb)
    if ready_a != ready_b:  # 3. not ready first
        return not ready_a
    cost_a, cost_b = _deletion_cost(pa), _deletion_cost(pb)
    if cost_a != cost_b:  # 4. lower deletion cost first
        return cost_a < cost_b
    if a.rank != b.rank:  # 5. more pods of the family on its node first
        return a.rank > b.rank
    uid_a, uid_b = str(pa["metadata"].get("uid") or ""), str(pb["metadata"].get("uid") or "")
    if ready_a and ready_b:  # 6. ready for less time first (log buckets)
        since_a, since_b = ready_since(pa), ready_since(pb)
        if since_a != since_b:
            if since_a is None or since_b is None:
                return _after_or_zero(since_a, since_b)
            diff = _log_rank_diff(since_a, since_b, now)
            return uid_a < uid_b if diff == 0 else diff < 0
    restarts_a, restarts_b = _max_restarts(pa), _max_restarts(pb)
    if restarts_a[0] != restarts_b[0]:  # 7. more restarts first
        return restarts_a[0] > restarts_b[0]
    if restarts_a[1] != restarts_b[1]:
        return restarts_a[1] > restarts_b[1]
    created_a = _seconds(pa["metadata"].get("creationTimestamp"))
    created_b = _seconds(pb["metadata"].get("creationTimestamp"))
    if created_a != created_b:  # 8. newer first (log buckets)
        if created_a is None or created_b is None:
            return _after_or_zero(created_a, created_b)
        diff = _log_rank_diff(created_a, created_b, now)
        return uid_a < uid_b if diff == 0 else diff < 0
    return False


def pods_to_delete(pods: list[Obj], related: list[Obj], count: int) -> list[Obj]:
    """getPodsToDelete: the first ``count`` of ``pods`` ranked by ActivePodsWithRanks, each
    pod's rank being how many active pods of ``related`` (the pods of every ReplicaSet of the
    same owner) share its node. Go's sort is not stable; this one is, from the given order."""
    if count >= len(pods):
        return list(pods)
    on_node: dict[str, int] = {}
    for pod in related:
        if is_pod_active(pod):
            node = str((pod.get("spec") or {}).get("nodeName") or "")
            on_node[node] = on_node.get(node, 0) + 1
    now = time.time()
    ranked = [_Ranked(p, on_node.get(str((p.get("spec") or {}).get("nodeName") or ""), 0))
              for p in pods]  # fmt: skip

    def compare(a: _Ranked, b: _Ranked) -> int:
        if _less(a, b, now):
            return -1
        if _less(b, a, now):
            return 1
        return 0

    ranked.sort(key=cmp_to_key(compare))
    return [r.pod for r in ranked[:count]]


# -- adoption and release --------------------------------------------------------------------------


class CannotAdopt(Exception):
    """The owner may not adopt now (it is being deleted, or it is another object now)."""


class PodClaimer:
    """PodControllerRefManager for one owner: :meth:`claim` returns the pods it owns once
    matching orphans are adopted and non-matching owned pods released; ``recheck`` is the owner
    read afresh (a GET), called once before the first adoption (``RecheckDeletionTimestamp``)."""

    def __init__(
        self,
        registry: Registry,
        pods_info: Any,
        owner: Obj,
        ref: Obj,
        selector: LabelSelector,
        recheck: Callable[[], Awaitable[Obj]],
    ) -> None:
        self.registry = registry
        self.pods_info = pods_info
        self.owner = owner
        self.ref = ref
        self.selector = selector
        self.recheck = recheck
        self._can_adopt: str | bool | None = False  # False: not checked yet; None: may adopt

    def matches(self, pod: Obj) -> bool:
        return self.selector.matches(pod["metadata"].get("labels") or {})

    async def claim(self, pods: list[Obj]) -> list[Obj]:
        """ClaimPods; errors (other than a pod gone) are raised after every pod was looked at."""
        claimed: list[Obj] = []
        errors: list[str] = []
        owner_meta = self.owner["metadata"]
        deleting = bool(owner_meta.get("deletionTimestamp"))
        for pod in pods:
            ref = controller_of(pod)
            try:
                if ref is not None:
                    if ref.get("uid") != owner_meta.get("uid"):
                        continue  # another controller's
                    if self.matches(pod):
                        claimed.append(pod)
                    elif not deleting:
                        await self._release(pod)
                    continue
                if deleting or not self.matches(pod) or pod["metadata"].get("deletionTimestamp"):
                    continue
                if (pod["metadata"].get("namespace") or "") != (owner_meta.get("namespace") or ""):
                    continue
                adopted = await self._adopt(pod)
                if adopted is not None:
                    claimed.append(adopted)
            except (APIError, CannotAdopt) as exc:
                errors.append(exc.message if isinstance(exc, APIError) else str(exc))
        if errors:
            raise CannotAdopt(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
        return claimed

    async def _adopt(self, pod: Obj) -> Obj | None:
        meta = pod["metadata"]
        if self._can_adopt is False:
            self._can_adopt = await self._check_owner()
        if self._can_adopt is not None:
            raise CannotAdopt(
                f"can't adopt Pod {meta.get('namespace')}/{meta['name']} ({meta.get('uid')}): "
                f"{self._can_adopt}"
            )
        patch = {"metadata": {"ownerReferences": [dict(self.ref)], "uid": meta.get("uid")}}
        try:
            return await self.registry.patch(
                self.pods_info, meta.get("namespace"), meta["name"], SMP, patch,
                field_manager=MANAGER,
            )  # fmt: skip
        except APIError as exc:
            if exc.code == 404:
                return None
            raise

    async def _check_owner(self) -> str | None:
        """Why the owner may not adopt (deleted, gone, another object), or None."""
        meta = self.owner["metadata"]
        try:
            fresh = await self.recheck()
        except APIError as exc:
            return exc.message
        fresh_meta = fresh.get("metadata") or {}
        if fresh_meta.get("uid") != meta.get("uid"):
            return (
                f"original {self.ref['kind']} {meta.get('namespace')}/{meta['name']} is gone: "
                f"got uid {fresh_meta.get('uid')}, wanted {meta.get('uid')}"
            )
        if fresh_meta.get("deletionTimestamp"):
            return (
                f"{meta.get('namespace')}/{meta['name']} has just been deleted at "
                f"{fresh_meta['deletionTimestamp']}"
            )
        return None

    async def _release(self, pod: Obj) -> None:
        meta = pod["metadata"]
        patch = {
            "metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": self.owner["metadata"]["uid"]}],
                "uid": meta.get("uid"),
            }
        }
        try:
            await self.registry.patch(
                self.pods_info, meta.get("namespace"), meta["name"], SMP, patch,
                field_manager=MANAGER,
            )  # fmt: skip
        except APIError as exc:
            # gone, or no longer the pod (another uid) or no longer owned: nothing to release
            if exc.code not in (404, 422):
                raise
