"""What the server is told about its simulated cluster (``kubelite serve --nodes N
--node-capacity cpu=8,memory=16Gi,pods=110 --simulate-backoff-scale 1``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubelite.api.encoding import quantity

#: a simulated node's capacity unless ``--node-capacity`` says otherwise (kind-like, not kwok's)
DEFAULT_CAPACITY: Mapping[str, str] = {
    "cpu": "8",
    "memory": "16Gi",
    "ephemeral-storage": "100Gi",
    "pods": "110",
}
#: the annotation that makes a Node simulated
SIMULATED_ANNOTATION = "kubelite.dev/simulated"


@dataclass(frozen=True, slots=True)
class NodeTimings:
    """The node heartbeats' intervals (seconds; kube's defaults), shorter in tests.

    ``lease_renew``: the kubelet renews its Lease (0.25 x its 40 s duration);
    ``status_update``: it computes its node status (``nodeStatusUpdateFrequency``), written only
    when something changed or ``status_report`` (``nodeStatusReportFrequency``) passed;
    ``monitor_period``, ``monitor_grace``, ``startup_grace``: kube-controller-manager's
    ``--node-monitor-period``, ``--node-monitor-grace-period``, ``--node-startup-grace-period``
    (the node lifecycle controller's check of heartbeats)."""

    lease_renew: float = 10.0
    status_update: float = 10.0
    status_report: float = 300.0
    monitor_period: float = 5.0
    monitor_grace: float = 50.0
    startup_grace: float = 60.0


@dataclass(frozen=True, slots=True)
class Simulation:
    """``nodes``: how many simulated Nodes the server registers at start (0: none; a test may
    still create simulated ones); ``capacity``: each one's capacity (and allocatable), by
    resource name; ``backoff_scale``: multiplies the waits of CrashLoopBackOff and Job back-off
    (the texts still say kube's real durations), so that tests need not wait 10 s per crash;
    ``node_timings``: the heartbeat intervals of the simulated kubelets and of the node lifecycle
    controller (tests shorten them)."""

    nodes: int = 1
    capacity: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_CAPACITY))
    backoff_scale: float = 1.0
    node_timings: NodeTimings = field(default_factory=NodeTimings)

    @staticmethod
    def parse_capacity(text: str) -> dict[str, str]:
        """``cpu=8,memory=32Gi,pods=110`` over the defaults; ValueError says what is wrong."""
        capacity = dict(DEFAULT_CAPACITY)
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, sep, value = item.partition("=")
            if not sep or not name or not value:
                raise ValueError(f"{item!r} is not NAME=QUANTITY (e.g. cpu=8,memory=32Gi,pods=110)")
            try:
                quantity.parse(value)
            except ValueError:
                raise ValueError(f"{name}={value}: {value!r} is not a quantity") from None
            capacity[name] = value
        return capacity
