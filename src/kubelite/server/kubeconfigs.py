"""The data directory's credentials as kubeconfigs: the administrator's token and kubeconfig,
and a user's kubeconfig whose client certificate the data directory's CA signs (``kubelite
kubeconfig --user``). Light to import: the CLI writes a user's kubeconfig without loading the
server."""

from __future__ import annotations

import base64
import json
import os
import secrets
from pathlib import Path
from typing import Any

from kubelite.server.startup import StartupError
from kubelite.server.tls import issue_client_certificate

#: the data directory's file naming the client-certificate listener's URL
CLIENT_CERT_SERVER = "client-cert-server"


def load_or_create_token(data_dir: Path) -> str:
    path = data_dir / "token"
    if path.exists():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


def kubeconfig_document(
    server: str, ca_pem: bytes, user: str, credentials: dict[str, str], namespace: str = "default"
) -> dict[str, Any]:
    """A complete kubeconfig: cluster ``kubelite``, ``user`` with ``credentials`` (a token, or
    client-certificate-data and client-key-data), one context."""
    cluster = {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubelite", "cluster": cluster}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [
            {
                "name": "kubelite",
                "context": {"cluster": "kubelite", "user": user, "namespace": namespace},
            }
        ],
        "current-context": "kubelite",
        "preferences": {},
    }


def write_kubeconfig(data_dir: Path, server: str, token: str, ca_cert: Path) -> Path:
    """The administrator's kubeconfig (JSON is YAML), written atomically, mode 0600."""
    config = kubeconfig_document(server, ca_cert.read_bytes(), "kubelite-admin", {"token": token})
    path = data_dir / "kubeconfig"
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(config, f, indent=2)
    os.replace(tmp, path)
    return path


def user_kubeconfig(
    data_dir: Path, user: str, groups: list[str], expiration: float, namespace: str
) -> dict[str, Any]:
    """A kubeconfig for the server of ``data_dir`` whose client certificate (signed by the data
    dir's CA, valid ``expiration`` seconds) authenticates as ``user`` in ``groups``
    (``kubelite kubeconfig``). It names the server's client-certificate listener."""
    try:
        server = (data_dir / CLIENT_CERT_SERVER).read_text().strip()
        ca_pem = (data_dir / "ca.crt").read_bytes()
        (data_dir / "ca.key").stat()
    except OSError as exc:
        raise StartupError(
            f"{data_dir} holds no server's credentials ({exc}); "
            "run `kubelite serve --data-dir` there first"
        ) from None
    cert, key = issue_client_certificate(data_dir, user, groups, expiration)
    credentials = {
        "client-certificate-data": base64.b64encode(cert).decode(),
        "client-key-data": base64.b64encode(key).decode(),
    }
    return kubeconfig_document(server, ca_pem, user, credentials, namespace)
