"""PodTopologySpread's hard constraints (pkg/scheduler/framework/plugins/podtopologyspread,
filtering.go): a pod's ``topologySpreadConstraints`` with ``whenUnsatisfiable: DoNotSchedule``.

PreFilter counts, per constraint, the pods its selector matches (in the pod's namespace, not
being deleted) in each topology domain of the nodes that count (they carry every constraint's
topology key; with ``nodeAffinityPolicy: Honor``, the default, they match the pod's node
selector and required node affinity; with ``nodeTaintsPolicy: Honor`` the pod tolerates their
taints). Filter: a node without the key is UnschedulableAndUnresolvable; one where the domain's
count, plus one when the pod matches its own selector, less the smallest domain's count (0 while
there are fewer domains than ``minDomains``) exceeds ``maxSkew`` is Unschedulable. The
``ScheduleAnyway`` constraints and the cluster's default constraints only score, which is not
done here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubelite.api.kinds.validation.fields import as_dict, as_list, as_str, selector_matches

if TYPE_CHECKING:
    from kubelite.api.simulation.schedulerfilters import NodeInfo

Obj = dict[str, Any]
UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"
REASON_MISSING_LABEL = (
    "node(s) didn't match pod topology spread constraints (missing required label)"
)
REASON_SKEW = "node(s) didn't match pod topology spread constraints"


@dataclass(slots=True)
class Constraint:
    max_skew: int
    topology_key: str
    selector: Obj | None
    min_domains: int
    honor_affinity: bool
    honor_taints: bool


def constraints(pod: Obj) -> list[Constraint]:
    """The pod's DoNotSchedule constraints, their selectors with ``matchLabelKeys`` joined."""
    labels = as_dict(pod["metadata"].get("labels"))
    found = []
    for raw in as_list(as_dict(pod.get("spec")).get("topologySpreadConstraints")):
        raw = as_dict(raw)
        if raw.get("whenUnsatisfiable") != "DoNotSchedule":
            continue
        selector = raw.get("labelSelector")
        if isinstance(selector, dict):
            selector = dict(selector)
            extra = [
                {"key": key, "operator": "In", "values": [labels[key]]}
                for key in (as_str(k) for k in as_list(raw.get("matchLabelKeys")))
                if key in labels
            ]
            if extra:
                selector["matchExpressions"] = as_list(selector.get("matchExpressions")) + extra
        skew, domains = raw.get("maxSkew"), raw.get("minDomains")
        found.append(
            Constraint(
                skew if isinstance(skew, int) else 1,
                as_str(raw.get("topologyKey")),
                selector if isinstance(selector, dict) else None,
                domains if isinstance(domains, int) else 1,
                raw.get("nodeAffinityPolicy", "Honor") == "Honor",
                raw.get("nodeTaintsPolicy", "Ignore") == "Honor",
            )
        )
    return found


@dataclass(slots=True)
class SpreadState:
    """Each constraint's matching pods by topology value, over the nodes that count."""

    constraints: list[Constraint]
    counts: list[dict[str, int]]
    self_match: list[bool]


def _matches(selector: Obj | None, labels: Any) -> bool:
    return isinstance(selector, dict) and selector_matches(selector, labels)


def spread_state(
    pod: Obj,
    infos: list[NodeInfo],
    affinity_ok: Any,
    taints_ok: Any,
) -> SpreadState:
    """``affinity_ok(info)``/``taints_ok(info)``: whether the pod's node affinity and
    tolerations admit the node."""
    found = constraints(pod)
    state = SpreadState(found, [{} for _ in found], [])
    namespace = pod["metadata"].get("namespace", "")
    own_labels = as_dict(pod["metadata"].get("labels"))
    state.self_match = [_matches(c.selector, own_labels) for c in found]
    if not found:
        return state
    for info in infos:
        labels = info.labels
        if any(c.topology_key not in labels for c in found):
            continue
        for i, c in enumerate(found):
            if (c.honor_affinity and not affinity_ok(info)) or (
                c.honor_taints and not taints_ok(info)
            ):
                continue
            matching = sum(
                1
                for other in info.pods
                if other["metadata"].get("namespace", "") == namespace
                and not other["metadata"].get("deletionTimestamp")
                and _matches(c.selector, other["metadata"].get("labels"))
            )
            value = labels[c.topology_key]
            state.counts[i][value] = state.counts[i].get(value, 0) + matching
    return state


def spread_filter(state: SpreadState, info: NodeInfo) -> tuple[str, str] | None:
    """(status code, reason) when the node breaks a constraint, or None."""
    labels = info.labels
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return (UNRESOLVABLE, REASON_MISSING_LABEL)
        counts = state.counts[i]
        least = min(counts.values()) if counts else 2**31 - 1
        if len(counts) < c.min_domains:
            least = 0
        skew = counts.get(value, 0) + (1 if state.self_match[i] else 0) - least
        if skew > c.max_skew:
            return (UNSCHEDULABLE, REASON_SKEW)
    return None
