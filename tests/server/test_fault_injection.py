"""``kubelite serve --inject``: the spec read (and refused in one line), then each fault on a real
server over HTTPS: injected 409s with kube's exact Status on exactly the writes a cluster could
refuse, nothing stored changed; watch streams ended cleanly or with kube's 410 ERROR event after
their initial events; slowed requests; the counts in ``/metrics``."""

from __future__ import annotations

import itertools
import json
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Server, deployment, start_in_process, stop_server

from kubelite.server.faults import (
    Faults,
    FaultSpec,
    FaultSpecError,
    carries_resource_version,
    patch_sets_resource_version,
)

NS = "/api/v1/namespaces/default"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)

# -- the spec -----------------------------------------------------------------------------------


def test_a_full_spec_is_read_and_written_back() -> None:
    spec = FaultSpec.parse("conflicts=0.1,watch-drops=0.01,slow=0.05:200ms,seed=7")
    assert spec == FaultSpec(0.1, 0.01, 0.05, 0.2, 7)
    assert FaultSpec.parse(str(spec)) == spec
    assert FaultSpec.parse("slow=1:1.5s").slow_seconds == 1.5
    assert FaultSpec.parse(" seed=3 , conflicts=1 ") == FaultSpec(conflicts=1.0, seed=3)
    assert spec.describe() == (
        "injecting faults: 409 Conflict on 10% of updates and patches that carry a "
        "resourceVersion; watch streams ended after 1% of events (half cleanly, half with 410 "
        "Expired); 5% of requests delayed 200ms (seed 7)"
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("conflicts=1.5", "conflicts takes a probability from 0 to 1, e.g. conflicts=0.1"),
        ("watch-drops=nan", "watch-drops takes a probability from 0 to 1"),
        ("conflicts=-0.1", "conflicts takes a probability from 0 to 1"),
        ("slow=0.1", "slow takes P:DURATION, e.g. slow=0.05:200ms"),
        ("slow=0.1:200", "slow's delay is a duration such as 200ms or 1.5s, not '200'"),
        ("slow=0.1:2m", "slow's delay is a duration such as 200ms or 1.5s"),
        ("seed=-1", "seed takes a whole number, e.g. seed=1"),
        ("conflict=0.1", "unknown fault 'conflict': conflicts, watch-drops, slow or seed"),
        ("conflicts", "expected NAME=VALUE, not 'conflicts'"),
        ("", "expected NAME=VALUE, not ''"),
        ("conflicts=0.1,conflicts=0.2", "conflicts is given twice"),
    ],
)
def test_a_bad_spec_says_what_to_write(text: str, says: str) -> None:
    with pytest.raises(FaultSpecError) as refused:
        FaultSpec.parse(text)
    assert says in str(refused.value)


def test_a_seed_makes_the_faults_the_same_on_every_run() -> None:
    def draws(seed: int) -> list[object]:
        faults = Faults(
            FaultSpec(conflicts=0.5, watch_drops=0.5, slow=0.5, slow_seconds=1, seed=seed)
        )
        chances = [faults.conflict_chance(True) for _ in range(50)]
        return [
            *(chance() for chance in chances if chance is not None),
            *(faults.drop() for _ in range(50)),
            *(faults.delay("/api/v1/pods") for _ in range(50)),
        ]

    assert draws(1) == draws(1)
    assert draws(1) != draws(2)


def test_a_conflict_chance_is_decided_once_and_only_for_writes_with_a_resource_version() -> None:
    faults = Faults(FaultSpec(conflicts=1.0))
    assert faults.conflict_chance(False) is None
    chance = faults.conflict_chance(True)
    assert chance is not None
    assert chance()
    assert chance()  # asked again (a write retried on a fresh read): the same answer
    assert faults.counts["conflict"] == 1
    assert Faults(FaultSpec(watch_drops=1.0)).conflict_chance(True) is None


def test_health_and_metrics_are_never_slowed() -> None:
    faults = Faults(FaultSpec(slow=1.0, slow_seconds=0.5))
    for path in ("/healthz", "/livez/ping", "/readyz", "/metrics", "/readyz/"):
        assert faults.delay(path) == 0
    assert faults.delay("/version") == faults.delay("/api/v1/namespaces") == 0.5
    assert faults.counts["slow"] == 2


