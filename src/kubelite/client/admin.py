"""Administrative calls that only kubelite has (not part of the Kubernetes API)."""

from __future__ import annotations

from typing import Any

from kubelite.client.errors import ApiError
from kubelite.client.kubeconfig import Connection
from kubelite.client.sync_client import Client

AdminError = ApiError  # the name ``kubelite compact`` has always caught


def compact(connection: Connection, revision: int) -> dict[str, Any]:
    """Ask the server to compact its history up to ``revision``; returns its Status."""
    with Client(connection, timeout=60) as client:
        result: dict[str, Any] = client.request(
            "POST", "/kubelite/v1/compact", [("revision", str(revision))]
        )
        return result
