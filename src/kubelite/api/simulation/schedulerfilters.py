"""The scheduler's plugins (kube-scheduler's default profile, pkg/scheduler/framework/plugins):
what a pod asks of a node, the filters with their node reason texts and status codes, and the
scores.

Filters, in the default profile's order (each node stops at its first failing filter, whose
reasons all count; ``framework/runtime`` RunFilterPlugins):

- NodeUnschedulable (nodeunschedulable): ``spec.unschedulable`` unless the pod tolerates
  ``node.kubernetes.io/unschedulable:NoSchedule``;
- NodeName (nodename): ``spec.nodeName`` set to another node;
- TaintToleration (tainttoleration): a NoSchedule or NoExecute taint no toleration tolerates;
- NodeAffinity (nodeaffinity): ``nodeSelector`` and the required node affinity (terms ORed,
  expressions ANDed; ``matchFields`` on ``metadata.name``); its PreFilter narrows the nodes to
  those a ``metadata.name In`` field requirement of every term names;
- NodePorts (nodeports): a ``hostPort`` already used (same protocol; ``0.0.0.0`` conflicts with
  every address);
- NodeResourcesFit (noderesources/fit.go): the pod count and each requested resource against
  ``status.allocatable``, counting the node's non-terminal pods and the pods the scheduler
  assumed there;
- PodTopologySpread (:mod:`.topologyspread`): the DoNotSchedule spread constraints;
- InterPodAffinity (:mod:`.podaffinity`): required pod affinity and anti-affinity by
  topology key, and existing pods' required anti-affinity.

The volume plugins (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone) and the
DynamicResources filter are not run: kubelite's simulated cluster has no volumes to place nor
devices.

Scores (summed by kube's weights, highest wins, ties broken at random): NodeResourcesFit's
LeastAllocated on cpu and memory (weight 1; pods without requests count 100m and 200Mi),
TaintToleration's untolerated PreferNoSchedule taints (weight 3) and NodeAffinity's preferred
terms (weight 2).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubelite.api.encoding import quantity
from kubelite.api.kinds.validation.fields import as_dict, as_list, as_str
from kubelite.api.simulation.podaffinity import PodAffinityState, pod_affinity_filter
from kubelite.api.simulation.topologyspread import SpreadState, spread_filter

Obj = dict[str, Any]

UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_TAINT = "node(s) had untolerated taint(s)"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_AFFINITY_CONFLICT = "pod affinity terms conflict"
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"
REASON_TOO_MANY_PODS = "Too many pods"

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
BIND_ALL = "0.0.0.0"
#: schedutil.DefaultMilliCPURequest / DefaultMemoryRequest: what a container without requests
#: counts in scoring
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
MAX_NODE_SCORE = 100


@dataclass(frozen=True, slots=True)
class Status:
    """A plugin's verdict on a node: ``code`` (Unschedulable: preemption might help, or
    UnschedulableAndUnresolvable) and its reasons."""

    code: str
    reasons: tuple[str, ...]


# -- what a pod asks for (component-helpers resource.PodRequests) -------------------------------


def _amount(name: str, value: Any) -> int:
    parsed = quantity.parse_or_none(value)
    if parsed is None:
        return 0
    return parsed.milli_value() if name == "cpu" else parsed.int_value()


def _add(total: dict[str, int], more: dict[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


def _max(total: dict[str, int], other: dict[str, int]) -> None:
    for name, value in other.items():
        total[name] = max(total.get(name, 0), value)


def _container_requests(container: Any, non_zero: bool) -> dict[str, int]:
    requests = as_dict(as_dict(as_dict(container).get("resources")).get("requests"))
    found = {name: _amount(name, value) for name, value in requests.items()}
    if non_zero:
        found.setdefault("cpu", DEFAULT_MILLI_CPU)
        found.setdefault("memory", DEFAULT_MEMORY)
    return found


def _sidecar(container: Any) -> bool:
    return as_dict(container).get("restartPolicy") == "Always"


def pod_requests(pod: Obj, *, non_zero: bool = False) -> dict[str, int]:
    """The pod's requests by resource (cpu in millicores): the sum of its containers and its
    sidecars (init containers with ``restartPolicy: Always``), at least what each init container
    needs while it runs (with the sidecars started before it), then pod-level requests where
    set, plus ``overhead``. ``non_zero``: a container without a cpu or memory request counts
    100m / 200Mi (scoring only)."""
    spec = as_dict(pod.get("spec"))
    total: dict[str, int] = {}
    for container in as_list(spec.get("containers")):
        _add(total, _container_requests(container, non_zero))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in as_list(spec.get("initContainers")):
        wanted = _container_requests(container, non_zero)
        if _sidecar(container):
            _add(total, wanted)
            _add(sidecars, wanted)
            running = dict(sidecars)
        else:
            running = dict(wanted)
            _add(running, sidecars)
        _max(init_peak, running)
    _max(total, init_peak)
    pod_level = as_dict(as_dict(spec.get("resources")).get("requests"))
    for name, value in pod_level.items():
        total[name] = _amount(name, value)
    overhead = as_dict(spec.get("overhead"))
    _add(total, {name: _amount(name, value) for name, value in overhead.items()})
    return total


def host_ports(pod: Obj) -> list[tuple[str, str, int]]:
    """The (hostIP, protocol, hostPort) the pod's containers and sidecars claim."""
    spec = as_dict(pod.get("spec"))
    containers = as_list(spec.get("containers")) + [
        c for c in as_list(spec.get("initContainers")) if _sidecar(c)
    ]
    found = []
    for container in containers:
        for port in as_list(as_dict(container).get("ports")):
            port = as_dict(port)
            number = port.get("hostPort")
            if isinstance(number, int) and number > 0:
                ip = as_str(port.get("hostIP")) or BIND_ALL
                found.append((ip, as_str(port.get("protocol")) or "TCP", number))
    return found


