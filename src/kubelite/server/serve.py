"""``kubelite serve``: open the store, write the kubeconfig, serve HTTP until told to stop.

The data directory holds the SQLite database (``state.db``), the admin token (``token``, mode
0600, generated on first start) and a ``kubeconfig`` that kubectl and the client libraries accept
as-is. SIGINT/SIGTERM stop accepting, end watch streams, finish in-flight requests and close the
store.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kubelite.api.kinds.allocation import ServiceRanges
from kubelite.server.assembly import running
from kubelite.server.http import listen, serve_http
from kubelite.server.tls import ServingFiles, ensure_serving_files
from kubelite.storage import StoreOptions

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    data_dir: str = "./kubelite-data"
    bind_address: str = "127.0.0.1"
    port: int = 6443
    storage: str | None = None
    history_seconds: float = 300.0
    history_revisions: int = 1000
    service_ranges: ServiceRanges = field(default_factory=ServiceRanges)


def load_or_create_token(data_dir: Path) -> str:
    path = data_dir / "token"
    if path.exists():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token


def write_kubeconfig(data_dir: Path, server: str, token: str, ca_cert: Path) -> Path:
    """A complete kubeconfig (JSON is YAML): cluster, user, context, current-context."""
    ca_data = base64.b64encode(ca_cert.read_bytes()).decode()
    cluster = {"server": server, "certificate-authority-data": ca_data}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubelite", "cluster": cluster}],
        "users": [{"name": "kubelite-admin", "user": {"token": token}}],
        "contexts": [
            {
                "name": "kubelite",
                "context": {
                    "cluster": "kubelite",
                    "user": "kubelite-admin",
                    "namespace": "default",
                },
            }
        ],
        "current-context": "kubelite",
        "preferences": {},
    }
    path = data_dir / "kubeconfig"
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(config, f, indent=2)
    os.replace(tmp, path)
    return path


def prepare_data_dir(options: ServeOptions) -> tuple[Path, str, ServingFiles]:
    """The data directory, the admin token and the TLS files, each made on first start."""
    data_dir = Path(options.data_dir).absolute()
    data_dir.mkdir(parents=True, exist_ok=True)
    return (
        data_dir,
        load_or_create_token(data_dir),
        ensure_serving_files(data_dir, options.bind_address),
    )


def announce(server_url: str, kubeconfig: Path) -> None:
    """What ``kubelite serve`` prints once it accepts connections (tests and tools read it)."""
    print(f"kubelite serving on {server_url}", flush=True)
    print(f"export KUBECONFIG={kubeconfig}", flush=True)


async def serve(
    options: ServeOptions,
    *,
    on_ready: Callable[[str, Path], None] = announce,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM, or until ``stop`` is set when given (the testing plugin's
    in-process server runs this on a thread of its own). ``on_ready(url, kubeconfig)`` runs once
    the socket listens and the kubeconfig is written."""
    data_dir, token, tls = prepare_data_dir(options)
    url = options.storage or f"sqlite://{data_dir}/state.db"
    store_options = StoreOptions(
        retention_seconds=options.history_seconds,
        min_retained_revisions=options.history_revisions,
    )
    async with running(
        url, store_options, token=token, service_ranges=options.service_ranges
    ) as server:
        sock = listen(options.bind_address, options.port)
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        server_url = f"https://{shown}:{port}"
        kubeconfig = write_kubeconfig(data_dir, server_url, token, tls.ca_cert)
        on_ready(server_url, kubeconfig)
        await serve_http(server.app, sock, tls, on_stop=server.app.shutting_down.set, stop=stop)
    if stop is None:
        print("kubelite stopped", file=sys.stderr, flush=True)
