"""x509 client certificates on a real ``kubelite serve``: the users ``kubelite kubeconfig``
writes, who they are (``kubectl auth whoami``, SelfSubjectReview), RBAC deciding for them, and
the certificates the server refuses (k8s.io/apiserver ``pkg/authentication/request/x509``)."""

from __future__ import annotations

import datetime
import hashlib
import socket
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from harness import Server
from webhookserver import write_pair

from kubelite.server.tls import ensure_ca

CMS = "/api/v1/namespaces/default/configmaps"
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


def whoami(server: Server, cert: tuple[Path, Path] | None, token: str | None = None) -> object:
    code, body = server.request("POST", WHOAMI, REVIEW, token=token, cert=cert)
    assert code == 201, body
    return body["status"]["userInfo"]  # type: ignore[index]


def hand_made(
    server: Server,
    subject: list[x509.NameAttribute],
    *,
    signer: str = "ca",
    expired: bool = False,
) -> tuple[Path, Path]:
    """A client certificate made here: signed by the server's CA (``signer="ca"``) or by its own
    key (``"self"``), current or expired."""
    key = ec.generate_private_key(ec.SECP256R1())
    if signer == "ca":
        ca_cert, ca_key = ensure_ca(server.data_dir)
        issuer, signing_key = ca_cert.subject, ca_key
    else:
        issuer, signing_key = x509.Name(subject), key
    now = datetime.datetime.now(datetime.UTC)
    end = now - datetime.timedelta(minutes=1) if expired else now + datetime.timedelta(hours=1)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(end)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)
        .sign(signing_key, hashes.SHA256())
    )
    stem = server.data_dir.parent / f"hand-{signer}-{len(list(server.data_dir.parent.iterdir()))}"
    paths = (stem.with_suffix(".crt"), stem.with_suffix(".key"))
    write_pair(cert, key, *paths)
    return paths


def test_a_kubeconfig_user_is_its_cn_and_groups_with_kubes_credential_id(server: Server) -> None:
    alice = server.user_certificate("alice", "devs", "ops")
    der = x509.load_pem_x509_certificate(alice[0].read_bytes()).public_bytes(
        serialization.Encoding.DER
    )
    assert whoami(server, alice) == {
        "username": "alice",
        "groups": ["devs", "ops", "system:authenticated"],
        "extra": {
            "authentication.kubernetes.io/credential-id": [
                f"X509SHA256={hashlib.sha256(der).hexdigest()}"
            ]
        },
    }
    kubeconfig = str(server.data_dir.parent / "alice.kubeconfig")
    out = server.kubectl("auth", "whoami", "-o", "json", env={"KUBECONFIG": kubeconfig})
    assert '"username": "alice"' in out.stdout
    assert '"devs"' in out.stdout


def test_rbac_decides_for_a_certificate_user_with_kubes_texts(server: Server) -> None:
    bob = server.user_certificate("bob")
    env = {"KUBECONFIG": str(server.data_dir.parent / "bob.kubeconfig")}
    refused = server.kubectl("get", "configmaps", check=False, env=env)
    assert refused.returncode == 1
    assert (
        'Error from server (Forbidden): configmaps is forbidden: User "bob" cannot list '
        'resource "configmaps" in API group "" in the namespace "default"'
    ) in refused.stderr
    assert server.kubectl("auth", "can-i", "list", "configmaps", check=False, env=env).stdout == (
        "no\n"
    )
    server.kubectl("create", "rolebinding", "bob-view", "--clusterrole=view", "--user=bob")
    listed = server.kubectl("get", "configmaps", "-o", "name", env=env)
    assert "configmap/kube-root-ca.crt" in listed.stdout
    assert server.kubectl("auth", "can-i", "list", "configmaps", env=env).stdout == "yes\n"
    assert server.request("POST", CMS, {"metadata": {"name": "x"}}, cert=bob)[0] == 403


def test_a_certificate_without_a_cn_falls_through_to_the_token_or_anonymous(
    server: Server,
) -> None:
    nameless = hand_made(server, [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters")])
    assert whoami(server, nameless, token=server.token)["username"] == "kubelite-admin"  # type: ignore[index]
    code, body = server.request("GET", CMS, cert=nameless)
    assert code == 403, body
    assert 'User "system:anonymous" cannot list' in str(body["message"])


def test_a_certificate_wins_over_a_token_as_kubes_x509_authenticator_comes_first(
    server: Server,
) -> None:
    carol = server.user_certificate("carol")
    assert whoami(server, carol, token=server.token)["username"] == "carol"  # type: ignore[index]


def test_an_expired_certificate_fails_the_handshake_and_the_server_keeps_serving(
    server: Server,
) -> None:
    """Python's TLS checks the dates at the handshake, so an expired certificate never reaches
    the app (kube-apiserver answers 401). The app's own check, for a connection that outlives
    its certificate, is tested in tests/api/test_x509_users.py."""
    old = hand_made(server, [x509.NameAttribute(NameOID.COMMON_NAME, "old")], expired=True)
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        server.request("GET", CMS, cert=old)
    assert whoami(server, None, token=server.token)["username"] == "kubelite-admin"  # type: ignore[index]


def test_a_certificate_another_ca_signed_fails_the_handshake_and_nothing_changes(
    server: Server,
) -> None:
    mallory = hand_made(
        server,
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
         x509.NameAttribute(NameOID.COMMON_NAME, "mallory")],
        signer="self",
    )  # fmt: skip
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        server.request("POST", CMS, {"metadata": {"name": "mallory"}}, cert=mallory)
    assert server.request("GET", f"{CMS}/mallory")[0] == 404
    dave = server.user_certificate("dave")
    assert whoami(server, dave)["username"] == "dave"  # type: ignore[index]


def test_the_main_port_does_not_see_certificates(server: Server) -> None:
    """granian serves the main port and passes no client certificate to the app: a certificate
    sent there is not a credential (the request is anonymous), which is why ``kubelite
    kubeconfig`` names the client-certificate listener."""
    erin = server.user_certificate("erin")
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    context.load_cert_chain(*erin)
    req = urllib.request.Request(server.url + CMS)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, context=context, timeout=10)
    assert refused.value.code == 403
    assert b'User \\"system:anonymous\\"' in refused.value.read()


def test_a_client_certificate_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "kubelite", "serve", "--port", "0", "--client-cert-port",
             str(port), "--data-dir", str(tmp_path / "d")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"kubelite: 127.0.0.1:{port} is in use; stop what listens there, or pick another "
        "--client-cert-port (0: any free)"
    )