@pytest.mark.parametrize(
    ("content_type", "patch", "sets"),
    [
        ("application/merge-patch+json", {"metadata": {"resourceVersion": "5"}}, True),
        ("application/merge-patch+json", {"metadata": {"resourceVersion": None}}, False),
        ("application/merge-patch+json", {"data": {"a": "1"}}, False),
        ("application/strategic-merge-patch+json", {"metadata": {"resourceVersion": "5"}}, True),
        ("application/json-patch+json",
         [{"op": "replace", "path": "/metadata/resourceVersion", "value": "5"}], True),
        ("application/json-patch+json",
         [{"op": "add", "path": "/metadata", "value": {"resourceVersion": "5"}}], True),
        ("application/json-patch+json",
         [{"op": "test", "path": "/metadata/resourceVersion", "value": "5"}], False),
        ("application/json-patch+json", [{"op": "remove", "path": "/data/a"}], False),
        ("application/json-patch+json", {"not": "a list"}, False),
    ],
)  # fmt: skip
def test_which_patches_set_a_resource_version(content_type: str, patch: Any, sets: bool) -> None:
    assert patch_sets_resource_version(content_type, patch) is sets


def test_which_bodies_carry_a_resource_version() -> None:
    assert carries_resource_version({"metadata": {"resourceVersion": "3"}})
    assert not carries_resource_version({"metadata": {"resourceVersion": ""}})
    assert not carries_resource_version({"metadata": None})
    assert not carries_resource_version(["metadata"])


# -- the command line ---------------------------------------------------------------------------


def test_kubelite_serve_refuses_a_bad_spec_in_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kubelite", "serve", "--port", "0", "--data-dir",
         str(tmp_path / "data"), "--inject", "conflicts=0.1,slow=0.2"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr == (
        "kubelite: --inject 'conflicts=0.1,slow=0.2': slow takes P:DURATION, e.g. "
        "slow=0.05:200ms, not '0.2'\n"
    )
    assert not (tmp_path / "data").exists()  # refused before anything started


# -- servers ------------------------------------------------------------------------------------


@pytest.fixture
def make_server(tmp_path: Path) -> Iterator[Any]:
    """Servers of the test's own (what ``kubelite serve --inject`` runs, in this process)."""
    started: list[Server] = []

    def make(inject: str | None) -> Server:
        faults = None if inject is None else FaultSpec.parse(inject)
        srv = start_in_process(tmp_path / f"data{len(started)}", faults=faults)
        started.append(srv)
        return srv

    try:
        yield make
    finally:
        for srv in started:
            stop_server(srv)


def fetch(server: Server, path: str) -> str:
    req = urllib.request.Request(server.url + path)
    req.add_header("Authorization", f"Bearer {server.token}")
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    with urllib.request.urlopen(req, timeout=30, context=context) as resp:
        return str(resp.read().decode())


def injected(server: Server) -> dict[str, int]:
    """The server's ``kubelite_injected_faults_total`` by fault."""
    text = fetch(server, "/metrics")
    prefix = 'kubelite_injected_faults_total{fault="'
    return {
        line[len(prefix) :].split('"')[0]: int(float(line.split()[-1]))
        for line in text.splitlines()
        if line.startswith(prefix)
    }


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def conflict_status(resource: str, name: str, group: str = "") -> dict[str, Any]:
    qualified = f"{resource}.{group}" if group else resource
    details = {"name": name, "group": group, "kind": resource} if group else {
        "name": name, "kind": resource}  # fmt: skip
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'Operation cannot be fulfilled on {qualified} "{name}": {MODIFIED}',
        "reason": "Conflict",
        "details": details,
        "code": 409,
    }


