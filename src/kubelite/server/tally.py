"""Counters and histograms for the metrics every request feeds, kept in plain Python values and
handed to prometheus-client as metric families when ``/metrics`` is scraped.

prometheus-client's own ``Counter`` and ``Histogram`` take a lock and check their input on every
``inc`` and ``observe``: about 5 µs of the request path for the two request metrics and the
store's (measured: in-process GET, docs/benchmarks.md). Here an observation is a bisect and two
additions on the event loop's thread; prometheus-client still writes the exposition format.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class Counts(Collector):
    """A counter family: ``series[labels] += 1``."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.series: dict[tuple[str, ...], float] = {}

    def inc(self, labels: tuple[str, ...]) -> None:
        series = self.series
        series[labels] = series.get(labels, 0.0) + 1.0

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, value in list(self.series.items()):
            family.add_metric(list(labels), value)
        yield family


class Histograms(Collector):
    """A histogram family: per label values, a count per bucket (not cumulative; the last one
    is +Inf) and the sum, made cumulative when collected."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.bounds = tuple(float(b) for b in buckets)
        self.bound_texts = [floatToGoString(b) for b in self.bounds] + ["+Inf"]  # type: ignore[no-untyped-call]
        self.series: dict[tuple[str, ...], list[float]] = {}

    def child(self, labels: tuple[str, ...]) -> list[float]:
        """The series of ``labels`` (made empty on first use), for :meth:`observe`."""
        found = self.series.get(labels)
        if found is None:
            found = self.series[labels] = [0.0] * (len(self.bounds) + 2)
        return found

    def observe(self, series: list[float], value: float) -> None:
        series[bisect_left(self.bounds, value)] += 1.0  # le: the first bound >= value
        series[-1] += value

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, series in list(self.series.items()):
            cumulative, buckets = 0.0, []
            for text, count in zip(self.bound_texts, series[:-1], strict=True):
                cumulative += count
                buckets.append((text, cumulative))
            family.add_metric(list(labels), buckets, sum_value=series[-1])
        yield family
