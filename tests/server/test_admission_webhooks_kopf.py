"""kopf's admission handlers served to kubelite: ``kopf run`` with a validating and a mutating
handler, kopf's own webhook server (``kopf.WebhookServer`` on 127.0.0.1, its certificate made
here with ``cryptography``: issued by a CA, or self-signed as kopf's own development
certificates are) and the configurations kopf writes itself (``settings.admission.managed``).

kopf makes its self-signed certificate with ``certbuilder``/``oscrypto`` when given none;
oscrypto 1.3.0 cannot read this machine's OpenSSL version ("Error detecting the version of
libcrypto"), so the self-signed case here hands kopf an equivalent certificate instead."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Server
from webhookserver import make_certificates, make_self_signed

HERE = Path(__file__).parent
OPERATOR = HERE / "operators" / "admission_operator.py"
CRD_FILE = HERE / "data" / "widgets-crd.yaml"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
#: kopf writes webhook configurations of its own that match widgets in every namespace; a
#: server that calls webhooks runs in a process of its own (test_admission_webhooks.py says why)
pytestmark = pytest.mark.fresh_server(subprocess=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(params=["ca-issued", "self-signed"])
def kopf_operator(server: Server, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    server.kubectl("apply", "-f", str(CRD_FILE))
    server.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com")
    certs = tmp_path / "certs"
    if request.param == "ca-issued":
        make_certificates(certs, ["127.0.0.1", "localhost"])
    else:
        make_self_signed(certs, ["127.0.0.1", "localhost"])
    log = tmp_path / "kopf.log"
    env = {
        **os.environ,
        "KUBECONFIG": str(server.kubeconfig),
        "WEBHOOK_PORT": str(free_port()),
        "WEBHOOK_CERTS": str(certs),
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "--standalone", "-A", str(OPERATOR)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield log
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def widget(name: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size},
    }


def wait_for_configurations(server: Server, log: Path) -> None:
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        found = [
            server.request("GET", f"{ADMISSION}/{kind}/auto.kopf.dev")[0]
            for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations")
        ]
        if found == [200, 200]:
            return
        time.sleep(0.2)
    raise AssertionError(f"kopf wrote no configuration\n--- kopf log ---\n{log.read_text()}")


def test_kopf_validating_and_mutating_handlers(server: Server, kopf_operator: Path) -> None:
    wait_for_configurations(server, kopf_operator)
    code, body = server.request("GET", f"{ADMISSION}/validatingwebhookconfigurations/auto.kopf.dev")
    [hook] = body["webhooks"]
    assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:")
    assert hook["clientConfig"]["caBundle"]

    code, created = server.request("POST", WIDGETS, widget("w1", 3))
    assert code == 201, (created, kopf_operator.read_text())
    assert created["metadata"]["labels"] == {"checked-by": "kopf"}

    code, refused = server.request("POST", WIDGETS, widget("w7", 7))
    assert code == 422, refused
    assert refused["message"] == (
        f'admission webhook "{hook["name"]}" denied the request: seven is unlucky'
    )

    manifest = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  size: 2\n"
    result = server.kubectl("create", "-f", "-", input=manifest)
    assert "Warning: checked by kopf" in result.stderr
