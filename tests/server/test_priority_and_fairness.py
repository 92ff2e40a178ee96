"""API Priority and Fairness against a real ``kubelite serve`` (issue 26 §3, §4): one user's
stalled request bodies leave another user's writes served; the bootstrap FlowSchemas and
PriorityLevelConfigurations are served and kube's limits derived from them (600 seats, split
by shares); a FlowSchema and a level created over HTTP take effect, a Reject level refuses
beyond its seats with kube's 429 and the ``X-Kubernetes-PF-*`` headers; kube's validation; and
``--enable-priority-and-fairness=false``, the max-in-flight limits at kube's 400/200."""

from __future__ import annotations

import asyncio
import json
import ssl
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Server, start_server, stop_server
from test_metrics_endpoint import raw_request, scrape, value
from webhookserver import Reply, WebhookServer, review_answer, webhook_server

Obj = dict[str, Any]

CMS = "/api/v1/namespaces/default/configmaps"
FLOWCONTROL = "/apis/flowcontrol.apiserver.k8s.io/v1"
SCHEMAS = f"{FLOWCONTROL}/flowschemas"
LEVELS = f"{FLOWCONTROL}/prioritylevelconfigurations"
PL_HEADER = "x-kubernetes-pf-prioritylevel-uid"
FS_HEADER = "x-kubernetes-pf-flowschema-uid"
TOO_MANY = b"Too many requests, please try again later.\n"


