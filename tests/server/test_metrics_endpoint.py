"""``/metrics`` on a real ``kubelite serve``: kube-apiserver's metric names, labels and buckets
(k8s.io/apiserver pkg/endpoints/metrics, pkg/storage/etcd3/metrics), read back with
prometheus-client's parser."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Server, start_in_process, stop_server
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

CMS = "/api/v1/namespaces/default/configmaps"
KUBE_BUCKETS = [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8,
                10, 15, 20, 30, 45, 60]  # fmt: skip


@pytest.fixture
def server(tmp_path: Path, storage_url: str | None) -> Iterator[Server]:
    """A server of the test's own: the tests count every request and object it has."""
    srv = start_in_process(tmp_path / "data", storage_url)
    try:
        yield srv
    finally:
        stop_server(srv)


def raw_request(
    server: Server,
    method: str,
    path: str,
    body: bytes | None = None,
    content_type: str = "application/json",
    token: str | None = "default",
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(server.url + server.path(path), data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", content_type)
    if token is not None:
        req.add_header("Authorization", f"Bearer {server.token if token == 'default' else token}")
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    try:
        with urllib.request.urlopen(req, timeout=30, context=context) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def scrape(server: Server) -> list[Sample]:
    code, headers, body = raw_request(server, "GET", "/metrics")
    assert code == 200
    assert headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return [s for f in text_string_to_metric_families(body.decode()) for s in f.samples]


def value(samples: list[Sample], name: str, **labels: str) -> float | None:
    for sample in samples:
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
            return sample.value
    return None


def test_requests_are_counted_with_kubes_labels(server: Server) -> None:
    cm = {"metadata": {"name": "a"}, "data": {"k": "v"}}
    assert server.request("POST", CMS, cm)[0] == 201
    assert server.request("GET", f"{CMS}/a")[0] == 200
    assert server.request("GET", CMS)[0] == 200
    assert server.request("GET", f"{CMS}/missing")[0] == 404
    apply = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}'
    code = raw_request(
        server, "PATCH", f"{CMS}/b?fieldManager=t", apply, "application/apply-patch+yaml"
    )[0]
    assert code == 201
    assert server.request("POST", f"{CMS}?dryRun=All", {"metadata": {"name": "c"}})[0] == 201
    samples = scrape(server)

    def total(verb: str, scope: str, code: str, dry_run: str = "") -> float | None:
        return value(
            samples, "apiserver_request_total", verb=verb, dry_run=dry_run, group="",
            version="v1", resource="configmaps", subresource="", scope=scope,
            component="apiserver", code=code,
        )  # fmt: skip

    assert total("POST", "resource", "201") == 1
    assert total("POST", "resource", "201", dry_run="All") == 1
    assert total("GET", "resource", "200") == 1
    assert total("GET", "resource", "404") == 1
    assert total("LIST", "namespace", "200") == 1
    assert total("APPLY", "resource", "201") == 1
    buckets = [
        float(s.labels["le"])
        for s in samples
        if s.name == "apiserver_request_duration_seconds_bucket"
        and s.labels["verb"] == "LIST"
        and s.labels["resource"] == "configmaps"
    ]
    assert buckets == [*KUBE_BUCKETS, float("inf")]
    # the scrape itself is a non-resource request: its path is the subresource label
    again = scrape(server)
    assert value(again, "apiserver_request_total", verb="GET", subresource="/metrics") == 1
    assert value(samples, "apiserver_request_created") is None  # no prometheus-client extras


def test_store_objects_and_durations(server: Server) -> None:
    for name in ("a", "b", "c"):
        assert server.request("POST", CMS, {"metadata": {"name": name}})[0] == 201
    assert server.request("DELETE", f"{CMS}/c")[0] == 200
    samples = scrape(server)
    # and the root CA publisher's kube-root-ca.crt in each of the four namespaces
    assert value(samples, "apiserver_storage_objects", resource="configmaps") == 2 + 4
    assert value(samples, "apiserver_resource_objects", group="", resource="configmaps") == 2 + 4
    assert value(samples, "apiserver_storage_objects", resource="namespaces") == 4
    for operation, count in (("create", 3 + 4), ("delete", 1)):
        observed = value(
            samples,
            "etcd_request_duration_seconds_count",
            operation=operation,
            group="",
            resource="configmaps",
        )
        assert observed == count
    assert (value(samples, "process_resident_memory_bytes") or 0) > 0
    assert value(samples, "apiserver_current_inflight_requests", request_kind="mutating") == 1


def test_watches_are_long_running_and_their_events_counted(server: Server) -> None:
    assert server.request("POST", CMS, {"metadata": {"name": "a"}})[0] == 201
    reader, lines = server.watch_lines(f"{CMS}?watch=true", seconds=4)
    deadline = time.monotonic() + 10
    while not lines and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lines, "the watch sent nothing"
    during = scrape(server)
    watch = {"verb": "WATCH", "group": "", "version": "v1", "resource": "configmaps"}
    assert value(during, "apiserver_longrunning_requests", scope="namespace", **watch) == 1
    assert server.request("POST", CMS, {"metadata": {"name": "b"}})[0] == 201
    reader.join()
    assert len(lines) == 3  # ADDED kube-root-ca.crt and a (the initial state), then b
    after = scrape(server)
    assert value(after, "apiserver_longrunning_requests", **watch) == 0
    events = value(
        after, "apiserver_watch_events_total", group="", version="v1", resource="configmaps"
    )
    assert events == 3
    assert value(after, "apiserver_request_total", code="200", **watch) == 1


def test_metrics_need_a_token_and_can_be_turned_off(server: Server, tmp_path: Path) -> None:
    code, _, body = raw_request(server, "GET", "/metrics", token=None)
    assert (code, json.loads(body)["reason"]) == (403, "Forbidden")  # system:anonymous
    code, _, body = raw_request(server, "GET", "/metrics", token="not-a-token")
    assert (code, json.loads(body)["reason"]) == (401, "Unauthorized")
    off = start_in_process(tmp_path / "off", metrics=False)  # --no-metrics
    try:
        assert off.request("GET", "/metrics")[0] == 404
    finally:
        stop_server(off)


def test_no_client_can_add_series_at_will(server: Server) -> None:
    """Requests refused by authentication or authorization, and requests for resources or paths
    nothing serves, add no series (kube instruments only its registered handlers): the
    document's size is bounded by what the server serves, not by what clients send."""
    for i in range(20):
        raw_request(server, "GET", f"/random-{i}/x", token=None)
        raw_request(server, "GET", f"/random-{i}/y", token="not-a-token")
        raw_request(server, "GET", f"/api/v1/namespaces/ns{i}/foo{i}", token=None)
        raw_request(server, "GET", f"/api/v1/namespaces/default/nothing{i}")
        raw_request(server, "GET", f"/apis/nope{i}.example.com/v1/things")
        raw_request(server, "GET", f"/not-a-path-{i}")
    samples = scrape(server)
    labels = {v for s in samples for v in s.labels.values()}
    assert not any(
        needle in label
        for label in labels
        for needle in ("random-", "foo1", "nothing1", "nope1", "not-a-path")
    )
    assert value(samples, "apiserver_request_total", code="401") is None
    assert value(samples, "apiserver_request_total", code="403") is None
    assert value(samples, "apiserver_request_total", code="404") is None
