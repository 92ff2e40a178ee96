"""kubeconfig ``exec`` credential plugins: a real plugin program (a Python script) prints an
ExecCredential; the client authenticates to a real kubelite server with the token it printed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import Server

from kubelite.client import Client, KubeconfigError, load_kubeconfig

PLUGIN = """
import json, os, sys
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
with open(sys.argv[1], "w") as seen:
    json.dump({"info": info, "argv": sys.argv[2:], "extra": os.environ.get("EXTRA")}, seen)
mode = os.environ.get("MODE", "token")
if mode == "fail":
    print("token expired, log in again", file=sys.stderr)
    sys.exit(3)
version = info["apiVersion"] if mode != "wrong-version" else "client.authentication.k8s.io/v1alpha1"
status = {"token": os.environ["TOKEN"]} if mode == "token" else {}
print(json.dumps({"apiVersion": version, "kind": "ExecCredential", "status": status}))
"""


def kubeconfig_with_exec(
    tmp_path: Path, server: Server, exec_config: dict[str, Any], provide_cluster: bool = False
) -> Path:
    base = yaml.safe_load(server.kubeconfig.read_text())
    base["users"][0]["user"] = {"exec": {**exec_config, "provideClusterInfo": provide_cluster}}
    path = tmp_path / "exec-kubeconfig"
    path.write_text(yaml.safe_dump(base))
    return path


def plugin_config(tmp_path: Path, token: str, mode: str = "token", **more: Any) -> dict[str, Any]:
    script = tmp_path / "plugin.py"
    script.write_text(PLUGIN)
    return {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(script), str(tmp_path / "seen.json"), "--flag"],
        "env": [
            {"name": "TOKEN", "value": token},
            {"name": "MODE", "value": mode},
            {"name": "EXTRA", "value": "from-kubeconfig"},
        ],
        "interactiveMode": "Never",
        **more,
    }


def test_token_from_an_exec_plugin_authenticates(server: Server, tmp_path: Path) -> None:
    path = kubeconfig_with_exec(tmp_path, server, plugin_config(tmp_path, server.token), True)
    with Client.from_kubeconfig(path) as client:
        namespace = client.get("v1", "Namespace", "default")
    assert namespace["metadata"]["name"] == "default"
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["argv"] == ["--flag"]
    assert seen["extra"] == "from-kubeconfig"
    info = seen["info"]
    assert info["kind"] == "ExecCredential"
    assert info["apiVersion"] == "client.authentication.k8s.io/v1"
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == server.url


def test_a_wrong_token_from_the_plugin_is_refused(server: Server, tmp_path: Path) -> None:
    path = kubeconfig_with_exec(tmp_path, server, plugin_config(tmp_path, "not-the-token"))
    with Client.from_kubeconfig(path) as client, pytest.raises(Exception, match="Unauthorized"):
        client.get("v1", "Namespace", "default")


def test_plugin_failures_are_one_clear_error(server: Server, tmp_path: Path) -> None:
    failing = kubeconfig_with_exec(tmp_path, server, plugin_config(tmp_path, "x", "fail"))
    with pytest.raises(KubeconfigError, match="exit code 3: token expired, log in again"):
        load_kubeconfig(failing)
    wrong = kubeconfig_with_exec(tmp_path, server, plugin_config(tmp_path, "x", "wrong-version"))
    with pytest.raises(KubeconfigError, match=r"plugin returned version .*v1alpha1"):
        load_kubeconfig(wrong)
    empty = kubeconfig_with_exec(tmp_path, server, plugin_config(tmp_path, "x", "none"))
    with pytest.raises(KubeconfigError, match="didn't return a token or cert/key pair"):
        load_kubeconfig(empty)
    missing = plugin_config(tmp_path, "x", command="no-such-plugin", installHint="brew install it")
    absent = kubeconfig_with_exec(tmp_path, server, missing)
    with pytest.raises(KubeconfigError, match="no-such-plugin not found\n\nbrew install it"):
        load_kubeconfig(absent)
    interactive = plugin_config(tmp_path, "x", interactiveMode="Always")
    always = kubeconfig_with_exec(tmp_path, server, interactive)
    with pytest.raises(KubeconfigError, match="standard input is not a terminal"):
        load_kubeconfig(always)


def test_a_relative_command_is_the_defining_files(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With several files in KUBECONFIG, ``./plugin`` is relative to the file that names it."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "plugin.py").write_text(PLUGIN)
    launcher = other / "plugin"
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} "$(dirname "$0")/plugin.py" "$@"\n')
    launcher.chmod(0o755)
    exec_config = plugin_config(tmp_path, server.token)
    exec_config.update(command="./plugin", args=[str(tmp_path / "seen.json")])
    users = kubeconfig_with_exec(other, server, exec_config)
    first = tmp_path / "first"
    first.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "clusters": []}))
    monkeypatch.setenv("KUBECONFIG", f"{first}:{users}")
    with Client.from_kubeconfig() as client:
        assert client.get("v1", "Namespace", "default")["metadata"]["name"] == "default"
