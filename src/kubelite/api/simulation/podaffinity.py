"""InterPodAffinity (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go): the
pod's required affinity and anti-affinity terms, counted per topology pair over the pods on
every node (PreFilter), and the Filter: every affinity term's topology key on the node and a
matching pod in its topology (or, for the first of a group, the pod matching its own terms);
no pod its anti-affinity terms match in the node's topologies; no existing pod whose
anti-affinity matches it in a topology the node is in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubelite.api.kinds.validation.fields import as_dict, as_list, as_str, selector_matches

if TYPE_CHECKING:
    from kubelite.api.simulation.schedulerfilters import NodeInfo

Obj = dict[str, Any]
UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"
REASON_POD_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    selector: Any
    namespaces: frozenset[str]
    namespace_selector: Any
    topology_key: str

    def matches(self, pod: Obj, namespace_labels: dict[str, str]) -> bool:
        meta = pod["metadata"]
        in_namespace = meta.get("namespace", "") in self.namespaces or (
            isinstance(self.namespace_selector, dict)
            and selector_matches(self.namespace_selector, namespace_labels)
        )
        if not in_namespace or not isinstance(self.selector, dict):
            return False
        return selector_matches(self.selector, meta.get("labels"))


def affinity_terms(pod: Obj, kind: str) -> list[AffinityTerm]:
    """The required terms of ``podAffinity`` or ``podAntiAffinity`` (``kind``)."""
    affinity = as_dict(as_dict(as_dict(pod.get("spec")).get("affinity")).get(kind))
    terms = []
    for raw in as_list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution")):
        raw = as_dict(raw)
        names = [as_str(n) for n in as_list(raw.get("namespaces"))]
        selector = raw.get("namespaceSelector")
        if not names and selector is None:
            names = [pod["metadata"].get("namespace", "")]
        terms.append(
            AffinityTerm(
                raw.get("labelSelector"),
                frozenset(names),
                selector,
                as_str(raw.get("topologyKey")),
            )
        )
    return terms


Pair = tuple[str, str]


@dataclass(slots=True)
class PodAffinityState:
    """InterPodAffinity's PreFilter state: matching pods counted per topology pair."""

    affinity: list[AffinityTerm]
    anti_affinity: list[AffinityTerm]
    affinity_counts: dict[Pair, int] = field(default_factory=dict)
    anti_counts: dict[Pair, int] = field(default_factory=dict)
    existing_anti_counts: dict[Pair, int] = field(default_factory=dict)
    self_match: bool = False


def _count(counts: dict[Pair, int], labels: dict[str, str], key: str) -> None:
    if key in labels:
        pair = (key, labels[key])
        counts[pair] = counts.get(pair, 0) + 1


def pod_affinity_state(
    pod: Obj, nodes: Iterable[NodeInfo], namespaces: dict[str, dict[str, str]]
) -> PodAffinityState:
    state = PodAffinityState(
        affinity_terms(pod, "podAffinity"), affinity_terms(pod, "podAntiAffinity")
    )
    own_labels = namespaces.get(pod["metadata"].get("namespace", ""), {})
    for info in nodes:
        labels = info.labels
        for other in info.pods:
            other_ns = namespaces.get(other["metadata"].get("namespace", ""), {})
            for term in affinity_terms(other, "podAntiAffinity"):
                if term.matches(pod, own_labels):
                    _count(state.existing_anti_counts, labels, term.topology_key)
            if state.affinity and all(t.matches(other, other_ns) for t in state.affinity):
                for term in state.affinity:
                    _count(state.affinity_counts, labels, term.topology_key)
            for term in state.anti_affinity:
                if term.matches(other, other_ns):
                    _count(state.anti_counts, labels, term.topology_key)
    state.self_match = all(t.matches(pod, own_labels) for t in state.affinity)
    return state


def pod_affinity_filter(state: PodAffinityState, info: NodeInfo) -> tuple[str, str] | None:
    """(status code, reason) of the first rule the node breaks, or None."""
    labels = info.labels
    found = True
    for term in state.affinity:
        if term.topology_key not in labels:
            return (UNRESOLVABLE, REASON_POD_AFFINITY)
        if state.affinity_counts.get((term.topology_key, labels[term.topology_key]), 0) <= 0:
            found = False
    if not found and not (not state.affinity_counts and state.self_match):
        return (UNRESOLVABLE, REASON_POD_AFFINITY)
    for term in state.anti_affinity:
        value = labels.get(term.topology_key)
        if value is not None and state.anti_counts.get((term.topology_key, value), 0) > 0:
            return (UNSCHEDULABLE, REASON_POD_ANTI_AFFINITY)
    if any(state.existing_anti_counts.get(pair, 0) > 0 for pair in labels.items()):
        return (UNSCHEDULABLE, REASON_EXISTING_ANTI_AFFINITY)
    return None
