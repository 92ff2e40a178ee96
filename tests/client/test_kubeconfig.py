"""Kubeconfig files as real clusters ship them, generated here: tokens (inline and tokenFile),
client certificates (inline data and relative file paths), CA data, contexts, namespaces,
several files in KUBECONFIG; and a TLS server that demands the client certificate."""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubelite.client import Client, KubeconfigError, load_kubeconfig


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def issue(
    cn: str, issuer: tuple[x509.Certificate, Any] | None = None, server: bool = False
) -> tuple[x509.Certificate, Any]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(issuer[0].subject if issuer else _name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if server:
        san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        builder = builder.add_extension(san, critical=False)
    cert = builder.sign(issuer[1] if issuer else key, hashes.SHA256())
    return cert, key


def pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key: Any) -> bytes:
    return bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def pki() -> dict[str, Any]:
    ca = issue("test-ca")
    return {"ca": ca, "server": issue("server", ca, server=True), "client": issue("alice", ca)}


def config(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c1", "cluster": {"server": "https://127.0.0.1:6443/"}}],
        "users": [{"name": "u1", "user": {"token": "tok"}}],
        "contexts": [{"name": "ctx1", "context": {"cluster": "c1", "user": "u1"}}],
        "current-context": "ctx1",
    }
    base.update(overrides)
    return base


def test_token_user_current_context_and_default_namespace(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(config()))
    connection = load_kubeconfig(path)
    assert connection.server == "https://127.0.0.1:6443"
    assert connection.auth_headers() == {"Authorization": "Bearer tok"}
    assert connection.namespace == "default"


def test_named_context_namespace_token_file_and_basic_auth(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "token").write_text("from-file\n")
    cfg = config(
        users=[
            {"name": "u1", "user": {"tokenFile": "secrets/token"}},  # relative to the file
            {"name": "u2", "user": {"username": "bob", "password": "pw"}},
        ],
        contexts=[
            {"name": "ctx1", "context": {"cluster": "c1", "user": "u1", "namespace": "team"}},
            {"name": "ctx2", "context": {"cluster": "c1", "user": "u2"}},
        ],
    )
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(cfg))
    first = load_kubeconfig(path)
    assert first.token == "from-file"
    assert first.namespace == "team"
    second = load_kubeconfig(path, context="ctx2")
    assert second.auth_headers() == {"Authorization": "Basic " + b64(b"bob:pw")}


def test_several_files_in_kubeconfig_first_one_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = tmp_path / "one"
    two = tmp_path / "two"
    one.write_text(json.dumps(config(users=[{"name": "u1", "user": {"token": "first"}}])))
    cfg2 = config(
        users=[
            {"name": "u1", "user": {"token": "second"}},
            {"name": "u2", "user": {"token": "t2"}},
        ],
        contexts=[{"name": "ctx2", "context": {"cluster": "c1", "user": "u2"}}],
        **{"current-context": "ctx2"},
    )
    two.write_text(json.dumps(cfg2))
    monkeypatch.setenv("KUBECONFIG", f"{one}:{tmp_path / 'missing'}:{two}")
    connection = load_kubeconfig()
    assert connection.token == "first"  # current-context from the first file, u1 from it too
    assert load_kubeconfig(context="ctx2").token == "t2"


def test_clear_errors_for_what_we_cannot_use(tmp_path: Path) -> None:
    path = tmp_path / "config"
    provider = {"auth-provider": {"name": "gcp"}}
    path.write_text(yaml.safe_dump(config(users=[{"name": "u1", "user": provider}])))
    with pytest.raises(KubeconfigError, match="needs an auth-provider plugin"):
        load_kubeconfig(path)
    path.write_text(yaml.safe_dump(config(users=[{"name": "u1", "user": {"exec": {}}}])))
    with pytest.raises(KubeconfigError, match="exec plugin: invalid apiVersion ''"):
        load_kubeconfig(path)
    path.write_text(yaml.safe_dump(config(**{"current-context": ""})))
    with pytest.raises(KubeconfigError, match="no current-context"):
        load_kubeconfig(path)
    with pytest.raises(KubeconfigError, match="no context named 'nope'"):
        load_kubeconfig(path, context="nope")
    with pytest.raises(KubeconfigError, match="cannot read"):
        load_kubeconfig(tmp_path / "absent")


@pytest.fixture
def mtls_server(pki: dict[str, Any], tmp_path: Path) -> Iterator[str]:
    """An HTTPS server that requires a client certificate signed by the test CA and answers
    with the certificate's common name."""
    (tmp_path / "server.pem").write_bytes(pem(pki["server"][0]) + key_pem(pki["server"][1]))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "server.pem")
    context.load_verify_locations(cadata=pem(pki["ca"][0]).decode())
    context.verify_mode = ssl.CERT_REQUIRED

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            peer = self.connection.getpeercert()  # type: ignore[attr-defined]
            subject = dict(item[0] for item in peer["subject"])
            body = json.dumps({"user": subject["commonName"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("form", ["inline data", "relative files"])
def test_client_certificate_authenticates(
    form: str, pki: dict[str, Any], mtls_server: str, tmp_path: Path
) -> None:
    cert, key = pki["client"]
    if form == "inline data":
        cluster = {"server": mtls_server, "certificate-authority-data": b64(pem(pki["ca"][0]))}
        user = {"client-certificate-data": b64(pem(cert)), "client-key-data": b64(key_pem(key))}
    else:
        (tmp_path / "pki").mkdir()
        (tmp_path / "pki" / "ca.crt").write_bytes(pem(pki["ca"][0]))
        (tmp_path / "pki" / "alice.crt").write_bytes(pem(cert))
        (tmp_path / "pki" / "alice.key").write_bytes(key_pem(key))
        cluster = {"server": mtls_server, "certificate-authority": "pki/ca.crt"}
        user = {"client-certificate": "pki/alice.crt", "client-key": "pki/alice.key"}
    path = tmp_path / "config"
    path.write_text(
        yaml.safe_dump(
            config(
                clusters=[{"name": "c1", "cluster": cluster}],
                users=[{"name": "u1", "user": user}],
            )
        )
    )
    with Client.from_kubeconfig(path) as client:
        assert client.request("GET", "/whoami") == {"user": "alice"}


def test_without_the_cluster_ca_the_server_is_not_trusted(
    pki: dict[str, Any], mtls_server: str, tmp_path: Path
) -> None:
    cert, key = pki["client"]
    user = {"client-certificate-data": b64(pem(cert)), "client-key-data": b64(key_pem(key))}
    path = tmp_path / "config"
    path.write_text(
        yaml.safe_dump(
            config(
                clusters=[{"name": "c1", "cluster": {"server": mtls_server}}],
                users=[{"name": "u1", "user": user}],
            )
        )
    )
    with Client.from_kubeconfig(path) as client, pytest.raises(Exception, match="CERTIFICATE"):
        client.request("GET", "/whoami")
