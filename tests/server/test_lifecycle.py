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
    watching = threading.Event()
    ended = threading.Event()
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    req = urllib.request.Request(f"{server.url}/api/v1/configmaps?watch=1")
    req.add_header("Authorization", f"Bearer {server.token}")

    def watch() -> None:
        with urllib.request.urlopen(req, context=context, timeout=60) as resp:
            resp.readline()  # an initial event (the root CA ConfigMaps): the stream is open
            watching.set()
            resp.read()  # returns once the server ends the stream
        ended.set()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        server.request("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "a"}})
        assert watching.wait(30), "the watch never started"
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
    server.request("POST", "/api/v1/namespaces/{ns}/services", svc)
    code, body = server.request("DELETE", "/api/v1/namespaces/{ns}/services/s")
    assert (code, body["kind"]) == (200, "Service")
    server.request("POST", "/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "c"}})
    code, body = server.request(
        "DELETE", "/api/v1/namespaces/{ns}/configmaps/c", {"propagationPolicy": "Sideways"}
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
    code, body = server.request("DELETE", "/api/v1/namespaces/{ns}/configmaps/c", both)
    assert (code, body["message"]) == (
        422,
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
        '"Background": orphanDependents and deletionPropagation cannot be both set',
    )
    assert server.request("GET", "/api/v1/namespaces/{ns}/configmaps/c")[0] == 200


def test_sigterm_cuts_a_request_still_in_flight_after_the_drain_and_exits_cleanly(
    tmp_path: Path,
) -> None:
    """A request whose body never arrives holds a worker: after the drain time (10 s) it is
    cut, and the server still exits 0 with no traceback."""
    import socket
    import urllib.parse

    server = start_server(tmp_path / "data")
    url = urllib.parse.urlsplit(server.url)
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    raw = socket.create_connection((url.hostname or "", url.port or 0))
    stalled = context.wrap_socket(raw, server_hostname=url.hostname)
    try:
        stalled.sendall(
            b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: k\r\n"
            + f"Authorization: Bearer {server.token}\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        server.request("GET", "/version")  # the stalled request is being served by now
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=40) == 0
    finally:
        stalled.close()
        stop_server(server)
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log
    assert "cutting 1 requests still in flight after 10s" in log
    assert "kubelite stopped" in log