def account(server: Server, name: str) -> str:
    """A ServiceAccount of ``default`` that may edit the namespace, and a token of it."""
    code, body = server.request("POST", "/api/v1/namespaces/default/serviceaccounts",
                                {"metadata": {"name": name}})  # fmt: skip
    assert code in (201, 409), body
    binding = {
        "metadata": {"name": f"{name}-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}],
    }
    path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
    code, body = server.request("POST", path, binding)
    assert code in (201, 409), body
    code, body = server.request(
        "POST", f"/api/v1/namespaces/default/serviceaccounts/{name}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )  # fmt: skip
    assert code == 201, body
    return str(body["status"]["token"])


def uid(server: Server, path: str) -> str:
    code, body = server.request("GET", path)
    assert code == 200, body
    return str(body["metadata"]["uid"])


def address(server: Server) -> tuple[str, int]:
    host, port = server.url.removeprefix("https://").rsplit(":", 1)
    return host.strip("[]"), int(port)


class Stalled:
    """A ConfigMap create whose chunked body starts and never ends; ``status`` is what the
    server answered it with, once it has."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.status: int | None = None
        self.task = asyncio.ensure_future(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        line = await reader.readline()
        if line:
            self.status = int(line.split(b" ", 2)[1])

    def close(self) -> None:
        """Cut the connection at once: a TLS close handshake still under way when the test's
        event loop ends leaves the transport to the garbage collector, whose ResourceWarning
        then fails whichever test runs it."""
        self.task.cancel()
        self.writer.transport.abort()


async def stall(server: Server, token: str) -> Stalled:
    host, port = address(server)
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    reader, writer = await asyncio.open_connection(host, port, ssl=context)
    writer.write(
        f"POST {CMS} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        '5\r\n{"met\r\n'.encode()
    )
    await writer.drain()
    return Stalled(reader, writer)


def create(server: Server, token: str, name: str, **meta: Any) -> tuple[int, dict[str, str]]:
    body = json.dumps({"metadata": {"name": name, **meta}}).encode()
    code, headers, _ = raw_request(server, "POST", CMS, body, token=token)
    return code, headers


async def test_one_user_stalling_request_bodies_does_not_starve_another(server: Server) -> None:
    """alice opens 400 creates whose bodies never come; bob's creates are all served. Before
    API Priority and Fairness her bodies held the 400 mutating slots of the max-in-flight limit
    for the request timeout, and bob got 429. Now a body that has not arrived holds a place in
    its flow's queues, not a seat: alice has 6 queues x 50 places (workload-low, her
    ServiceAccount's level), so 300 of her requests wait for their bodies and 100 are refused
    at once; bob's flow has places of its own and the seats are free."""
    alice, bob = account(server, "alice"), account(server, "bob")
    held = [await stall(server, alice) for _ in range(400)]
    try:
        # alice's dry-run creates (nothing stored) until hers are refused: her stalled requests
        # are then all in place (before: in the 400 mutating slots; now: in her 300 places)
        probe = json.dumps({"metadata": {"name": "probe"}}).encode()
        await asyncio.to_thread(
            wait_until,
            lambda: raw_request(server, "POST", f"{CMS}?dryRun=All", probe, token=alice)[0] == 429,
            "alice's stalled requests never filled her share",
        )
        for i in range(20):
            code, _ = await asyncio.to_thread(create, server, bob, f"bob-{i}")
            assert code == 201, f"bob's create {i} got {code}"
        code, headers = await asyncio.to_thread(create, server, alice, "alice-more")
        assert code == 429  # her places are all taken
        assert headers["retry-after"].isdigit()
        # 300 of hers hold their places; the other 100 were refused at once
        await asyncio.to_thread(
            wait_until,
            lambda: sum(h.status is not None for h in held) >= 100,
            "alice's excess requests were not refused",
        )
        assert [h.status for h in held if h.status is not None] == [429] * 100
    finally:
        for h in held:
            h.close()


def test_the_bootstrap_configuration_is_served_and_split_600_seats_by_shares(
    server: Server,
) -> None:
    code, levels = server.request("GET", LEVELS)
    assert code == 200
    names = sorted(item["metadata"]["name"] for item in levels["items"])
    assert names == ["catch-all", "event", "exempt", "global-default", "leader-election",
                     "node-high", "system", "workload-high", "workload-low"]  # fmt: skip
    code, schemas = server.request("GET", SCHEMAS)
    assert sorted(item["metadata"]["name"] for item in schemas["items"]) == [
        "catch-all", "endpoint-controller", "events", "exempt", "global-default",
        "kube-controller-manager", "kube-scheduler", "kube-system-service-accounts", "probes",
        "service-accounts", "system-leader-election", "system-node-high", "system-nodes",
        "workload-leader-election",
    ]  # fmt: skip
    code, global_default = server.request("GET", f"{LEVELS}/global-default")
    assert global_default["metadata"]["annotations"] == {
        "apf.kubernetes.io/autoupdate-spec": "true"
    }
    assert global_default["spec"] == {
        "type": "Limited",
        "limited": {
            "nominalConcurrencyShares": 10,
            "lendablePercent": 50,
            "limitResponse": {
                "type": "Queue",
                "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50},
            },
        },
    }
    # --max-requests-inflight 400 + --max-mutating-requests-inflight 200 = 600 seats, each
    # level's ceil(600 * shares / 250)
    samples = scrape(server)
    nominal = {
        s.labels["priority_level"]: s.value
        for s in samples
        if s.name == "apiserver_flowcontrol_nominal_limit_seats"
    }
    assert nominal == {
        "catch-all": 12, "event": 12, "exempt": 0, "global-default": 24,
        "leader-election": 120, "node-high": 144, "system": 96, "workload-high": 96,
        "workload-low": 96,
    }  # fmt: skip
    assert value(samples, "apiserver_flowcontrol_upper_limit_seats", priority_level="event") == 24
    assert value(samples, "apiserver_flowcontrol_lower_limit_seats", priority_level="system") == 48
    # every Dangling condition says the level exists
    deadline = time.monotonic() + 30
    while True:
        code, schemas = server.request("GET", SCHEMAS)
        conditions = [(item.get("status") or {}).get("conditions") for item in schemas["items"]]
        if all(c and c[0]["reason"] == "Found" for c in conditions):
            break
        assert time.monotonic() < deadline, conditions
        time.sleep(0.05)
    assert conditions[0][0]["type"] == "Dangling"
    assert conditions[0][0]["status"] == "False"


def test_responses_name_the_flow_schema_and_priority_level_by_uid(server: Server) -> None:
    """kube sets the UIDs (not the names) of the matched FlowSchema and level on every
    response: the admin is exempt, a ServiceAccount is in service-accounts / workload-low."""
    code, headers, _ = raw_request(server, "GET", CMS)
    assert code == 200
    assert headers[FS_HEADER] == uid(server, f"{SCHEMAS}/exempt")
    assert headers[PL_HEADER] == uid(server, f"{LEVELS}/exempt")
    token = account(server, "dora")
    code, headers, _ = raw_request(server, "GET", CMS, token=token)
    assert code == 200
    assert headers[FS_HEADER] == uid(server, f"{SCHEMAS}/service-accounts")
    assert headers[PL_HEADER] == uid(server, f"{LEVELS}/workload-low")
    code, headers, _ = raw_request(server, "GET", "/api/v1/namespaces/kube-system/secrets",
                                   token=token)  # fmt: skip
    assert code == 403  # refused by authorization, after priority and fairness
    assert headers[FS_HEADER] == uid(server, f"{SCHEMAS}/service-accounts")


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[WebhookServer]:
    with webhook_server(tmp_path / "webhook") as srv:
        yield srv


def open_watch(server: Server, token: str) -> tuple[int, Any]:
    """A watch whose stream has begun (its head read), left open."""
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    req = urllib.request.Request(f"{server.url}{CMS}?watch=1&timeoutSeconds=60")
    req.add_header("Authorization", f"Bearer {token}")
    response = urllib.request.urlopen(req, context=context, timeout=30)
    return response.status, response


def wait_until(check: Any, what: str) -> Any:
    deadline = time.monotonic() + 30  # a hang guard, not a timing assertion
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_level_and_schema_created_take_effect_and_reject_beyond_their_seats(
    server: Server, hooks: WebhookServer
) -> None:
    """A Reject level of one share (ceil(600 * 1 / 251) = 3 seats, neither lent nor borrowed)
    and a FlowSchema sending carol's requests to it: carol's fourth request while three hold
    their seats (in a webhook that waits) is refused at once with kube's 429; a change of shares
    changes the seats; deleting the schema sends her back to service-accounts."""
    carol = account(server, "carol")
    level = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "tiny"},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 0,
            "limitResponse": {"type": "Reject"}}},
    }  # fmt: skip
    code, body = server.request("POST", LEVELS, level)
    assert code == 201, body
    schema = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": "carol"},
        "spec": {
            "priorityLevelConfiguration": {"name": "tiny"},
            "matchingPrecedence": 100,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{
                "subjects": [{"kind": "ServiceAccount",
                              "serviceAccount": {"namespace": "default", "name": "carol"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                   "namespaces": ["*"], "clusterScope": True}],
            }],
        },
    }  # fmt: skip
    code, body = server.request("POST", SCHEMAS, schema)
    assert code == 201, body
    schema_uid, level_uid = body["metadata"]["uid"], uid(server, f"{LEVELS}/tiny")

    def carols() -> bool:
        _, headers, _ = raw_request(server, "GET", CMS, token=carol)
        return headers.get(FS_HEADER) == schema_uid

    wait_until(carols, "carol's requests never matched her FlowSchema")
    samples = scrape(server)
    assert value(samples, "apiserver_flowcontrol_nominal_limit_seats", priority_level="tiny") == 3

    # a watch holds its seat only until its stream begins: five of them, more than the level's
    # seats, all stream, and carol's next request is served
    watches = [open_watch(server, carol) for _ in range(5)]
    try:
        assert [status for status, _ in watches] == [200] * 5
        assert raw_request(server, "GET", CMS, token=carol)[0] == 200
    finally:
        for _, response in watches:
            response.close()

    release = threading.Event()

    def hold(review: Obj, query: dict[str, str]) -> Reply:
        release.wait(30)
        return review_answer(review)

    hooks.handlers["/hold"] = hold
    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "hold"},
        "webhooks": [{
            "name": "hold.example.com", "clientConfig": hooks.url_config("/hold"),
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "objectSelector": {"matchLabels": {"hold": "yes"}},
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 30,
        }],
    }  # fmt: skip
    code, body = server.request(
        "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", config
    )
    assert code == 201, body
    results: list[int] = []
    threads = [
        threading.Thread(target=lambda i=i: results.append(
            create(server, carol, f"held-{i}", labels={"hold": "yes"})[0]))
        for i in range(3)
    ]  # fmt: skip
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: len(hooks.calls_to("/hold")) == 3, "the held creates never arrived")
        code, headers, body = raw_request(server, "GET", CMS, token=carol)
        assert code == 429
        assert body == TOO_MANY
        assert headers["content-type"] == "text/plain; charset=utf-8"
        assert headers["retry-after"] == "1"
        assert (headers[FS_HEADER], headers[PL_HEADER]) == (schema_uid, level_uid)
        assert raw_request(server, "GET", CMS)[0] == 200  # the admin is exempt
    finally:
        release.set()
        for thread in threads:
            thread.join(30)
    assert results == [201, 201, 201]
    rejected = value(
        scrape(server),
        "apiserver_flowcontrol_rejected_requests_total",
        priority_level="tiny",
        flow_schema="carol",
        reason="concurrency-limit",
    )
    assert rejected == 1  # fmt: skip

    patch = json.dumps({"spec": {"limited": {"nominalConcurrencyShares": 2}}}).encode()
    code, _, _ = raw_request(server, "PATCH", f"{LEVELS}/tiny", patch,
                             "application/merge-patch+json")  # fmt: skip
    assert code == 200
    wait_until(
        lambda: value(scrape(server), "apiserver_flowcontrol_nominal_limit_seats",
                      priority_level="tiny") == 5,  # ceil(600 * 2 / 252)
        "the new shares never took effect",
    )  # fmt: skip
    assert server.request("DELETE", f"{SCHEMAS}/carol")[0] == 200
    service_accounts = uid(server, f"{SCHEMAS}/service-accounts")
    wait_until(
        lambda: raw_request(server, "GET", CMS, token=carol)[1].get(FS_HEADER) == service_accounts,
        "carol never went back to service-accounts",
    )


