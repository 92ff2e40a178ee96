"""A store that does not answer (etcd without quorum; here, a closed one) gives clients kube's
504 Timeout Status with Retry-After, not a 500, and the app keeps serving."""

from __future__ import annotations

from typing import Any

import orjson

from kubelite.server.app import KubeliteApp
from kubelite.server.assembly import assemble
from kubelite.storage import StoreOptions, open_store


async def call(app: KubeliteApp, method: str, path: str) -> tuple[int, dict[str, str], Any]:
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"authorization", b"Bearer t")],
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    headers = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], headers, orjson.loads(body)


async def test_an_unavailable_store_is_a_504_with_retry_after() -> None:
    store = await open_store("sqlite://", StoreOptions(compaction_interval_seconds=0))
    server = await assemble(store, token="t")
    app = server.app
    status, _, _ = await call(app, "GET", "/api/v1/namespaces/default/configmaps/x")
    assert status == 404
    await server.close()
    await store.close()
    status, headers, body = await call(app, "GET", "/api/v1/namespaces/default/configmaps/x")
    assert status == 504
    assert body["reason"] == "Timeout"
    assert body["message"] == "Timeout: store is closed"
    assert body["details"]["retryAfterSeconds"] == 1
    assert headers["retry-after"] == "1"
