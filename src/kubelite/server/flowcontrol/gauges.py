"""API Priority and Fairness on ``/metrics``, under kube's names (k8s.io/apiserver
``pkg/util/flowcontrol/metrics``), read from the flow controller when scraped: each priority
level's ``apiserver_flowcontrol_nominal_limit_seats``, ``lower_limit_seats``,
``upper_limit_seats`` and ``current_limit_seats``, and
``apiserver_flowcontrol_rejected_requests_total{priority_level,flow_schema,reason}``."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubelite.server.flowcontrol.config import FlowControl

PREFIX = "apiserver_flowcontrol_"
LIMITS = (
    ("nominal_limit_seats", "[BETA] Nominal number of execution seats configured for each "
     "priority level", "nominal"),
    ("lower_limit_seats", "[ALPHA] Configured lower bound on number of execution seats "
     "available to each priority level", "minimum"),
    ("upper_limit_seats", "[ALPHA] Configured upper bound on number of execution seats "
     "available to each priority level", "maximum"),
    ("current_limit_seats", "[ALPHA] current derived number of execution seats available to "
     "each priority level", "current"),
)  # fmt: skip


class FlowControlGauges(Collector):
    def __init__(self, control: FlowControl) -> None:
        self.control = control

    def collect(self) -> Iterator[Metric]:
        levels = sorted(self.control.levels.values(), key=lambda level: level.name)
        for name, help_text, attribute in LIMITS:
            family = GaugeMetricFamily(PREFIX + name, help_text, labels=("priority_level",))
            for level in levels:
                family.add_metric((level.name,), getattr(level, attribute))
            yield family
        rejected = CounterMetricFamily(
            PREFIX + "rejected_requests",
            "[BETA] Number of requests rejected by API Priority and Fairness subsystem",
            labels=("priority_level", "flow_schema", "reason"),
        )
        for labels, count in sorted(self.control.rejected.items()):
            rejected.add_metric(labels, count)
        yield rejected