def priority(pod: Obj) -> int:
    value = as_dict(pod.get("spec")).get("priority")
    return value if isinstance(value, int) else 0


# -- a node as the scheduler sees it (framework.NodeInfo) ---------------------------------------


@dataclass(slots=True)
class NodeInfo:
    """A node, the pods on it (bound or assumed), and what they use."""

    node: Obj
    pods: list[Obj] = field(default_factory=list)
    requested: dict[str, int] = field(default_factory=dict)
    non_zero: dict[str, int] = field(default_factory=dict)
    ports: set[tuple[str, str, int]] = field(default_factory=set)

    @property
    def name(self) -> str:
        return str(self.node["metadata"]["name"])

    @property
    def labels(self) -> dict[str, str]:
        return as_dict(self.node["metadata"].get("labels"))

    def allocatable(self) -> dict[str, int]:
        status = as_dict(self.node.get("status"))
        return {n: _amount(n, v) for n, v in as_dict(status.get("allocatable")).items()}

    def add(self, pod: Obj) -> None:
        self.pods.append(pod)
        _add(self.requested, pod_requests(pod))
        _add(self.non_zero, pod_requests(pod, non_zero=True))
        self.ports.update(host_ports(pod))

    def without(self, removed: Iterable[Obj]) -> NodeInfo:
        gone = {id(p) for p in removed}
        info = NodeInfo(self.node)
        for pod in self.pods:
            if id(pod) not in gone:
                info.add(pod)
        return info


# -- tolerations and node selectors --------------------------------------------------------------


def tolerates(toleration: Any, taint: Any) -> bool:
    """``Toleration.ToleratesTaint`` (k8s.io/api core/v1 toleration.go)."""
    tol, taint = as_dict(toleration), as_dict(taint)
    effect, key = as_str(tol.get("effect")), as_str(tol.get("key"))
    if effect and effect != taint.get("effect"):
        return False
    if key and key != taint.get("key"):
        return False
    operator = as_str(tol.get("operator"))
    if operator in ("", "Equal"):
        return as_str(tol.get("value")) == as_str(taint.get("value"))
    return operator == "Exists"


