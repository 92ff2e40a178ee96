"""Reading the current context of a kubeconfig: server URL, bearer token, CA certificate."""

from __future__ import annotations

import base64
import json
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Connection:
    server: str
    token: str
    ca_pem: bytes | None

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if self.ca_pem:
            context.load_verify_locations(cadata=self.ca_pem.decode())
        return context


def _named(entries: list[dict[str, Any]], name: str, field: str) -> dict[str, Any]:
    for entry in entries:
        if entry.get("name") == name:
            value = entry.get(field) or {}
            return value if isinstance(value, dict) else {}
    raise ValueError(f"kubeconfig has no {field} named {name!r}")


def load_connection(path: str | Path) -> Connection:
    """The current context's connection. Reads JSON kubeconfigs (as ``kubelite serve`` writes
    them); YAML ones need PyYAML, used when installed."""
    text = Path(path).read_text()
    try:
        config = json.loads(text)
    except json.JSONDecodeError:
        import yaml  # type: ignore[import-untyped]

        config = yaml.safe_load(text)
    context = _named(config.get("contexts", []), config["current-context"], "context")
    cluster = _named(config.get("clusters", []), context["cluster"], "cluster")
    user = _named(config.get("users", []), context["user"], "user")
    ca = cluster.get("certificate-authority-data")
    ca_pem = base64.b64decode(ca) if ca else None
    if ca_pem is None and cluster.get("certificate-authority"):
        ca_pem = Path(cluster["certificate-authority"]).read_bytes()
    return Connection(cluster["server"], str(user.get("token", "")), ca_pem)
