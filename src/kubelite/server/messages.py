"""ASGI messages in and out: a request's parsed line, headers and body (JSON, or kubectl's
protobuf), with kube-apiserver's limits and errors; JSON responses and error Statuses."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import orjson

from kubelite.api import authn, errors
from kubelite.api.errors import APIError
from kubelite.api.request import RequestInfo
from kubelite.server import protobuf

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

MAX_BODY = 3 * 1024 * 1024
DISCARD_LIMIT = 64 * 1024 * 1024
JSON = b"application/json"
PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)


#: A request's info until the request-info filter parses it.
UNPARSED = RequestInfo("", "")


class Request:
    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.scope = scope
        self.method: str = scope["method"]
        self.path: str = scope["path"]
        self.query = {
            k: v[-1]
            for k, v in parse_qs(
                scope.get("query_string", b"").decode(), keep_blank_values=True
            ).items()
        }
        self.headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        self.receive = receive
        self.raw = b""
        #: set by the request-info filter
        self.info = UNPARSED
        #: set by the authentication filter (the admin when authentication is off)
        self.user = authn.ADMIN

    async def body(self) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise errors.bad_request("client disconnected")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                await self._discard(message)
                raise errors.too_large()
            chunks.append(chunk)
            if not message.get("more_body"):
                self.raw = b"".join(chunks)
                return self.raw

    async def _discard(self, message: dict[str, Any]) -> None:
        """Read the rest of an oversize body (up to DISCARD_LIMIT) so the client, still sending,
        gets the 413 instead of a reset connection."""
        size = 0
        while message.get("more_body") and size < DISCARD_LIMIT:
            message = await self.receive()
            size += len(message.get("body", b""))

    async def json(self) -> Any:
        content_type = self.headers.get("content-type", "").split(";")[0].strip()
        if content_type == "application/vnd.kubernetes.protobuf":
            try:
                return protobuf.decode_request(await self.body())
            except protobuf.UnsupportedKind:
                raise errors.unsupported_media_type(["application/json", *PATCH_TYPES])
            except ValueError as exc:
                raise errors.bad_request(f"couldn't decode the protobuf request body: {exc}")
        raw = await self.body()
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(f"couldn't decode the request body as JSON: {exc}")

    async def json_object(self) -> dict[str, Any]:
        body = await self.json()
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        return body

    def flag(self, name: str) -> bool:
        """A boolean query parameter parsed like Go's strconv.ParseBool (empty counts as true
        for ``watch``, as kube-apiserver does)."""
        value = self.query.get(name)
        if value is None:
            return False
        return value.lower() not in ("0", "f", "false")


async def send_json(
    send: Send,
    status: int,
    body: Any,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    content_type: bytes = JSON,
) -> None:
    data = orjson.dumps(body, option=orjson.OPT_APPEND_NEWLINE)  # kube's encoder ends with \n
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def send_error(send: Send, error: APIError) -> None:
    headers = ((b"retry-after", str(error.retry_after).encode()),) if error.retry_after else ()
    await send_json(send, error.code, errors.status_body(error), headers)