def _tolerated(pod: Obj, taint: Any) -> bool:
    tolerations = as_list(as_dict(pod.get("spec")).get("tolerations"))
    return any(tolerates(t, taint) for t in tolerations)


def _requirement(req: Any, value: str | None) -> bool:
    req = as_dict(req)
    op, values = req.get("operator"), [as_str(v) for v in as_list(req.get("values"))]
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            have, bound = int(value), int(values[0])
        except ValueError:
            return False
        return have > bound if op == "Gt" else have < bound
    return False


def term_matches(term: Any, node: Obj) -> bool:
    """A NodeSelectorTerm: every expression on labels and field on ``metadata.name`` holds; an
    empty term matches no node."""
    term = as_dict(term)
    expressions, fields = as_list(term.get("matchExpressions")), as_list(term.get("matchFields"))
    if not expressions and not fields:
        return False
    labels = as_dict(node["metadata"].get("labels"))
    for req in expressions:
        key = as_str(as_dict(req).get("key"))
        if not _requirement(req, labels.get(key) if key in labels else None):
            return False
    for req in fields:
        if as_dict(req).get("key") != "metadata.name":
            return False
        if not _requirement(req, str(node["metadata"]["name"])):
            return False
    return True


def _node_affinity(pod: Obj) -> Obj:
    return as_dict(as_dict(as_dict(pod.get("spec")).get("affinity")).get("nodeAffinity"))


def required_terms(pod: Obj) -> list[Any] | None:
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, dict):
        return None
    return as_list(required.get("nodeSelectorTerms"))


def node_names_wanted(pod: Obj) -> tuple[set[str] | None, bool]:
    """NodeAffinity's PreFilter: the node names every required term narrows to by
    ``metadata.name In`` (None: any node), and whether the terms conflict (no name left)."""
    terms = required_terms(pod)
    if not terms:
        return None, False
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for req in as_list(as_dict(term).get("matchFields")):
            req = as_dict(req)
            if req.get("key") == "metadata.name" and req.get("operator") == "In":
                values = {as_str(v) for v in as_list(req.get("values"))}
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None, False
        names |= term_names
    return names, not names


# -- the filters -------------------------------------------------------------------------------


def _fit(pod: Obj, requests: dict[str, int], info: NodeInfo) -> Status | None:
    allocatable = info.allocatable()
    reasons = []
    if len(info.pods) + 1 > allocatable.get("pods", 0):
        reasons.append(REASON_TOO_MANY_PODS)
    order = ["cpu", "memory", "ephemeral-storage"]
    order += sorted(n for n in requests if n not in order and n != "pods")
    for name in order:
        wanted = requests.get(name, 0)
        if wanted > 0 and wanted > allocatable.get(name, 0) - info.requested.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return Status(UNSCHEDULABLE, tuple(reasons)) if reasons else None


def _ports_conflict(wanted: list[tuple[str, str, int]], used: set[tuple[str, str, int]]) -> bool:
    for ip, protocol, port in wanted:
        for used_ip, used_protocol, used_port in used:
            if (used_protocol, used_port) != (protocol, port):
                continue
            if ip == BIND_ALL or used_ip in (BIND_ALL, ip):
                return True
    return False


def taints_tolerated(pod: Obj, info: NodeInfo) -> bool:
    """TaintToleration's Filter: every NoSchedule and NoExecute taint is tolerated."""
    for taint in as_list(as_dict(info.node.get("spec")).get("taints")):
        effect = as_dict(taint).get("effect")
        if effect in ("NoSchedule", "NoExecute") and not _tolerated(pod, taint):
            return False
    return True