def test_every_write_that_carries_a_resource_version_is_refused_and_nothing_changes(
    make_server: Any,
) -> None:
    srv: Server = make_server("conflicts=1")
    assert "injecting faults: 409 Conflict on 100% of updates" in srv.log()
    code, cm = srv.request("POST", f"{NS}/configmaps", configmap("c", n="0"))
    assert code == 201
    path = f"{NS}/configmaps/c"
    version = cm["metadata"]["resourceVersion"]
    refused = conflict_status("configmaps", "c")
    writes: list[tuple[str, Any, str]] = [
        ("PUT", {**cm, "data": {"n": "1"}}, "application/json"),
        ("PATCH", {"metadata": {"resourceVersion": version}, "data": {"n": "2"}},
         "application/merge-patch+json"),
        ("PATCH", {"metadata": {"resourceVersion": version}, "data": {"n": "3"}},
         "application/strategic-merge-patch+json"),
        ("PATCH", [{"op": "replace", "path": "/metadata/resourceVersion", "value": version},
                   {"op": "replace", "path": "/data/n", "value": "4"}],
         "application/json-patch+json"),
        ("PATCH", {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "resourceVersion": version}, "data": {"n": "5"}},
         "application/apply-patch+yaml"),
    ]  # fmt: skip
    for method, body, content_type in writes:
        applying = content_type.startswith("application/apply")
        query = "?fieldManager=test&force=true" if applying else ""
        code, answer = srv.request(method, path + query, body, content_type)
        assert (code, answer) == (409, refused), (method, content_type)
        assert srv.request("GET", path)[1] == cm  # same content, same resourceVersion
    # a dry run is refused as a real write would be
    code, answer = srv.request("PUT", path + "?dryRun=All", {**cm, "data": {"n": "6"}})
    assert (code, answer) == (409, refused)
    # a stale resourceVersion is the real conflict, and is not counted as injected
    code, answer = srv.request(
        "PUT", path, {**cm, "metadata": {**cm["metadata"], "resourceVersion": "1"}}
    )
    assert (code, answer) == (409, refused)
    assert injected(srv) == {"conflict": 6, "watch_end": 0, "watch_expired": 0, "slow": 0}


def test_writes_a_cluster_cannot_refuse_are_never_refused(make_server: Any) -> None:
    srv: Server = make_server("conflicts=1")
    assert srv.request("POST", f"{NS}/configmaps", configmap("c", n="0"))[0] == 201
    path = f"{NS}/configmaps/c"
    unconditional = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                     "data": {"n": "1"}}  # fmt: skip
    assert srv.request("PUT", path, unconditional)[0] == 200
    patches = [
        ({"data": {"n": "2"}}, "application/merge-patch+json", ""),
        ([{"op": "replace", "path": "/data/n", "value": "3"}], "application/json-patch+json", ""),
        (configmap("c", n="4"), "application/apply-patch+yaml", "?fieldManager=t&force=true"),
    ]
    for body, content_type, query in patches:
        assert srv.request("PATCH", path + query, body, content_type)[0] == 200, content_type
    assert srv.request("POST", f"{NS}/configmaps", configmap("d"))[0] == 201
    assert srv.request("DELETE", f"{NS}/configmaps/d")[0] == 200
    assert srv.request("GET", path)[1]["data"] == {"n": "4"}
    assert injected(srv)["conflict"] == 0


def test_subresource_writes_are_refused_as_their_objects(make_server: Any) -> None:
    srv: Server = make_server("conflicts=1")
    code, made = srv.request("POST", DEPLOYMENTS, deployment("web"))
    assert code == 201
    path = f"{DEPLOYMENTS}/web"
    refused = conflict_status("deployments", "web", "apps")
    status = {**made, "status": {"replicas": 1}}
    assert srv.request("PUT", f"{path}/status", status) == (409, refused)
    _, scale = srv.request("GET", f"{path}/scale")
    assert srv.request("PUT", f"{path}/scale", {**scale, "spec": {"replicas": 3}}) == (409, refused)
    assert srv.request("GET", path)[1] == made
    # a Scale without a resourceVersion is an unconditional write: never refused
    del scale["metadata"]["resourceVersion"]
    code, scaled = srv.request("PUT", f"{path}/scale", {**scale, "spec": {"replicas": 3}})
    assert (code, scaled["spec"]) == (200, {"replicas": 3})
    assert injected(srv)["conflict"] == 2


