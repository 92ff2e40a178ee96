"""``kubelite demo conflict`` on a live server: the narrated seed scenario and the crowd of
writers, checked in its output and in the object it leaves on the server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_demo_without_a_kubeconfig_starts_its_own_server(tmp_path: Path) -> None:
    result = demo("--writers", "4", "--updates", "2", env={"KUBECONFIG": str(tmp_path / "none")})
    assert result.returncode == 0, result.stdout + result.stderr
    assert "starting a throwaway kubelite server" in result.stdout
    assert "No update was lost." in result.stdout
