"""kopf operators against kubelite: ``kopf run --standalone -A`` with create, update and delete
handlers, status patches and kopf's finalizer, with the CRD made before and after kopf starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Server

HERE = Path(__file__).parent
OPERATOR = HERE / "operators" / "widget_operator.py"
CRD_FILE = HERE / "data" / "widgets-crd.yaml"
WIDGETS = "/apis/example.com/v1/namespaces/{ns}/widgets"
FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"


@pytest.fixture
def kopf_run(server: Server, tmp_path: Path) -> Iterator[Callable[[], Path]]:
    """Start ``kopf run --standalone -A`` on demand; stopped (SIGTERM) at teardown."""
    procs: list[subprocess.Popen[bytes]] = []
    log = tmp_path / "kopf.log"

    def start() -> Path:
        env = {**os.environ, "KUBECONFIG": str(server.kubeconfig)}
        with log.open("wb") as out:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "kopf", "run", "--standalone", "-A", str(OPERATOR)],
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
        return log

    yield start
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_for(
    what: str, probe: Callable[[], Any], log: Path | None = None, timeout: float = 45.0
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.2)
    shown = log.read_text()[-4000:] if log is not None and log.exists() else ""
    raise AssertionError(f"timed out waiting for {what}\n--- kopf log ---\n{shown}")


def widget(server: Server, name: str) -> dict[str, Any] | None:
    code, body = server.request("GET", f"{WIDGETS}/{name}")
    return body if code == 200 and isinstance(body, dict) else None


def exercise(server: Server, log: Path) -> None:
    manifest = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  size: 3\n"
    server.kubectl("create", "-f", "-", input=manifest)

    def handled_create() -> dict[str, Any] | None:
        obj = widget(server, "w1")
        status = (obj or {}).get("status") or {}
        return obj if status.get("phase") == "Created" and "created" in status else None

    obj = wait_for("the create handler's status", handled_create, log)
    assert obj["status"]["created"] == {"size": 3}
    assert FINALIZER in obj["metadata"]["finalizers"]
    assert "kopf.zalando.org/last-handled-configuration" in obj["metadata"]["annotations"]

    server.kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":5}}')

    def handled_update() -> dict[str, Any] | None:
        obj = widget(server, "w1")
        status = (obj or {}).get("status") or {}
        return obj if status.get("phase") == "Updated" and status.get("size") == 5 else None

    obj = wait_for("the update handler's status", handled_update, log)
    assert obj["status"]["updates"] == 1
    assert obj["spec"]["size"] == 5

    server.kubectl("delete", "widget", "w1", "--wait=false")
    wait_for(
        "the object to be deleted through kopf's finalizer", lambda: not widget(server, "w1"), log
    )
    assert "deleting widget w1" in log.read_text()


def test_kopf_operator_with_the_crd_present(server: Server, kopf_run: Callable[[], Path]) -> None:
    server.kubectl("apply", "-f", str(CRD_FILE))
    server.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com")
    log = kopf_run()
    exercise(server, log)


def test_kopf_operator_with_the_crd_created_after_it_started(
    server: Server, kopf_run: Callable[[], Path]
) -> None:
    log = kopf_run()
    wait_for("kopf to start watching CRDs", lambda: "Unresolved resources" in log.read_text(), log)
    server.kubectl("apply", "-f", str(CRD_FILE))
    exercise(server, log)
