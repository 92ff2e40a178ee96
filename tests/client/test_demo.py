"""``kubelite demo conflict`` on a live server: the narrated seed scenario and the crowd of
writers, checked in its output and in the object it leaves on the server."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

from harness import Server

from kubelite.client import Client


def demo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubelite", "demo", "conflict", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "120", **(env or {})},
    )


def test_demo_on_a_running_server(server: Server) -> None:
    result = demo("--kubeconfig", str(server.kubeconfig), "--writers", "16", "--updates", "4")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "409 Conflict" in out
    assert "the object has been modified" in out
    # the 409's causes name A's change, its field manager and the version A wrote
    assert (
        'the server says why: .spec.template.spec.containers[name="web"].image changed by '
        '"editor-a" at resourceVersion' in " ".join(out.split())
    )
    assert "both changes survived" in out
    assert "No update was lost." in out
    with Client.from_kubeconfig(server.kubeconfig) as client:
        deployment = client.get("apps/v1", "Deployment", "web-server")
    assert deployment["spec"]["replicas"] == 5  # B's change
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    annotations = deployment["metadata"]["annotations"]
    assert annotations["demo.kubelite.io/updates"] == str(16 * 4)
    assert all(annotations[f"demo.kubelite.io/writer-{i}"] == "4" for i in range(16))
    conflicts = next(line for line in out.splitlines() if "409 Conflicts seen" in line)
    assert int(conflicts.split("│")[2]) > 0


def test_demo_without_a_kubeconfig_starts_its_own_server_even_with_kubeconfig_set(
    server: Server,
) -> None:
    """KUBECONFIG naming a live server is ignored: only --kubeconfig points the demo at one."""
    result = demo("--writers", "4", "--updates", "2", env={"KUBECONFIG": str(server.kubeconfig)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Starting a throwaway kubelite server." in result.stdout
    assert "No update was lost." in result.stdout
    status, _ = server.request("GET", "/apis/apps/v1/namespaces/default/deployments/web-server")
    assert status == 404  # the server KUBECONFIG named was not touched


def test_demo_refuses_a_server_that_is_not_kubelite(tmp_path: Path) -> None:
    """A stand-in for a real cluster: an HTTP server answering /version as kube-apiserver does."""

    class Cluster(http.server.BaseHTTPRequestHandler):
        writes: ClassVar[list[str]] = []

        def do_GET(self) -> None:
            body = json.dumps({"major": "1", "minor": "37", "gitVersion": "v1.37.0"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            Cluster.writes.append(self.path)
            self.send_response(500)
            self.end_headers()

        do_PUT = do_PATCH = do_DELETE = do_POST

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Cluster)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    kubeconfig = tmp_path / "cluster.yaml"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "prod", "cluster": {"server": url}}],
                "users": [{"name": "me", "user": {"token": "t"}}],
                "contexts": [{"name": "prod", "context": {"cluster": "prod", "user": "me"}}],
                "current-context": "prod",
            }
        )
    )
    try:
        result = demo("--kubeconfig", str(kubeconfig))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"kubelite: {url} is not a kubelite server (version v1.37.0); the demo writes a "
        "Deployment, so it runs only on kubelite"
    )
    assert Cluster.writes == []
