"""Reading kubeconfig files into a :class:`Connection`: where the server is and how to prove who
we are.

Handles what ordinary kubeconfigs carry (kubelite's, kind's, a cloud provider's without exec
plugins): the current context or a named one, the context's namespace, bearer tokens (inline or
``tokenFile``), basic auth, client certificates and keys (inline ``*-data`` or file paths,
relative paths resolved against the kubeconfig's directory), CA data or file,
``insecure-skip-tls-verify`` and ``tls-server-name``, and ``exec`` credential plugins
(:mod:`kubelite.client.execcred`). ``KUBECONFIG`` may list several files (``:``-separated): as
kubectl does, the first file that sets a value wins; an empty ``KUBECONFIG`` is unset.
``auth-provider`` plugins (removed from kubectl) raise a clear error.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubelite.client.execcred import ExecCredentialError, run_exec_plugin

DEFAULT_KUBECONFIG = "~/.kube/config"


class KubeconfigError(ValueError):
    """The kubeconfig is missing, unreadable, or lacks what the chosen context needs."""


@dataclass(frozen=True, slots=True)
class Connection:
    """Everything needed to reach one API server as one user."""

    server: str
    token: str = ""
    ca_pem: bytes | None = None
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    username: str = ""
    password: str = ""
    insecure_skip_tls_verify: bool = False
    tls_server_name: str = ""
    namespace: str = "default"

    def ssl_context(self) -> ssl.SSLContext:
        """A TLS context that trusts the cluster's CA and presents the client certificate."""
        context = ssl.create_default_context()
        if self.ca_pem:
            context.load_verify_locations(cadata=self.ca_pem.decode())
        if self.insecure_skip_tls_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.client_cert_pem:
            _load_cert_chain(context, self.client_cert_pem, self.client_key_pem)
        return context

    def auth_headers(self) -> dict[str, str]:
        if self.token:
            return {"Authorization": f"Bearer {self.token}"}
        if self.username or self.password:
            pair = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            return {"Authorization": f"Basic {pair}"}
        return {}