def test_kubes_validation_of_flow_schemas_and_levels(server: Server) -> None:
    schema = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": "bad"},
        "spec": {
            "priorityLevelConfiguration": {"name": ""},
            "matchingPrecedence": 1,
            "rules": [{"subjects": [], "resourceRules": [
                {"verbs": ["get", "*"], "apiGroups": [], "resources": ["pods"]}]}],
        },
    }  # fmt: skip
    code, body = server.request("POST", SCHEMAS, schema)
    assert code == 422, body
    assert body["message"] == (
        'FlowSchema.flowcontrol.apiserver.k8s.io "bad" is invalid: ['
        "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have "
        "matchingPrecedence 1, "
        "spec.priorityLevelConfiguration.name: Required value: must reference a priority level, "
        "spec.rules[0].subjects: Required value: subjects must contain at least one value, "
        'spec.rules[0].resourceRules[0].verbs: Invalid value: ["get","*"]: if \'*\' is present, '
        "must not specify other verbs, "
        "spec.rules[0].resourceRules[0].apiGroups: Required value: resource rules must supply at "
        "least one api group, "
        "spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not "
        "cluster scoped must supply at least one namespace]"
    )
    level = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "bad"},
        "spec": {"type": "Limited", "limited": {
            "lendablePercent": 101,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 8, "handSize": 9}}}},
    }  # fmt: skip
    code, body = server.request("POST", LEVELS, level)
    assert code == 422, body
    assert body["message"] == (
        'PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io "bad" is invalid: ['
        "spec.limited.limitResponse.queuing.handSize: Invalid value: 9: should not be greater "
        "than queues (8), "
        "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive]"
    )
    code, body = server.request("GET", f"{LEVELS}/catch-all")
    body["spec"]["limited"]["nominalConcurrencyShares"] = 50
    code, body = server.request("PUT", f"{LEVELS}/catch-all", body)
    assert code == 422
    assert body["details"]["causes"][-1]["message"].endswith(
        "spec of 'catch-all' must equal the fixed value"
    )


