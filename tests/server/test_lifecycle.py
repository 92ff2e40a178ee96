"""The server process: start-up, shutdown on SIGTERM with open watches, delete options."""

from __future__ import annotations

import signal
import ssl
import threading
import urllib.request
from pathlib import Path

from harness import Server, start_server, stop_server


def test_sigterm_ends_watches_and_exits_cleanly(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data")
    ended = threading.Event()
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    req = urllib.request.Request(f"{server.url}/api/v1/configmaps?watch=1")
    req.add_header("Authorization", f"Bearer {server.token}")

    def watch() -> None:
        with urllib.request.urlopen(req, context=context, timeout=60) as resp:
            resp.read()  # returns once the server ends the stream
        ended.set()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        server.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "a"}})
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=20) == 0
        assert ended.wait(10), "the watch stream was not ended by the shutdown"
    finally:
        stop_server(server)
    # The store was closed cleanly and reopens with the write in it.
    again = start_server(tmp_path / "data")
    try:
        code, got = again.request("GET", "/api/v1/namespaces/default/configmaps/a")
        assert code == 200
        assert got["metadata"]["name"] == "a"  # type: ignore[index]
    finally:
        stop_server(again)


def test_delete_answers_per_kind_and_validates_propagation(server: Server) -> None:
    svc = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    server.request("POST", "/api/v1/namespaces/default/services", svc)
    code, body = server.request("DELETE", "/api/v1/namespaces/default/services/s")
    assert (code, body["kind"]) == (200, "Service")
    server.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}})
    code, body = server.request(
        "DELETE", "/api/v1/namespaces/default/configmaps/c", {"propagationPolicy": "Sideways"}
    )
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
        '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"'
    )
    assert body["details"] == {
        "group": "meta.k8s.io",
        "kind": "DeleteOptions",
        "causes": [
            {
                "reason": "FieldValueNotSupported",
                "message": 'Unsupported value: "Sideways": supported values: "Foreground", '
                '"Background", "Orphan", "nil"',
                "field": "propagationPolicy",
            }
        ],
    }
    both = {"propagationPolicy": "Background", "orphanDependents": True}
    code, body = server.request("DELETE", "/api/v1/namespaces/default/configmaps/c", both)
    assert (code, body["message"]) == (
        422,
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
        '"Background": orphanDependents and deletionPropagation cannot be both set',
    )
    assert server.request("GET", "/api/v1/namespaces/default/configmaps/c")[0] == 200
