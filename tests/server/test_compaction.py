"""Forced compaction: after it, watches and exact lists below the revision get the 410s."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import urllib.request

import pytest
from harness import Server

CM = "/api/v1/namespaces/default/configmaps"


def watch_lines(server: Server, query: str) -> list[dict[str, object]]:
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    req = urllib.request.Request(f"{server.url}{CM}?watch=1&timeoutSeconds=1&{query}")
    req.add_header("Authorization", f"Bearer {server.token}")
    with urllib.request.urlopen(req, context=context, timeout=30) as resp:
        assert resp.status == 200
        return [json.loads(line) for line in resp.read().splitlines() if line.strip()]


def kubelite_compact(server: Server, revision: int) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kubelite", "compact"]
    command += ["--kubeconfig", str(server.kubeconfig), "--revision", str(revision)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@pytest.mark.fresh_server  # it compacts the store
def test_kubelite_compact_then_old_watches_and_lists_expire(server: Server) -> None:
    _, created = server.request("POST", CM, {"metadata": {"name": "c"}, "data": {"v": "0"}})
    first = int(created["metadata"]["resourceVersion"])  # type: ignore[index]
    obj = created
    for i in range(1, 4):
        obj = {**obj, "data": {"v": str(i)}}
        _, obj = server.request("PUT", CM + "/c", obj)
    last = int(obj["metadata"]["resourceVersion"])  # type: ignore[index]

    # Before compaction, a watch from the first revision replays the three updates.
    events = watch_lines(server, f"resourceVersion={first}")
    assert [e["type"] for e in events] == ["MODIFIED"] * 3

    result = kubelite_compact(server, last)
    assert result.returncode == 0, result.stderr
    assert f"history compacted up to revision {last}" in result.stdout

    events = watch_lines(server, f"resourceVersion={first}")
    assert events == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"too old resource version: {first} ({last})",
                "reason": "Expired",
                "code": 410,
            },
        }
    ]
    code, body = server.request("GET", f"{CM}?resourceVersion={first}&resourceVersionMatch=Exact")
    assert (code, body["reason"]) == (410, "Expired")
    assert body["message"] == "The resourceVersion for the provided list is too old."
    # Watching from the compacted revision itself still works (it asks for events after it).
    assert watch_lines(server, f"resourceVersion={last}") == []

    again = kubelite_compact(server, last)
    assert again.returncode == 1
    assert "already compacted" in again.stderr
