"""One scheduling cycle's algorithm (pkg/scheduler/schedule_one.go ``schedulePod``,
``findNodesThatFitPod``, ``prioritizeNodes``): the node a pod goes to, or the message of why it
cannot go anywhere, worded as ``FitError.Error`` (pkg/scheduler/framework/types.go) with the
PostFilter part the default profile prints:

- ``0/<N> nodes are available:``, then the PreFilter message and ``.`` when a PreFilter refused
  the pod, else the sorted ``"<count> <reason>"`` list joined by ``, `` and ``.`` (a node counts
  once for each reason of its first failing filter; nodes a PreFilter left out count under
  ``node(s) didn't satisfy plugin(s) [NodeAffinity]``);
- then `` `` and the PostFilter message: DynamicResources' ``no new claims to deallocate`` (the
  pod claims no devices), ``, `` and DefaultPreemption's ``preemption: ...``
  (pkg/scheduler/framework/preemption/preemption.go ``Preempt``): ``not eligible due to
  preemptionPolicy=Never.``, or a FitError of its own over the nodes where removing pods could
  help (Unschedulable, not UnschedulableAndUnresolvable), each ``No preemption victims found for
  incoming pod`` when no pod there has a lower priority, or the filters' reasons when removing
  every lower-priority pod would still not make room; the other nodes count as ``Preemption is
  not helpful for scheduling``.

When removing lower-priority pods would make room (``SelectVictimsOnNode``: all of them removed,
then the most important given back while the pod still fits), the node with the least important
victims is chosen (``pickOneNodeForPreemption``; PodDisruptionBudgets are not weighed) and the
PostFilter succeeds: the message is the FitError alone, and the scheduler evicts the victims and
nominates the node.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kubelite.api.kinds.validation.fields import as_dict
from kubelite.api.simulation.podaffinity import pod_affinity_state
from kubelite.api.simulation.schedulerfilters import (
    REASON_AFFINITY_CONFLICT,
    UNRESOLVABLE,
    UNSCHEDULABLE,
    NodeInfo,
    Status,
    node_affinity_matches,
    node_names_wanted,
    pod_requests,
    priority,
    run_filters,
    scores,
    taints_tolerated,
)
from kubelite.api.simulation.topologyspread import SpreadState, spread_state

Obj = dict[str, Any]

NO_NODES = "no nodes available to schedule pods"
NO_CLAIMS = "no new claims to deallocate"
NOT_ELIGIBLE = "not eligible due to preemptionPolicy=Never."
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


@dataclass(slots=True)
class Diagnosis:
    """Why no node fits: each filtered node's status, the status of nodes never filtered."""

    statuses: dict[str, Status] = field(default_factory=dict)
    absent: Status | None = None
    prefilter: str = ""


def fit_error(nodes: int, diagnosis: Diagnosis, postfilter: str = "") -> str:
    """``FitError.Error``."""
    message = f"0/{nodes} nodes are available:"
    if diagnosis.prefilter:
        message += f" {diagnosis.prefilter}."
    else:
        counts: dict[str, int] = {}
        for status in diagnosis.statuses.values():
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + 1
        missing = nodes - len(diagnosis.statuses)
        if missing > 0 and diagnosis.absent is not None:
            for reason in diagnosis.absent.reasons:
                counts[reason] = counts.get(reason, 0) + missing
        listed = sorted(f"{count} {reason}" for reason, count in counts.items())
        if listed:
            message += f" {', '.join(listed)}."
    if postfilter:
        message += f" {postfilter}"
    return message


@dataclass(slots=True)
class Outcome:
    """A cycle's result: the node chosen, or the failure message."""

    node: str | None = None
    message: str = ""
    preemption: Preemption | None = None


def schedule(pod: Obj, infos: list[NodeInfo], namespaces: dict[str, dict[str, str]]) -> Outcome:
    """Pick the node for ``pod`` among ``infos`` (every node, with the pods on it)."""
    if not infos:
        return Outcome(message=NO_NODES)
    diagnosis = Diagnosis()
    feasible = _feasible(pod, infos, namespaces, diagnosis)
    if not feasible:
        preempted = _preemption(pod, infos, namespaces, diagnosis)
        if isinstance(preempted, Preemption):
            return Outcome(message=fit_error(len(infos), diagnosis), preemption=preempted)
        postfilter = f"{NO_CLAIMS}, preemption: {preempted}"
        return Outcome(message=fit_error(len(infos), diagnosis, postfilter))
    if len(feasible) == 1:
        return Outcome(node=feasible[0].name)
    totals = scores(pod, feasible)
    best = max(totals.values())
    return Outcome(node=random.choice([name for name, total in totals.items() if total == best]))


