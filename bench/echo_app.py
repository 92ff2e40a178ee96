"""The ceiling for ``bench/api.py``: a bare ASGI echo app on kubelite's own server stack.

GET answers a fixed ~2 KB JSON body, PUT echoes the request body, ``/readyz`` answers ``ok``.
It runs on the HTTP stack ``kubelite serve`` uses (``kubelite.server.http.serve_http``:
granian's embedded server on uvloop, the same TLS serving certificate from a kubelite data
directory), so the difference between it and kubelite is kubelite's own work: routing, auth,
the registry, JSON and storage.

Run:
    .venv/bin/python bench/echo_app.py --data-dir DIR [--port 0]

It prints ``echo serving on https://127.0.0.1:PORT`` once the socket is bound.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import uvloop

from kubelite.server.http import serve_http
from kubelite.server.listening import ConnectionBudget, listen, raise_open_file_limit
from kubelite.server.tls import ServingFiles, ensure_serving_files

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

GET_BODY = orjson.dumps(
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "echo",
            "namespace": "default",
            "uid": "00000000-0000-0000-0000-000000000000",
            "resourceVersion": "1",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "data": {"payload": "x" * 1800},
    }
)
JSON_HEADERS = [(b"content-type", b"application/json")]


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/readyz":
        body = b"ok"
    elif scope["method"] in ("PUT", "POST"):
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
    else:
        body = GET_BODY
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [*JSON_HEADERS, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def serve(files: ServingFiles, port: int) -> None:
    sock = listen("127.0.0.1", port)
    print(f"echo serving on https://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    budget = ConnectionBudget.of(raise_open_file_limit())
    await serve_http(app, sock, files, on_stop=lambda: None, max_connections=budget.main)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, help="a kubelite data dir (for its TLS files)")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    files = ensure_serving_files(Path(args.data_dir).absolute(), "127.0.0.1")
    uvloop.run(serve(files, args.port))


if __name__ == "__main__":
    main()
