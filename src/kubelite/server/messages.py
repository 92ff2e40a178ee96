"""ASGI messages in and out: a request's parsed line, headers and body (JSON, YAML, or kubectl's
protobuf), with kube-apiserver's limits and errors; JSON responses and error Statuses.

An object body (create, update) is read by its Content-Type as kube-apiserver's negotiation
does (``NegotiateInputSerializer``): none or ``application/json`` is JSON, ``application/yaml``
YAML (read as sigs.k8s.io/yaml reads it), ``application/vnd.kubernetes.protobuf`` protobuf, and
anything else 415 UnsupportedMediaType listing those three. JSON nested deeper than Go's
scanner allows (10000) is 400 with its text; anything shallower is read, on a large stack
when orjson's own limit is passed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import orjson

from kubelite.api import errors
from kubelite.api.encoding import decodeerrors, jsoncodec, yamlbody
from kubelite.api.errors import APIError
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import ADMIN, User
from kubelite.server import protobuf

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

MAX_BODY = 3 * 1024 * 1024
DISCARD_LIMIT = 64 * 1024 * 1024
JSON = b"application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
#: The media types an object body may have, in the order kube-apiserver lists them.
OBJECT_TYPES = ("application/json", YAML, PROTOBUF)
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
        # a header is bytes (kube reads them as Go strings): what is not UTF-8 is U+FFFD, as
        # kube's JSON writes it, never a decode error
        self.headers = {
            k.decode("utf-8", "replace").lower(): v.decode("utf-8", "replace")
            for k, v in scope.get("headers", [])
        }
        self.receive = receive
        self.raw = b""
        self.read = False
        #: set when the body is nested deeper than orjson reads (decode it with jsoncodec.deep)
        self.deep = False
        #: set by the request-info filter
        self.info = UNPARSED
        #: set by the authentication filter (the admin when authentication is off)
        self.user = ADMIN
        #: set when authentication, impersonation or authorization refused the request (401,
        #: 403): it never reached a handler, and kube instruments only handlers
        self.refused = False
        #: set by the impersonation filter: who authenticated, when ``user`` is whom they
        #: impersonate
        self.impersonator: User | None = None
        #: set by the audit-init filter: the ``Audit-Id`` this request's events and log line carry
        self.audit_id = ""
        #: headers every response to this request carries (the API Priority and Fairness
        #: filter's, added by the audit-init filter's ``send``)
        self.extra_headers: tuple[tuple[bytes, bytes], ...] = ()
        #: the response's status code once its head is sent (0 before; the audit-init filter,
        #: outermost, sees every response start and sets it): filters read it instead of each
        #: wrapping ``send``
        self.status = 0
        #: when the request arrived (seconds since the epoch; the audit-init filter sets it)
        self.received = 0.0
        #: annotations for the request's audit events: any later stage (admission) may add some
        self.audit_annotations: dict[str, str] = {}
        #: called for each event a watch stream sends (the metrics set it)
        self.count_watch_event: Callable[[], None] = _nothing
        #: whether the metrics counted this watch as long-running (a served resource's)
        self.counted_watch = False

    async def body(self) -> bytes:
        if self.read:
            return self.raw  # read once: a request retried on a large stack reads it again
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
                raise errors.entity_too_large(f"limit is {MAX_BODY}")
            chunks.append(chunk)
            if not message.get("more_body"):
                self.raw = b"".join(chunks)
                self.read = True
                return self.raw

    async def _discard(self, message: dict[str, Any]) -> None:
        """Read the rest of an oversize body (up to DISCARD_LIMIT) so the client, still sending,
        gets the 413 instead of a reset connection."""
        size = 0
        while message.get("more_body") and size < DISCARD_LIMIT:
            message = await self.receive()
            size += len(message.get("body", b""))

    def content_type(self) -> str:
        return str(self.headers.get("content-type", "")).split(";")[0].strip().lower()

    async def json(self, kind: str = "") -> Any:
        """The body as JSON (or kubectl's protobuf); ``kind`` names the expected kind in the
        error for a body nested too deep."""
        if self.content_type() == PROTOBUF:
            try:
                return protobuf.decode_request(await self.body())
            except protobuf.UnsupportedKind:
                raise errors.unsupported_media_type(["application/json", *PATCH_TYPES])
            except ValueError as exc:
                raise errors.bad_request(f"couldn't decode the protobuf request body: {exc}")
        return self._loads(await self.body(), kind)

    def _loads(self, raw: bytes, kind: str) -> Any:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if "depth limit" not in str(exc):
                raise errors.bad_request(f"couldn't decode the request body as JSON: {exc}")
        depth, bracket = decodeerrors.json_depth(raw)
        if depth > jsoncodec.MAX_DEPTH:
            raise decodeerrors.depth_error(kind or "Object", raw, bracket)
        self.deep = True
        try:
            return jsoncodec.deep(lambda: jsoncodec.strict_loads(raw))
        except ValueError as exc:
            raise errors.bad_request(f"couldn't decode the request body as JSON: {exc}")

    async def json_object(self, kind: str = "") -> dict[str, Any]:
        """A create or update body: JSON, YAML or protobuf by its Content-Type (415 for any
        other), which must be an object."""
        content_type = self.content_type()
        if content_type == YAML:
            raw = await self.body()
            try:
                body = yamlbody.load(raw)
            except yamlbody.YAMLError as exc:
                raise errors.bad_request(
                    f"the object provided is unrecognized (must be of type {kind or 'Object'}): "
                    f"{exc} ({decodeerrors.summarize(raw)})"
                )
        elif content_type in ("", "application/json", PROTOBUF):
            body = await self.json(kind)
        else:
            raise errors.unsupported_media_type(list(OBJECT_TYPES))
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


def _nothing() -> None:
    pass


async def send_json(
    send: Send,
    status: int,
    body: Any,
    headers: tuple[tuple[bytes, bytes], ...] = (),
    content_type: bytes = JSON,
) -> None:
    data = jsoncodec.dumps(body, orjson.OPT_APPEND_NEWLINE)  # kube's encoder ends with \n
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
