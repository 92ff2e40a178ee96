"""kubeconfig ``exec`` credential plugins (client-go's ``pkg/client/auth/exec``): run the
command the kubeconfig names and take the bearer token or client certificate it prints.

The plugin gets ``KUBERNETES_EXEC_INFO`` (an ``ExecCredential`` whose spec says the session is not
interactive, and the cluster when ``provideClusterInfo`` is set), the kubeconfig's ``env`` on top
of ours, and its ``args``. Its output is an ``ExecCredential`` of the same apiVersion with
``status.token``, or ``status.clientCertificateData`` and ``status.clientKeyData``. The command
runs once, when the kubeconfig is loaded: a credential that expires needs a new client.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
TIMEOUT_SECONDS = 60.0


class ExecCredentialError(ValueError):
    """The plugin could not be run, failed, or printed no usable credential."""


@dataclass(frozen=True, slots=True)
class ExecCredential:
    token: str = ""
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None


def _cluster_info(cluster: dict[str, Any]) -> dict[str, Any]:
    info: dict[str, Any] = {"server": cluster.get("server", "")}
    for ours, theirs in (
        ("tls-server-name", "tls-server-name"),
        ("insecure-skip-tls-verify", "insecure-skip-tls-verify"),
        ("certificate-authority-data", "certificate-authority-data"),
        ("proxy-url", "proxy-url"),
    ):
        if cluster.get(ours):
            info[theirs] = cluster[ours]
    return info


def run_exec_plugin(config: dict[str, Any], cluster: dict[str, Any]) -> ExecCredential:
    """The credential printed by the plugin ``config`` (a kubeconfig user's ``exec``; a
    relative command path already resolved against the kubeconfig file that holds it)."""
    api_version = str(config.get("apiVersion") or "")
    if api_version not in API_VERSIONS:
        raise ExecCredentialError(
            f"exec plugin: invalid apiVersion {api_version!r}; use one of {', '.join(API_VERSIONS)}"
        )
    command = str(config.get("command") or "")
    if not command:
        raise ExecCredentialError("exec plugin: no command in the kubeconfig's exec section")
    if config.get("interactiveMode") == "Always":
        raise ExecCredentialError(
            "exec plugin cannot support interactive mode: standard input is not a terminal"
        )
    spec: dict[str, Any] = {"interactive": False}
    if config.get("provideClusterInfo"):
        spec["cluster"] = _cluster_info(cluster)
    env = dict(os.environ)
    for entry in config.get("env") or []:
        if isinstance(entry, dict) and entry.get("name"):
            env[str(entry["name"])] = str(entry.get("value", ""))
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {"apiVersion": api_version, "kind": "ExecCredential", "spec": spec}
    )
    argv = [command, *(str(a) for a in config.get("args") or [])]
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, check=False
        )
    except FileNotFoundError:
        hint = config.get("installHint")
        raise ExecCredentialError(
            f"exec: executable {command} not found" + (f"\n\n{hint}" if hint else "")
        ) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExecCredentialError(f"exec: executable {command} failed: {exc}") from None
    if done.returncode != 0:
        raise ExecCredentialError(
            f"exec: executable {command} failed with exit code {done.returncode}"
            + (f": {done.stderr.strip()}" if done.stderr.strip() else "")
        )
    return _parse(done.stdout, api_version)


def _parse(output: str, api_version: str) -> ExecCredential:
    try:
        credential = json.loads(output)
    except json.JSONDecodeError:
        raise ExecCredentialError("exec plugin: output is not an ExecCredential (not JSON)")
    if not isinstance(credential, dict) or credential.get("kind") != "ExecCredential":
        raise ExecCredentialError("exec plugin: output is not an ExecCredential")
    if credential.get("apiVersion") != api_version:
        raise ExecCredentialError(
            f"exec plugin is configured to use API version {api_version}, plugin returned "
            f"version {credential.get('apiVersion')}"
        )
    status = credential.get("status")
    if not isinstance(status, dict):
        raise ExecCredentialError("exec plugin didn't return a status field")
    token = str(status.get("token") or "")
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if bool(cert) != bool(key):
        raise ExecCredentialError(
            "exec plugin: clientCertificateData and clientKeyData must both be set or both unset"
        )
    if not token and not cert:
        raise ExecCredentialError("exec plugin didn't return a token or cert/key pair")
    return ExecCredential(
        token=token,
        client_cert_pem=str(cert).encode() if cert else None,
        client_key_pem=str(key).encode() if key else None,
    )
