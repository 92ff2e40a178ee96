"""``/metrics``: kube-apiserver's metrics under its names, labels, help texts and buckets, in the
Prometheus text format, through prometheus-client on one registry per app (several servers run
in one test process).

- ``apiserver_request_total`` and ``apiserver_request_duration_seconds``: k8s.io/apiserver
  ``pkg/endpoints/metrics`` (``MonitorRequest``), the verb as ``cleanVerb`` reports it (GET and
  LIST, WATCH, APPLY for a server-side apply PATCH, ``other`` for unknown methods), the scope as
  ``CleanScope`` (resource, namespace, cluster; empty for non-resource paths, whose path is the
  subresource label as kube's ``InstrumentHandlerFunc`` has it), ``component="apiserver"``;
- ``apiserver_current_inflight_requests{request_kind}`` (readOnly, mutating: the most in flight
  since the last scrape, as kube's max-inflight filter reports the most in the last second) and
  ``apiserver_longrunning_requests`` (watches, while they stream);
- ``apiserver_watch_events_total{group,version,resource}``;
- ``apiserver_storage_objects{resource}`` and ``apiserver_resource_objects{group,resource}``
  (``pkg/storage/etcd3/metrics``), counted in the store when scraped;
- ``etcd_request_duration_seconds{operation,group,resource}`` from :mod:`kubelite.storage.timed`,
  for SQLite as for etcd (the names in 1.37 are ``group`` and ``resource``: ``type`` is gone);
- ``workqueue_depth{name}`` (client-go's ``util/workqueue``), the queue of each controller the
  controller manager holds (named as kube-controller-manager names its controllers), and
  ``leader_election_master_status{name}`` (1 while this server holds the controller manager's
  Lease), read from the controllers when scraped;
- ``kubelite_injected_faults_total{fault}``, only on a server started with ``--inject``;
- the process and platform collectors (``process_*``, ``python_info``).

The three metrics every request feeds are :mod:`.tally`'s (plain values, families built when
scraped); the rest are prometheus-client's own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import storage_prefix
from kubelite.api.machinery.history import NAME as HISTORY
from kubelite.api.machinery.request import RequestInfo
from kubelite.server.messages import Request
from kubelite.server.tally import Counts, Histograms
from kubelite.storage import Store

CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"
COMPONENT = "apiserver"
#: kube's request latency buckets (and etcd_request_duration_seconds').
LATENCY_BUCKETS = (0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6,
                   8, 10, 15, 20, 30, 45, 60)  # fmt: skip
#: metrics.validRequestMethods: any other verb is reported as "other".
VALID_VERBS = frozenset({"APPLY", "CONNECT", "CREATE", "DELETE", "DELETECOLLECTION", "GET",
                         "LIST", "PATCH", "POST", "PROXY", "PUT", "UPDATE", "WATCH",
                         "WATCHLIST"})  # fmt: skip
APPLY_PATCH = "application/apply-patch+yaml"
HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})
OPENAPI_V3_PREFIX = "/openapi/v3/"
MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
REQUEST_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope",
                  "component")  # fmt: skip

# prometheus-client would add a ``*_created`` series to each counter and histogram: kube has none.
disable_created_metrics()  # type: ignore[no-untyped-call]


def clean_scope(info: RequestInfo) -> str:
    """kube's ``CleanScope``."""
    if info.name or info.verb == "create":
        return "resource"
    if info.namespace:
        return "namespace"
    return "cluster" if info.is_resource_request else ""


def reported_verb(request: Request, scope: str) -> str:
    """kube's ``NormalizedVerb`` for the log line (``CanonicalVerb`` then ``CleanVerb``)."""
    method = request.method.upper()
    if method in ("GET", "HEAD"):
        verb = "LIST" if scope not in ("resource", "") else "GET"
        if request.info.verb == "watch":  # ?watch=true, or the legacy /watch/ path
            verb = "WATCH"
        return verb
    if method == "PATCH" and request.headers.get("content-type") == APPLY_PATCH:
        return "APPLY"
    return method


def metrics_verb(request: Request, scope: str) -> str:
    """kube's ``cleanVerb``: the reported verb, ``other`` when it is not a known one."""
    verb = reported_verb(request, scope)
    return verb if verb in VALID_VERBS else "other"


def clean_dry_run(request: Request) -> str:
    """kube's ``cleanDryRun``: the sorted distinct ``dryRun`` values (we keep the last one)."""
    value = request.query.get("dryRun")
    if value is None:
        return ""
    return value if value == "All" else "invalid"


