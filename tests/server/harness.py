"""Real kubelite servers for the API tests, and the calls the tests make to them over HTTP.

A test's ``server`` (tests/server/conftest.py) is, by default, a namespace of its own on the
worker's shared in-process server (:func:`start_in_process`): :attr:`Server.namespace` names it,
paths given to :meth:`Server.request` and :meth:`Server.watch_lines` may say ``{ns}`` for it,
and the test's kubeconfig has it as the context's namespace (kubectl and clients without ``-n``
work in it). :func:`start_server` runs ``kubelite serve --port 0`` as a subprocess, for tests
that signal, kill or restart it or pass it command-line options.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kubelite import cli
from kubelite.server.serve import ServeOptions
from kubelite.testing.servers import InProcessServer, KubeliteServer

KUBECTL = str(Path(sys.executable).with_name("kubectl"))
#: What kube-controller-manager's controllers put in every namespace, as in any cluster: the
#: ConfigMap ``kube-root-ca.crt`` and the ServiceAccount ``default``. A server has them in the
#: namespaces it starts with (``SYSTEM_NAMESPACES``) before it serves; a new namespace gets them
#: soon after it is created (:func:`wait_for_namespace_defaults`).
ROOT_CA = "kube-root-ca.crt"
SYSTEM_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
#: what a path says for the test's namespace (:meth:`Server.path`)
NS = "{ns}"


@dataclass(frozen=True)
class Server:
    url: str
    token: str
    kubeconfig: Path
    data_dir: Path
    #: the ``kubelite serve`` subprocess (:func:`start_server`); None for a server in this process
    process: subprocess.Popen[str] | None = None
    #: the namespace the test owns: ``default`` on a server of its own, a new one on the shared
    namespace: str = "default"
    #: where this test's files go (kubeconfigs, kubectl's discovery cache)
    work_dir: Path | None = None
    #: the server when it runs in this process (:func:`start_in_process`)
    in_process: KubeliteServer | None = None

    @property
    def files(self) -> Path:
        return self.work_dir or self.data_dir.parent

    def path(self, path: str) -> str:
        """``path`` with ``{ns}`` replaced by the test's namespace."""
        return path.replace(NS, self.namespace)

    def in_namespace(self, namespace: str, work_dir: Path) -> Server:
        """This server as a test that owns ``namespace`` sees it: its own kubeconfig (in
        ``work_dir``) whose context is in that namespace."""
        config = json.loads(self.kubeconfig.read_text())
        for context in config["contexts"]:
            context["context"]["namespace"] = namespace
        kubeconfig = work_dir / "kubeconfig"
        kubeconfig.write_text(json.dumps(config, indent=2))
        kubeconfig.chmod(0o600)
        return replace(self, kubeconfig=kubeconfig, namespace=namespace, work_dir=work_dir)

    def log(self) -> str:
        """What the server logged so far."""
        if self.in_process is not None:
            return self.in_process.log()
        return (self.data_dir.parent / "server.log").read_text(errors="replace")

    def kubectl_env(self) -> dict[str, str]:
        """This server's kubeconfig, and a kubectl cache of its own: kubectl caches discovery
        under ~/.kube/cache by host and port, and a later server on a reused port would
        otherwise be served an earlier one's kinds."""
        return {
            "KUBECONFIG": str(self.kubeconfig),
            "KUBECACHEDIR": str(self.files / "kubectl-cache"),
        }

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, **self.kubectl_env(), **(env or {})}
        result = subprocess.run(
            [KUBECTL, *args], input=input, capture_output=True, text=True, timeout=60, env=full_env
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
            )
        return result

    def kubectl_background(self, *args: str) -> subprocess.Popen[str]:
        """kubectl running alongside the test (``get -w``, ``wait``); collect it with
        ``communicate``."""
        return subprocess.Popen(
            [KUBECTL, *args],
            env={**os.environ, **self.kubectl_env()},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def watch_lines(self, path: str, seconds: int) -> tuple[threading.Thread, list[Any]]:
        """A watch of ``path`` read in the background until the server ends it after
        ``seconds`` (``timeoutSeconds``); join the thread, then read the decoded events."""
        lines: list[Any] = []
        context = ssl.create_default_context(cafile=str(self.data_dir / "ca.crt"))
        separator = "&" if "?" in path else "?"
        req = urllib.request.Request(
            f"{self.url}{self.path(path)}{separator}timeoutSeconds={seconds}"
        )
        req.add_header("Authorization", f"Bearer {self.token}")

        def read() -> None:
            with urllib.request.urlopen(req, context=context, timeout=60) as resp:
                for line in resp:
                    lines.append(json.loads(line))

        reader = threading.Thread(target=read)
        reader.start()
        return reader, lines

    @property
    def cert_url(self) -> str:
        """The listener that authenticates x509 client certificates."""
        return (self.data_dir / "client-cert-server").read_text().strip()

    def user_certificate(self, user: str, *groups: str) -> tuple[Path, Path]:
        """A client certificate and its key, as files, from the kubeconfig ``kubelite
        kubeconfig --user`` writes (kept beside them as ``<user>.kubeconfig``). The command's
        code runs in this process: a test may make dozens of users, and tests/cli runs the
        command itself."""
        kubeconfig = self.files / f"{user}.kubeconfig"
        status = cli.main(
            ["kubeconfig", "--user", user,
             *(arg for group in groups for arg in ("--group", group)),
             "--data-dir", str(self.data_dir), "--namespace", self.namespace,
             "-o", str(kubeconfig)]
        )  # fmt: skip
        assert status == 0, f"kubelite kubeconfig --user {user} exited {status}"
        config = json.loads(kubeconfig.read_text())
        assert config["users"][0]["name"] == user
        assert config["clusters"][0]["cluster"]["server"] == self.cert_url
        credentials = config["users"][0]["user"]
        paths = (self.files / f"{user}.crt", self.files / f"{user}.key")
        for path, field in zip(paths, ("client-certificate-data", "client-key-data"), strict=True):
            path.write_bytes(base64.b64decode(credentials[field]))
        return paths

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        content_type: str = "application/json",
        token: str | None = "default",
        raw: bytes | None = None,
        cert: tuple[Path, Path] | None = None,
        timeout: float = 30,
    ) -> tuple[int, dict[str, object]]:
        """One request (``{ns}`` in ``path``: the test's namespace); ``cert``: a client
        certificate and key, sent to :attr:`cert_url` (with no token unless one is named);
        ``timeout``: seconds to wait for the answer."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        url = (self.url if cert is None else self.cert_url) + self.path(path)
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if token == "default" and cert is None:
            token = self.token
        if token not in (None, "default"):
            req.add_header("Authorization", f"Bearer {token}")
        context = ssl.create_default_context(cafile=str(self.data_dir / "ca.crt"))
        if cert is not None:
            context.load_cert_chain(*cert)
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
                return resp.status, json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"{}")


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    """An apps/v1 Deployment of one nginx container, labelled ``app: <name>``."""
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


def wait_for_namespace_defaults(server: Server, namespace: str) -> None:
    """Return once ``namespace`` holds its ``kube-root-ca.crt`` and ``default`` ServiceAccount
    (a hang guard of 30 s, not a timing assertion)."""
    paths = [
        f"/api/v1/namespaces/{namespace}/configmaps/{ROOT_CA}",
        f"/api/v1/namespaces/{namespace}/serviceaccounts/default",
    ]
    deadline = time.monotonic() + 30
    while any(server.request("GET", path)[0] != 200 for path in paths):
        assert time.monotonic() < deadline, f"namespace {namespace} never got its defaults"
        time.sleep(0.02)


def start_server(data_dir: Path, storage: str | None = None, *extra: str) -> Server:
    """``storage``: a store URL for ``--storage`` (default: SQLite in ``data_dir``);
    ``extra``: more ``kubelite serve`` options."""
    data_dir.mkdir(parents=True, exist_ok=True)
    log = (data_dir.parent / "server.log").open("w")
    args = ["serve", "--port", "0", "--data-dir", str(data_dir), *extra]
    if storage is not None:
        args += ["--storage", storage]
    process = subprocess.Popen(
        [sys.executable, "-m", "kubelite", *args],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    log.close()
    assert process.stdout is not None
    url = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if line.startswith("kubelite serving on "):
            url = line.split()[-1]
            break
    if not url:
        process.kill()
        process.wait()
        process.stdout.close()
        raise AssertionError(
            f"kubelite serve did not start:\n{(data_dir.parent / 'server.log').read_text()}"
        )
    token = (data_dir / "token").read_text().strip()
    return Server(url, token, data_dir / "kubeconfig", data_dir, process)


def start_in_process(data_dir: Path, storage: str | None = None, **options: Any) -> Server:
    """A server in this process (on a thread and event loop of its own): ``storage`` as for
    :func:`start_server`; ``options``: :class:`~kubelite.server.serve.ServeOptions` fields
    (``authorization_mode="AlwaysAllow"``, ...)."""
    backing = InProcessServer.start(data_dir, ServeOptions(storage=storage, **options))
    return Server(backing.url, backing.token, backing.kubeconfig, data_dir, in_process=backing)


def stop_server(server: Server) -> None:
    if server.in_process is not None:
        server.in_process.stop()
        return
    assert server.process is not None
    server.process.terminate()
    try:
        server.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
    if server.process.stdout is not None:
        server.process.stdout.close()