def test_a_changed_or_deleted_bootstrap_object_is_put_back_at_start(tmp_path: Path) -> None:
    """The config producer: a suggested object annotated autoupdate true is put back (spec and
    all), one annotated false is left alone, a deleted one is made again."""
    data = tmp_path / "data"
    first = start_server(data)
    try:
        level = first.request("GET", f"{LEVELS}/workload-low")[1]
        level["spec"]["limited"]["nominalConcurrencyShares"] = 7
        assert first.request("PUT", f"{LEVELS}/workload-low", level)[0] == 200
        level = first.request("GET", f"{LEVELS}/global-default")[1]
        level["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] = "false"
        level["spec"]["limited"]["nominalConcurrencyShares"] = 7
        assert first.request("PUT", f"{LEVELS}/global-default", level)[0] == 200
        assert first.request("DELETE", f"{SCHEMAS}/probes")[0] == 200
    finally:
        stop_server(first)
    second = start_server(data)
    try:
        level = second.request("GET", f"{LEVELS}/workload-low")[1]
        assert level["spec"]["limited"]["nominalConcurrencyShares"] == 40
        level = second.request("GET", f"{LEVELS}/global-default")[1]
        assert level["spec"]["limited"]["nominalConcurrencyShares"] == 7
        assert second.request("GET", f"{SCHEMAS}/probes")[0] == 200
    finally:
        stop_server(second)


def test_smaller_limits_shrink_every_level(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data", None, "--max-requests-inflight", "40",
                          "--max-mutating-requests-inflight", "20")  # fmt: skip
    try:
        samples = scrape(server)
        nominal = {
            s.labels["priority_level"]: s.value
            for s in samples
            if s.name == "apiserver_flowcontrol_nominal_limit_seats"
        }
        assert nominal["global-default"] == 3  # ceil(60 * 10 / 250)
        assert nominal["workload-low"] == 10  # ceil(60 * 40 / 250)
    finally:
        stop_server(server)


async def test_without_priority_and_fairness_the_max_in_flight_limits_are_kubes(
    tmp_path: Path,
) -> None:
    """``--enable-priority-and-fairness=false``: kube's max-in-flight filter at its defaults,
    200 mutating requests (bodies read by the handler, so a stalled one holds its slot) and
    400 read-only ones; system:masters is served over the limit."""
    server = start_server(tmp_path / "data", None, "--enable-priority-and-fairness=false")
    try:
        erin = account(server, "erin")
        held = [await stall(server, erin) for _ in range(200)]
        try:
            # dry-run creates (nothing stored) until the stalled requests hold every slot
            probe = json.dumps({"metadata": {"name": "probe"}}).encode()
            await asyncio.to_thread(
                wait_until,
                lambda: (
                    raw_request(server, "POST", f"{CMS}?dryRun=All", probe, token=erin)[0] == 429
                ),
                "the stalled requests never took the 200 mutating slots",
            )
            code, headers = await asyncio.to_thread(create, server, erin, "one-too-many")
            assert code == 429
            assert headers["retry-after"] == "1"
            assert FS_HEADER not in headers
            assert (await asyncio.to_thread(raw_request, server, "GET", CMS, None,
                                            "application/json", erin))[0] == 200  # fmt: skip
            code, _, _ = await asyncio.to_thread(
                raw_request, server, "POST", CMS, b'{"metadata": {"name": "by-admin"}}'
            )
            assert code == 201
            assert all(h.status is None for h in held)  # each still holds its slot
        finally:
            for h in held:
                h.close()
    finally:
        stop_server(server)