def node_affinity_matches(pod: Obj, info: NodeInfo) -> bool:
    """NodeAffinity's Filter: ``nodeSelector`` and the required node affinity terms."""
    selector = as_dict(as_dict(pod.get("spec")).get("nodeSelector"))
    labels = info.labels
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    terms = required_terms(pod)
    return terms is None or any(term_matches(t, info.node) for t in terms)


def run_filters(
    pod: Obj,
    info: NodeInfo,
    requests: dict[str, int],
    affinity: PodAffinityState,
    spread: SpreadState,
) -> Status | None:
    """The first failing filter's status on ``info``, or None when the pod fits."""
    spec, node_spec = as_dict(pod.get("spec")), as_dict(info.node.get("spec"))
    if node_spec.get("unschedulable") and not _tolerated(
        pod, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
    ):
        return Status(UNRESOLVABLE, (REASON_UNSCHEDULABLE,))
    if spec.get("nodeName") and spec["nodeName"] != info.name:
        return Status(UNRESOLVABLE, (REASON_NODE_NAME,))
    if not taints_tolerated(pod, info):
        return Status(UNRESOLVABLE, (REASON_TAINT,))
    if not node_affinity_matches(pod, info):
        return Status(UNRESOLVABLE, (REASON_AFFINITY,))
    wanted_ports = host_ports(pod)
    if wanted_ports and _ports_conflict(wanted_ports, info.ports):
        return Status(UNSCHEDULABLE, (REASON_PORTS,))
    fit = _fit(pod, requests, info)
    if fit is not None:
        return fit
    broken = spread_filter(spread, info) or pod_affinity_filter(affinity, info)
    return Status(broken[0], (broken[1],)) if broken else None


# -- scores ------------------------------------------------------------------------------------


def _least_allocated(pod: Obj, info: NodeInfo) -> int:
    wanted = pod_requests(pod, non_zero=True)
    allocatable = info.allocatable()
    total = 0
    for name in ("cpu", "memory"):
        capacity = allocatable.get(name, 0)
        requested = info.non_zero.get(name, 0) + wanted.get(name, 0)
        if capacity > 0 and requested <= capacity:
            total += (capacity - requested) * MAX_NODE_SCORE // capacity
    return total // 2


def _prefer_no_schedule(pod: Obj, info: NodeInfo) -> int:
    tolerations = [
        t
        for t in as_list(as_dict(pod.get("spec")).get("tolerations"))
        if as_dict(t).get("effect") in (None, "", "PreferNoSchedule")
    ]
    return sum(
        1
        for taint in as_list(as_dict(info.node.get("spec")).get("taints"))
        if as_dict(taint).get("effect") == "PreferNoSchedule"
        and not any(tolerates(t, taint) for t in tolerations)
    )


def _preferred_affinity(pod: Obj, info: NodeInfo) -> int:
    preferred = as_list(_node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution"))
    total = 0
    for item in preferred:
        item = as_dict(item)
        weight = item.get("weight")
        if isinstance(weight, int) and term_matches(item.get("preference"), info.node):
            total += weight
    return total


def scores(pod: Obj, infos: list[NodeInfo]) -> dict[str, int]:
    """Each feasible node's weighted total (prioritizeNodes, with normalized plugin scores)."""
    taints = {i.name: _prefer_no_schedule(pod, i) for i in infos}
    preferred = {i.name: _preferred_affinity(pod, i) for i in infos}
    most_taints, most_preferred = (
        max(taints.values(), default=0),
        max(preferred.values(), default=0),
    )
    totals = {}
    for info in infos:
        taint_score = MAX_NODE_SCORE
        if most_taints:
            taint_score = MAX_NODE_SCORE - taints[info.name] * MAX_NODE_SCORE // most_taints
        affinity_score = (
            preferred[info.name] * MAX_NODE_SCORE // most_preferred if most_preferred else 0
        )
        totals[info.name] = _least_allocated(pod, info) + 3 * taint_score + 2 * affinity_score
    return totals
