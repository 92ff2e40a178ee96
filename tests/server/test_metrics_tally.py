"""The request metrics' plain counters and histograms, exposed by prometheus-client exactly as
its own Counter and Histogram would be."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from kubelite.server.tally import Counts, Histograms

BUCKETS = (0.005, 0.025, 0.1, 1.0)
VALUES = (0.001, 0.005, 0.02, 0.5, 0.5, 7.0)


def test_same_exposition_as_prometheus_clients_own() -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    counts = Counts("requests_total", "Requests.", ("verb", "code"))
    histograms = Histograms("duration_seconds", "Durations.", ("verb",), BUCKETS)
    ours.register(counts)
    ours.register(histograms)
    counter = Counter("requests_total", "Requests.", ("verb", "code"), registry=theirs)
    histogram = Histogram(
        "duration_seconds", "Durations.", ("verb",), buckets=BUCKETS, registry=theirs
    )
    for verb in ("GET", "LIST"):
        series = histograms.child((verb,))
        for value in VALUES:
            histograms.observe(series, value)
            histogram.labels(verb).observe(value)
            counts.inc((verb, "200"))
            counter.labels(verb, "200").inc()

    def lines(registry: CollectorRegistry) -> list[str]:
        text = generate_latest(registry).decode()
        return sorted(line for line in text.splitlines() if "_created" not in line)

    assert lines(ours) == lines(theirs)
    text = generate_latest(ours).decode()
    assert 'duration_seconds_bucket{le="0.005",verb="GET"} 2.0' in text  # le is inclusive
    assert 'duration_seconds_bucket{le="+Inf",verb="GET"} 6.0' in text
    assert 'requests_total{code="200",verb="LIST"} 6.0' in text
