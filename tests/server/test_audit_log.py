"""The audit log of a real ``kubelite serve --audit-policy-file --audit-log-path``: kube's
``audit.k8s.io/v1`` Events, one a line, at the level and stages the policy gives each request,
with the ``Audit-Id`` each response carries."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Server, start_in_process, start_server, stop_server
from test_metrics_endpoint import raw_request

CMS = "/api/v1/namespaces/default/configmaps"
POLICY = """
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: None
  users: ["someone-else"]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
  omitStages: [ResponseStarted]
- level: Request
  verbs: ["create"]
  resources: [{group: "", resources: ["secrets"], resourceNames: []}]
- level: Metadata
"""
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.fixture
def audited(tmp_path: Path, storage_url: str | None) -> Iterator[tuple[Server, Path]]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    log = tmp_path / "audit.log"
    srv = start_in_process(
        tmp_path / "data", storage_url, audit_policy_file=str(policy), audit_log_path=str(log)
    )
    try:
        yield srv, log
    finally:
        stop_server(srv)


def events(log: Path) -> list[dict[str, Any]]:
    complete = log.read_text().split("\n")[:-1]  # the server may be writing the last line
    return [json.loads(line) for line in complete]


def events_of(log: Path, audit_id: str) -> list[dict[str, Any]]:
    """The request's events once its ResponseComplete is written (just after the response)."""
    deadline = time.monotonic() + 10
    while True:
        found = [e for e in events(log) if e["auditID"] == audit_id]
        if any(e["stage"] == "ResponseComplete" for e in found) or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def test_levels_stages_and_the_audit_id(audited: tuple[Server, Path]) -> None:
    server, log = audited
    body = b'{"metadata": {"name": "a"}, "data": {"k": "v"}}'
    code, headers, _ = raw_request(server, "POST", CMS, body)
    assert code == 201
    created = events_of(log, headers["audit-id"])
    assert [e["stage"] for e in created] == ["ResponseComplete"]  # RequestReceived omitted
    event = created[0]
    assert list(event)[:9] == [
        "kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user",
        "sourceIPs",
    ]  # fmt: skip
    assert (event["kind"], event["apiVersion"]) == ("Event", "audit.k8s.io/v1")
    assert (event["level"], event["verb"], event["requestURI"]) == (
        "RequestResponse",
        "create",
        CMS,
    )
    assert event["user"]["username"] == "kubelite-admin"
    assert event["sourceIPs"] == ["127.0.0.1"]
    assert event["objectRef"] == {
        "resource": "configmaps",
        "namespace": "default",
        "apiVersion": "v1",
    }
    assert event["responseStatus"] == {"metadata": {}, "code": 201}
    assert event["requestObject"]["data"] == {"k": "v"}
    assert event["responseObject"]["metadata"]["uid"]
    assert MICRO_TIME.match(event["requestReceivedTimestamp"])
    assert MICRO_TIME.match(event["stageTimestamp"])

    # an error at Metadata level: the Status's bounded fields, no bodies
    code, headers, _ = raw_request(server, "GET", "/api/v1/namespaces/default/pods/nope")
    assert code == 404
    (missing,) = events_of(log, headers["audit-id"])
    assert missing["level"] == "Metadata"
    assert missing["responseStatus"]["reason"] == "NotFound"
    assert missing["responseStatus"]["code"] == 404
    assert "requestObject" not in missing
    assert "responseObject" not in missing

    # Request level keeps the request body only
    secret = b'{"metadata": {"name": "s"}, "stringData": {"p": "q"}}'
    code, headers, _ = raw_request(server, "POST", "/api/v1/namespaces/default/secrets", secret)
    assert code == 201
    (made,) = events_of(log, headers["audit-id"])
    assert made["level"] == "Request"
    assert "responseObject" not in made
    assert made["requestObject"]["stringData"] == {"p": "q"}

    # level None: nothing
    before = len(events(log))
    assert raw_request(server, "GET", "/healthz", token=None)[0] == 200
    assert server.request("GET", "/version")[0] == 200
    assert len(events(log)) == before


def test_a_watch_has_response_started_unless_omitted(audited: tuple[Server, Path]) -> None:
    server, log = audited
    reader, _ = server.watch_lines("/api/v1/namespaces/default/pods?watch=true", seconds=1)
    reader.join()
    reader, _ = server.watch_lines(f"{CMS}?watch=true", seconds=1)
    reader.join()
    pods = [e for e in events(log) if e.get("objectRef", {}).get("resource") == "pods"]
    assert [(e["stage"], e["verb"]) for e in pods] == [
        ("ResponseStarted", "watch"),
        ("ResponseComplete", "watch"),
    ]
    assert pods[0]["responseStatus"] == {"metadata": {}, "code": 200}
    assert pods[0]["auditID"] == pods[1]["auditID"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        cms = [e for e in events(log) if e.get("objectRef", {}).get("resource") == "configmaps"]
        if cms:
            break
        time.sleep(0.02)
    assert [e["stage"] for e in cms] == ["ResponseComplete"]  # the rule omits ResponseStarted


def test_every_response_carries_an_audit_id(server: Server) -> None:
    # the shared server has no audit policy: the ID is still returned
    code, headers, _ = raw_request(server, "GET", "/version", token="wrong")
    assert code == 401
    assert re.fullmatch(r"[0-9a-f-]{36}", headers["audit-id"])


def test_a_timed_out_request_completes_its_audit_record(tmp_path: Path) -> None:
    """The request timeout cancels the request: its ResponseComplete still says 504."""
    import socket
    import ssl
    import urllib.parse

    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    log = tmp_path / "audit.log"
    srv = start_server(
        tmp_path / "data",
        None,
        "--audit-policy-file",
        str(policy),
        "--audit-log-path",
        str(log),
        "--request-timeout",
        "1s",
    )
    try:
        url = urllib.parse.urlsplit(srv.url)
        context = ssl.create_default_context(cafile=str(srv.data_dir / "ca.crt"))
        raw = socket.create_connection((url.hostname or "", url.port or 0))
        with context.wrap_socket(raw, server_hostname=url.hostname) as stalled:
            stalled.sendall(
                f"POST {CMS} HTTP/1.1\r\nHost: k\r\nAuthorization: Bearer {srv.token}\r\n".encode()
                + b"Audit-ID: stalled-1\r\nContent-Type: application/json\r\n"
                + b"Content-Length: 100\r\n\r\n{"
            )
            answer = stalled.recv(4096)
        assert answer.startswith(b"HTTP/1.1 504")
        found = events_of(log, "stalled-1")
        complete = [e for e in found if e["stage"] == "ResponseComplete"]
        assert len(complete) == 1, found
        assert complete[0]["responseStatus"]["code"] == 504
    finally:
        stop_server(srv)