class ControllerGauges(Collector):
    """``workqueue_depth`` and ``leader_election_master_status``, read when scraped."""

    def __init__(
        self, depths: Callable[[], Mapping[str, int]], leading: Callable[[], bool], lease: str
    ) -> None:
        self.depths = depths
        self.leading = leading
        self.lease = lease

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily(
            "workqueue_depth", "[ALPHA] Current depth of workqueue", labels=("name",)
        )
        for name, value in sorted(self.depths().items()):
            depth.add_metric((name,), value)
        yield depth
        status = GaugeMetricFamily(
            "leader_election_master_status",
            "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 "
            "indicates backup, 1 indicates master. 'name' is the string used to identify the "
            "lease. Please make sure to group by name.",
            labels=("name",),
        )
        status.add_metric((self.lease,), int(self.leading()))
        yield status


class FaultCounters(Collector):
    """``kubelite_injected_faults_total{fault}``: the faults ``--inject`` asked for, as
    injected so far (:mod:`kubelite.server.faults`), read when scraped."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "kubelite_injected_faults",
            "Faults injected on purpose (kubelite serve --inject) by fault: conflict, "
            "watch_end, watch_expired, slow.",
            labels=("fault",),
        )
        for fault, count in self.counts.items():
            family.add_metric((fault,), count)
        yield family


class APIMetrics:
    """The :class:`kubelite.server.filters.Metrics` of one app, and the ``/metrics`` document."""

    def __init__(self, catalogue: Catalogue, store: Store | None = None) -> None:
        self.catalogue = catalogue
        self.store = store
        self.registry = registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        self.requests = Counts(
            "apiserver_request_total",
            "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, "
            "group, version, resource, scope, component, and HTTP response code.",
            (*REQUEST_LABELS, "code"),
        )
        self.durations = Histograms(
            "apiserver_request_duration_seconds",
            "[STABLE] Response latency distribution in seconds for each verb, dry run value, "
            "group, version, resource, subresource, scope and component.",
            REQUEST_LABELS,
            LATENCY_BUCKETS,
        )
        self.inflight = Gauge(
            "apiserver_current_inflight_requests",
            "[STABLE] Maximal number of currently used inflight request limit of this apiserver "
            "per request kind in last second.",
            ("request_kind",),
            registry=registry,
        )
        self.longrunning = Gauge(
            "apiserver_longrunning_requests",
            "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, "
            "group, version, resource, scope and component. Not all requests are tracked this "
            "way.",
            ("verb", "group", "version", "resource", "subresource", "scope", "component"),
            registry=registry,
        )
        self.watch_events = Counter(
            "apiserver_watch_events_total",
            "[BETA] Number of events sent in watch clients",
            ("group", "version", "resource"),
            registry=registry,
        )
        self.storage_objects = Gauge(
            "apiserver_storage_objects",
            "[STABLE] (Deprecated since 1.34.0) [DEPRECATED, consider using "
            "apiserver_resource_objects instead] Number of stored objects at the time of last "
            "check split by kind. In case of a fetching error, the value will be -1.",
            ("resource",),
            registry=registry,
        )
        self.resource_objects = Gauge(
            "apiserver_resource_objects",
            "[ALPHA] Number of stored objects at the time of last check split by kind. In case "
            "of a fetching error, the value will be -1.",
            ("group", "resource"),
            registry=registry,
        )
        self.store_durations = Histograms(
            "etcd_request_duration_seconds",
            "[ALPHA] Etcd request latency in seconds for each operation and object type.",
            ("operation", "group", "resource"),
            LATENCY_BUCKETS,
        )
        for tally in (self.requests, self.durations, self.store_durations):
            registry.register(tally)
        # the busiest moment since the last scrape, and now, per request kind
        self._current = {"readOnly": 0, "mutating": 0}
        self._peak = dict(self._current)
        # the store's series by (operation, key directory)
        self._store_children: dict[tuple[str, str], list[float]] = {}
        self._key_resources: dict[str, tuple[str, str]] = {}

    def add_controllers(
        self, depths: Callable[[], Mapping[str, int]], leading: Callable[[], bool], lease: str
    ) -> None:
        """Report the controller manager's queues and whether it holds ``lease``."""
        self.registry.register(ControllerGauges(depths, leading, lease))

    def add_faults(self, counts: Mapping[str, int]) -> None:
        """Report the injected faults' counts (``counts`` read when scraped)."""
        self.registry.register(FaultCounters(counts))

    # -- the filter's hooks ----------------------------------------------------------------------

    def started(self, request: Request) -> None:
        """A request enters: in flight (or long-running, for a watch)."""
        info = request.info
        if info.verb == "watch":
            if self._served(info):
                request.counted_watch = True
                self._longrunning(request, 1)
                self._watch_counter(request)
            return
        kind = "mutating" if request.method in MUTATING_METHODS else "readOnly"
        now = self._current[kind] = self._current[kind] + 1
        if now > self._peak[kind]:
            self._peak[kind] = now

    def observe(self, request: Request, status: int, seconds: float) -> None:
        """A request has been answered with ``status`` after ``seconds``."""
        info = request.info
        if info.verb == "watch":
            if request.counted_watch:
                self._longrunning(request, -1)
        else:
            kind = "mutating" if request.method in MUTATING_METHODS else "readOnly"
            self._current[kind] -= 1
        labels = self._labels(request, status)
        if labels is None:
            return
        self.requests.inc((*labels, str(status)))
        durations = self.durations
        durations.observe(durations.child(labels), seconds)

    def _labels(self, request: Request, status: int) -> tuple[str, ...] | None:
        """The request's labels; None for a request kube does not instrument, so that no
        client can add series at will: one refused by authentication or authorization (401,
        403 before any handler), one for a resource or path nothing serves (kube's unregistered
        paths reach its NotFound handler, uninstrumented)."""
        if request.refused:
            return None
        info = request.info
        scope = clean_scope(info)
        verb = metrics_verb(request, scope)
        dry_run = clean_dry_run(request)
        if info.is_resource_request:
            if not self._served(info):
                return None
            return (verb, dry_run, info.api_group, info.api_version, info.resource,
                    info.subresource, scope, COMPONENT)  # fmt: skip
        if status == 404:
            return None
        path = request.path.rstrip("/") or "/"
        if path.startswith(OPENAPI_V3_PREFIX):
            path = OPENAPI_V3_PREFIX  # one handler for every group-version, as kube labels it
        component = "" if path in HEALTH_PATHS else COMPONENT
        return (verb, dry_run, "", "", "", path, scope, component)

    def _served(self, info: RequestInfo) -> bool:
        found = self.catalogue.lookup(info.api_group, info.api_version, info.resource)
        sub = info.subresource
        # ``history`` (kubelite's own) is served by resources the retention policy keeps
        return found is not None and (not sub or sub in found.subresources or sub == HISTORY)

    def _longrunning(self, request: Request, delta: int) -> None:
        info = request.info
        scope = clean_scope(info)
        gauge = self.longrunning.labels(
            metrics_verb(request, scope), info.api_group, info.api_version, info.resource,
            info.subresource, scope, COMPONENT,
        )  # fmt: skip
        gauge.inc(delta)

    def _watch_counter(self, request: Request) -> None:
        info = request.info
        child = self.watch_events.labels(info.api_group, info.api_version, info.resource)
        request.count_watch_event = child.inc

    # -- the store's hook ------------------------------------------------------------------------

    def observe_storage(self, operation: str, key: str, seconds: float) -> None:
        # by the key's directory (resource and namespace): one slice instead of parsing the key
        where = (operation, key[: key.rfind("/")])
        series = self._store_children.get(where)
        if series is None:
            group, resource = self._resource_of(key)
            series = self._store_children[where] = self.store_durations.child(
                (operation, group, resource)
            )
        self.store_durations.observe(series, seconds)

    def _resource_of(self, key: str) -> tuple[str, str]:
        """The group and resource whose objects ``key`` (or a prefix) holds, by the catalogue's
        storage prefixes: ``/registry/<group>/<resource>/`` or ``/registry/<resource>/``."""
        parts = key.split("/", 4)  # "", "registry", a, b, rest
        if len(parts) < 3 or parts[1] != "registry":
            return ("", "")
        two, one = "/".join(parts[:4]), "/".join(parts[:3])
        found = self._key_resources.get(two) or self._key_resources.get(one)
        if found is None:  # a resource defined since (a CRD), or none: look once
            self._refresh_prefixes()
            found = self._key_resources.get(two) or self._key_resources.get(one)
            if found is None:
                found = self._key_resources[one] = ("", parts[2])
        return found

    def _refresh_prefixes(self) -> None:
        for info in self._stored_resources():
            self._key_resources[storage_prefix(info, None).rstrip("/")] = (
                info.key_group,
                info.plural,
            )

    def _stored_resources(self) -> list[ResourceInfo]:
        seen: dict[str, ResourceInfo] = {}
        for info in self.catalogue:
            if "list" in info.verbs:
                seen.setdefault(storage_prefix(info, None), info)
        return list(seen.values())

    # -- /metrics --------------------------------------------------------------------------------

    async def exposition(self) -> bytes:
        """The text document, object counts read from the store now."""
        if self.store is not None:
            await self._count_objects(self.store)
        for kind, peak in self._peak.items():
            self.inflight.labels(kind).set(peak)
            self._peak[kind] = self._current[kind]
        return generate_latest(self.registry)

    async def _count_objects(self, store: Store) -> None:
        for info in self._stored_resources():
            try:
                page = await store.list(storage_prefix(info, None), limit=1, count=True)
                count = len(page.items) + (page.remaining or 0)
            except Exception:  # kube reports -1 when it could not count
                count = -1
            group = info.key_group
            name = f"{info.plural}.{group}" if group else info.plural
            self.storage_objects.labels(name).set(count)
            self.resource_objects.labels(group, info.plural).set(count)
