"""Administrative calls that only kubelite has (not part of the Kubernetes API)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from kubelite.client.kubeconfig import Connection


class AdminError(Exception):
    def __init__(self, code: int, status: dict[str, Any]) -> None:
        self.code = code
        self.status = status
        super().__init__(f"({code}) {status.get('message', status)}")


def compact(connection: Connection, revision: int) -> dict[str, Any]:
    """Ask the server to compact its history up to ``revision``."""
    request = urllib.request.Request(
        f"{connection.server}/kubelite/v1/compact?revision={revision}", data=b"", method="POST"
    )
    request.add_header("Authorization", f"Bearer {connection.token}")
    try:
        with urllib.request.urlopen(request, context=connection.ssl_context(), timeout=60) as r:
            body: dict[str, Any] = json.loads(r.read())
            return body
    except urllib.error.HTTPError as err:
        raise AdminError(err.code, json.loads(err.read() or b"{}"))