def _feasible(
    pod: Obj,
    infos: list[NodeInfo],
    namespaces: dict[str, dict[str, str]],
    diagnosis: Diagnosis,
) -> list[NodeInfo]:
    names, conflict = node_names_wanted(pod)
    if conflict:
        diagnosis.prefilter = REASON_AFFINITY_CONFLICT
        diagnosis.absent = Status(UNRESOLVABLE, (REASON_AFFINITY_CONFLICT,))
        return []
    candidates = infos
    if names is not None:
        candidates = [i for i in infos if i.name in names]
        diagnosis.absent = Status(
            UNRESOLVABLE, ("node(s) didn't satisfy plugin(s) [NodeAffinity]",)
        )
    requests = pod_requests(pod)
    affinity = pod_affinity_state(pod, infos, namespaces)
    spread = _spread(pod, infos)
    feasible = []
    for info in candidates:
        status = run_filters(pod, info, requests, affinity, spread)
        if status is None:
            feasible.append(info)
        else:
            diagnosis.statuses[info.name] = status
    return feasible


def _spread(pod: Obj, infos: list[NodeInfo]) -> SpreadState:
    return spread_state(
        pod,
        infos,
        lambda info: node_affinity_matches(pod, info),
        lambda info: taints_tolerated(pod, info),
    )


def _preemption(
    pod: Obj, infos: list[NodeInfo], namespaces: dict[str, dict[str, str]], diagnosis: Diagnosis
) -> str | Preemption:
    """DefaultPreemption's PostFilter: the node and victims to preempt, or its message."""
    if as_dict(pod.get("spec")).get("preemptionPolicy") == "Never":
        return NOT_ELIGIBLE
    by_name = {i.name: i for i in infos}
    potential = [n for n, s in diagnosis.statuses.items() if s.code == UNSCHEDULABLE]
    if diagnosis.absent is not None and diagnosis.absent.code == UNSCHEDULABLE:
        potential += [n for n in by_name if n not in diagnosis.statuses]
    own = priority(pod)
    dry_run = Diagnosis(absent=Status(UNRESOLVABLE, (NOT_HELPFUL,)))
    candidates = []
    for name in potential:
        victims = [p for p in by_name[name].pods if priority(p) < own]
        if not victims:
            dry_run.statuses[name] = Status(UNRESOLVABLE, (NO_VICTIMS,))
            continue
        status = _fits_without(pod, infos, name, victims, namespaces)
        if status is not None:
            dry_run.statuses[name] = status
            continue
        candidates.append(Preemption(name, _reprieve(pod, infos, name, victims, namespaces)))
    if not candidates:
        return fit_error(len(infos), dry_run)
    return min(candidates, key=Preemption.rank)


def _fits_without(
    pod: Obj,
    infos: list[NodeInfo],
    name: str,
    removed: list[Obj],
    namespaces: dict[str, dict[str, str]],
) -> Status | None:
    emptied = next(i for i in infos if i.name == name).without(removed)
    others = [emptied if i.name == name else i for i in infos]
    affinity = pod_affinity_state(pod, others, namespaces)
    return run_filters(pod, emptied, pod_requests(pod), affinity, _spread(pod, others))


def _reprieve(
    pod: Obj,
    infos: list[NodeInfo],
    name: str,
    victims: list[Obj],
    namespaces: dict[str, dict[str, str]],
) -> list[Obj]:
    """SelectVictimsOnNode: every lower-priority pod removed, then the most important ones
    (higher priority, then started earlier) given back while the pod still fits."""
    ordered = sorted(victims, key=lambda p: (-priority(p), _started(p)))
    removed = list(ordered)
    for victim in ordered:
        trial = [p for p in removed if p is not victim]
        if _fits_without(pod, infos, name, trial, namespaces) is None:
            removed = trial
    return removed


def _started(pod: Obj) -> str:
    return str(
        as_dict(pod.get("status")).get("startTime")
        or pod["metadata"].get("creationTimestamp")
        or ""
    )


@dataclass(slots=True)
class Preemption:
    """The node to nominate and the pods to evict from it."""

    node: str
    victims: list[Obj]

    def rank(self) -> tuple[int, int, int]:
        """pickOneNodeForPreemption (PodDisruptionBudgets aside): the lowest highest-priority
        victim, then the lowest sum of priorities, then the fewest victims."""
        priorities = [priority(v) for v in self.victims] or [0]
        return (max(priorities), sum(priorities), len(self.victims))