def watch(srv: Server, query: str) -> list[dict[str, Any]]:
    """A watch of the default namespace's ConfigMaps read until the server ends it."""
    req = urllib.request.Request(f"{srv.url}{NS}/configmaps?watch=true&timeoutSeconds=30&{query}")
    req.add_header("Authorization", f"Bearer {srv.token}")
    context = ssl.create_default_context(cafile=str(srv.data_dir / "ca.crt"))
    with urllib.request.urlopen(req, timeout=60, context=context) as resp:
        return [json.loads(line) for line in resp]


def test_a_watch_ends_after_an_event_cleanly_or_with_kubes_410(make_server: Any) -> None:
    srv: Server = make_server("watch-drops=1,seed=3")
    versions = []
    for i in range(12):
        code, cm = srv.request("POST", f"{NS}/configmaps", configmap(f"c{i}"))
        assert code == 201
        versions.append(int(cm["metadata"]["resourceVersion"]))
    ends = {"clean": 0, "expired": 0}
    for start, following in itertools.pairwise(versions):
        events = watch(srv, f"resourceVersion={start}")
        assert len(events) == 1  # each stream ends at its first event
        (event,) = events
        if event["type"] == "ADDED":  # sent, then the stream ended (resume from here)
            assert int(event["object"]["metadata"]["resourceVersion"]) == following
            ends["clean"] += 1
        else:  # the event's place taken by the 410 (list again)
            assert event == {"type": "ERROR", "object": {
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": f"too old resource version: {start} ({following})",
                "reason": "Expired", "code": 410}}  # fmt: skip
            ends["expired"] += 1
    assert ends["clean"] > 0
    assert ends["expired"] > 0
    counts = injected(srv)
    assert (counts["watch_end"], counts["watch_expired"]) == (ends["clean"], ends["expired"])


def test_initial_events_are_never_cut_short(make_server: Any) -> None:
    srv: Server = make_server("watch-drops=1")
    for i in range(3):
        assert srv.request("POST", f"{NS}/configmaps", configmap(f"c{i}"))[0] == 201
    # the current state (no resourceVersion, no bookmarks): never faulted
    names = {e["object"]["metadata"]["name"] for e in watch(srv, "timeoutSeconds=1")}
    assert {"c0", "c1", "c2"} <= names
    # watch-list: every initial event and the bookmark, then the first live event is faulted
    assert srv.request("POST", f"{NS}/configmaps", configmap("before"))[0] == 201
    reader, events = srv.watch_lines(
        f"{NS}/configmaps?watch=true&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        30,
    )
    deadline = time.monotonic() + 30
    while not any(e["type"] == "BOOKMARK" for e in events):
        assert time.monotonic() < deadline, events
        assert reader.is_alive(), events
        time.sleep(0.02)
    assert srv.request("POST", f"{NS}/configmaps", configmap("after"))[0] == 201
    reader.join(60)
    kinds = [e["type"] for e in events]
    assert kinds[-2:] in (["BOOKMARK", "ADDED"], ["BOOKMARK", "ERROR"]), kinds
    assert set(kinds[:-2]) == {"ADDED"}
    assert {"c0", "c1", "c2", "before"} <= {e["object"]["metadata"]["name"] for e in events[:-2]}
    if kinds[-1] == "ADDED":
        assert events[-1]["object"]["metadata"]["name"] == "after"
    assert sum(injected(srv)[k] for k in ("watch_end", "watch_expired")) == 1


def test_slowed_requests_wait_and_probes_do_not(make_server: Any) -> None:
    srv: Server = make_server("slow=1:300ms")
    assert injected(srv)["slow"] == 0  # /metrics is never slowed
    assert fetch(srv, "/readyz") == "ok"
    assert injected(srv)["slow"] == 0
    started = time.monotonic()
    assert srv.request("GET", f"{NS}/configmaps")[0] == 200
    assert time.monotonic() - started >= 0.3
    assert injected(srv)["slow"] == 1


def test_a_server_without_inject_has_no_fault_counters(make_server: Any) -> None:
    srv: Server = make_server(None)
    assert injected(srv) == {}
