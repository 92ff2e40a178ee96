"""Logs: the request line (kube's httplog fields) at ``--log-level debug`` in text and JSON, no
Secret value or bearer token in them ever, and an internal error logged once with its
request."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from harness import start_server, stop_server
from test_filters import TOKEN, call
from test_metrics_endpoint import raw_request

from kubelite.server import discovery
from kubelite.server.app import KubeliteApp
from kubelite.server.assembly import Assembly, running
from kubelite.storage import StoreOptions

SECRETS = "/api/v1/namespaces/default/secrets"
PLAIN = "hunter2-plain-value-7f3a"
ENCODED_ONLY = "ZW5jb2RlZC1vbmx5LXZhbHVlLTljMmU="  # "encoded-only-value-9c2e"


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_request_lines_and_no_secrets(tmp_path: Path, fmt: str) -> None:
    server = start_server(tmp_path / "data", None, "--log-level", "debug", "--log-format", fmt)
    try:
        secret = {
            "metadata": {"name": "s"},
            "stringData": {"password": PLAIN},
            "data": {"other": ENCODED_ONLY},
        }
        raw = json.dumps(secret).encode()
        code, headers, _ = raw_request(server, "POST", SECRETS, raw)
        assert code == 201
        audit_id = headers["audit-id"]
        assert server.request("GET", f"{SECRETS}/s")[0] == 200
        assert server.request("GET", SECRETS + "?limit=5")[0] == 200
        bad = {**secret, "metadata": {"name": "Bad_Name"}}
        assert server.request("POST", SECRETS, bad)[0] == 422
    finally:
        stop_server(server)
    text = (tmp_path / "server.log").read_text()
    for value in (
        PLAIN,
        base64.b64encode(PLAIN.encode()).decode(),
        ENCODED_ONLY,
        base64.b64decode(ENCODED_ONLY).decode(),
        server.token,
    ):
        assert value not in text
    if fmt == "json":
        records = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        lines = [r for r in records if r["msg"] == "HTTP"]
        (created,) = [r for r in lines if r["audit-ID"] == audit_id]
        assert created["level"] == "debug"
        assert (created["verb"], created["URI"], created["resp"]) == ("POST", SECRETS, 201)
        assert created["srcIP"].startswith("127.0.0.1:")
        assert created["latency"].endswith(("ms", "µs", "s"))
        assert created["userAgent"].startswith("Python-urllib")
        listed = [r for r in lines if r["verb"] == "LIST"]
        assert listed[0]["URI"] == SECRETS + "?limit=5"
    else:
        (created,) = [line for line in text.splitlines() if f'audit-ID="{audit_id}"' in line]
        assert " DEBUG kubelite.httplog: HTTP " in created
        assert f'verb="POST" URI="{SECRETS}" latency="' in created
        assert created.endswith(" resp=201")


def test_the_default_level_has_no_request_lines(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    try:
        assert server.request("GET", SECRETS)[0] == 200
    finally:
        stop_server(server)
    assert "HTTP" not in (tmp_path / "server.log").read_text()


@pytest.fixture
async def assembly() -> AsyncIterator[Assembly]:
    async with running("sqlite://", StoreOptions(compaction_interval_seconds=0), token=TOKEN) as s:
        yield s


async def test_an_internal_error_is_logged_once_with_its_request(
    assembly: Assembly, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> dict[str, str]:
        raise RuntimeError("version table exploded")

    monkeypatch.setattr(discovery, "version", broken)
    app = KubeliteApp(assembly.registry, assembly.catalogue, assembly.authenticator)
    with caplog.at_level(logging.DEBUG):
        code, body = await call(app, "GET", "/version")
    assert code == 500
    assert body["message"] == "Internal error occurred: version table exploded"
    mentioning = [
        r
        for r in caplog.records
        if "exploded" in r.getMessage()
        or (r.exc_info is not None and "exploded" in str(r.exc_info[1]))
    ]
    assert len(mentioning) == 1
    (record,) = mentioning
    assert record.levelno == logging.ERROR
    assert record.getMessage() == "Internal error serving GET /version"
    assert record.kv["audit-ID"]  # type: ignore[attr-defined]
    assert record.kv["user"] == "kubelite-admin"  # type: ignore[attr-defined]