def _load_cert_chain(context: ssl.SSLContext, cert: bytes, key: bytes | None) -> None:
    """``ssl`` loads certificates only from files: write them to a private temporary file (0600),
    load, and remove it at once."""
    fd, path = tempfile.mkstemp(prefix="kubelite-client-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cert if cert.endswith(b"\n") else cert + b"\n")
            if key:
                f.write(key)
        context.load_cert_chain(path)
    finally:
        os.unlink(path)


def _parse(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc.strerror}")
    try:
        config = json.loads(text)
    except json.JSONDecodeError:
        import yaml

        try:
            config = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise KubeconfigError(f"kubeconfig {path} is neither JSON nor YAML: {exc}")
    if not isinstance(config, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a mapping")
    # Relative file references are relative to the file that holds them.
    for section, field_names in (
        ("clusters", ("certificate-authority",)),
        ("users", ("client-certificate", "client-key", "tokenFile")),
    ):
        for entry in config.get(section) or []:
            body = entry.get(section[:-1]) if isinstance(entry, dict) else None
            if not isinstance(body, dict):
                continue
            for name in field_names:
                value = body.get(name)
                if isinstance(value, str) and value and not os.path.isabs(value):
                    body[name] = str(path.parent / value)
            plugin = body.get("exec") if section == "users" else None
            if isinstance(plugin, dict):
                command = plugin.get("command")
                if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
                    plugin["command"] = str(path.parent / command)  # as client-go
    return config


def _merge(configs: list[dict[str, Any]]) -> dict[str, Any]:
    """kubectl's merge of several files: the first occurrence of a name, or of
    current-context, wins."""
    merged: dict[str, Any] = {"clusters": [], "users": [], "contexts": []}
    for config in configs:
        if "current-context" not in merged and config.get("current-context"):
            merged["current-context"] = config["current-context"]
        for section in ("clusters", "users", "contexts"):
            known = {e.get("name") for e in merged[section]}
            merged[section] += [
                e
                for e in config.get(section) or []
                if isinstance(e, dict) and e.get("name") not in known
            ]
    return merged


def _named(entries: list[dict[str, Any]], name: str, field: str) -> dict[str, Any]:
    for entry in entries:
        if entry.get("name") == name:
            value = entry.get(field) or {}
            return value if isinstance(value, dict) else {}
    raise KubeconfigError(f"kubeconfig has no {field} named {name!r}")


def _bytes(body: dict[str, Any], data_field: str, file_field: str) -> bytes | None:
    data = body.get(data_field)
    if data:
        return base64.b64decode(data)
    path = body.get(file_field)
    if path:
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            raise KubeconfigError(f"cannot read {file_field} {path}: {exc.strerror}")
    return None


def kubeconfig_paths(path: str | Path | None = None) -> list[Path]:
    """The files to read: ``path``, else ``$KUBECONFIG`` (``:``-separated), else
    ``~/.kube/config``."""
    if path is not None:
        return [Path(path).expanduser()]
    env = os.environ.get("KUBECONFIG", "")
    paths = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return paths or [Path(DEFAULT_KUBECONFIG).expanduser()]


def load_kubeconfig(path: str | Path | None = None, context: str | None = None) -> Connection:
    """The connection of ``context`` (default: current-context) of the kubeconfig at ``path``
    (default: ``$KUBECONFIG``, then ``~/.kube/config``)."""
    paths = kubeconfig_paths(path)
    existing = [p for p in paths if p.exists()] if len(paths) > 1 else paths
    if not existing:
        raise KubeconfigError(f"no kubeconfig found at {os.pathsep.join(map(str, paths))}")
    config = _merge([_parse(p) for p in existing])
    name = context or config.get("current-context")
    if not name:
        raise KubeconfigError("kubeconfig has no current-context; name a context")
    ctx = _named(config["contexts"], name, "context")
    if "cluster" not in ctx:
        raise KubeconfigError(f"context {name!r} names no cluster")
    cluster = _named(config["clusters"], ctx["cluster"], "cluster")
    user = _named(config["users"], ctx["user"], "user") if ctx.get("user") else {}
    if "auth-provider" in user:
        raise KubeconfigError(
            f"user {ctx['user']!r} needs an auth-provider plugin, which kubelite.client does "
            "not run (kubectl dropped them too); use an exec plugin, a token or a certificate"
        )
    if not cluster.get("server"):
        raise KubeconfigError(f"cluster {ctx['cluster']!r} has no server")
    token = str(user.get("token") or "")
    if not token and user.get("tokenFile"):
        token = (_bytes(user, "", "tokenFile") or b"").decode().strip()
    cert = _bytes(user, "client-certificate-data", "client-certificate")
    key = _bytes(user, "client-key-data", "client-key")
    if isinstance(user.get("exec"), dict) and not token and not cert:
        try:
            credential = run_exec_plugin(user["exec"], cluster)
        except ExecCredentialError as exc:
            raise KubeconfigError(f"user {ctx['user']!r}: {exc}") from None
        token, cert, key = credential.token, credential.client_cert_pem, credential.client_key_pem
    return Connection(
        server=str(cluster["server"]).rstrip("/"),
        token=token,
        ca_pem=_bytes(cluster, "certificate-authority-data", "certificate-authority"),
        client_cert_pem=cert,
        client_key_pem=key,
        username=str(user.get("username") or ""),
        password=str(user.get("password") or ""),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify", False)),
        tls_server_name=str(cluster.get("tls-server-name") or ""),
        namespace=str(ctx.get("namespace") or "default"),
    )


def load_connection(path: str | Path) -> Connection:
    """The current context of the kubeconfig at ``path`` (kept for ``kubelite compact``)."""
    return load_kubeconfig(path)
