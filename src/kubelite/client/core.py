"""The sans-I/O core shared by :class:`~kubelite.client.Client` and
:class:`~kubelite.client.AsyncClient`: requests as values, response decoding, and the watch
stream's line decoder.

Nothing here does I/O. An operation (``kubelite.client.operations``) is a generator that yields
:class:`ApiRequest` (answered with an :class:`ApiResponse`) or :class:`Sleep` (answered with
``None``) and returns its result; the sync client drives it with urllib3 and ``time.sleep``, the
async client with aiohttp (or an ASGI app) and ``asyncio.sleep``. So discovery, paging, the
conflict-retry loops and every error mapping are written once.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode

import orjson

from kubelite.client.errors import ApiError, error_from_status

T = TypeVar("T")

JSON = "application/json"
USER_AGENT = "kubelite-client/0.1"
PATCH_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """One HTTP request, before any transport sees it."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    content_type: str = JSON

    @property
    def target(self) -> str:
        """Path and query string, as sent on the request line."""
        return f"{self.path}?{urlencode(self.query)}" if self.query else self.path

    def headers(self) -> dict[str, str]:
        headers = {"Accept": JSON, "User-Agent": USER_AGENT}
        if self.body is not None:
            headers["Content-Type"] = self.content_type
        return headers


@dataclass(frozen=True, slots=True)
class ApiResponse:
    status: int
    body: bytes


@dataclass(frozen=True, slots=True)
class Sleep:
    """An operation asking its driver to wait (a retry's backoff)."""

    seconds: float


Step = ApiRequest | Sleep
Op = Generator[Step, ApiResponse | None, T]


MAX_RETRY_AFTER = 10  # client-go's limit on honouring Retry-After for one request
RETRY_AFTER_CAP = 30.0


def call(request: ApiRequest) -> Generator[Step, ApiResponse | None, ApiResponse]:
    """Send ``request`` through whichever driver runs the operation. A 429 or 5xx whose Status
    asks the client to come back (``details.retryAfterSeconds``, the server's word that it did
    not act) is sent again after that long, at most :data:`MAX_RETRY_AFTER` times, as client-go
    does."""
    for _ in range(MAX_RETRY_AFTER):
        response = yield request
        assert response is not None, "a driver answered an ApiRequest with None"
        delay = _retry_after(response)
        if delay is None:
            return response
        yield Sleep(delay)
    response = yield request
    assert response is not None, "a driver answered an ApiRequest with None"
    return response


def _retry_after(response: ApiResponse) -> float | None:
    if response.status != 429 and response.status < 500:
        return None
    seconds = error_for(response.status, response.body).retry_after
    return min(float(seconds), RETRY_AFTER_CAP) if seconds else None


def sleep(seconds: float) -> Generator[Step, ApiResponse | None, None]:
    yield Sleep(seconds)


def encode(body: Any) -> bytes:
    return orjson.dumps(body)


def error_for(status: int, body: bytes) -> ApiError:
    """The exception for a non-2xx answer (a Status body, or whatever a proxy sent)."""
    try:
        decoded: Any = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        decoded = body.decode(errors="replace")
    return error_from_status(status, decoded)


def decode(response: ApiResponse) -> Any:
    """The JSON body of a 2xx answer; the matching :class:`ApiError` for anything else."""
    if not 200 <= response.status < 300:
        raise error_for(response.status, response.body)
    return orjson.loads(response.body) if response.body else {}


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK; ``object`` the object
    (for BOOKMARK, only ``metadata.resourceVersion`` and maybe annotations)."""

    type: str
    object: dict[str, Any]

    @property
    def resource_version(self) -> str:
        return str(self.object.get("metadata", {}).get("resourceVersion", ""))


@dataclass(slots=True)
class WatchDecoder:
    """Splits a watch stream's bytes into events (one JSON object per ``\\n``-ended line).
    An ERROR event raises its Status as an :class:`ApiError` (``Expired`` for a 410), once the
    events before it (in the same chunk too) have been handed out: :meth:`feed` returns them
    and keeps the error, which :meth:`raise_error` (or the next :meth:`feed`) raises. A reader
    calls :meth:`raise_error` before it reads another chunk, since the stream ends after it."""

    _pending: bytearray = field(default_factory=bytearray)
    _error: ApiError | None = None

    def feed(self, chunk: bytes) -> list[WatchEvent]:
        self.raise_error()
        self._pending += chunk
        if b"\n" not in chunk:
            return []
        *lines, rest = bytes(self._pending).split(b"\n")
        self._pending = bytearray(rest)
        events = []
        for line in lines:
            if not line.strip():
                continue
            try:
                events.append(self._event(line))
            except ApiError as exc:  # the stream's last event: nothing after it is read
                self._error = exc
                self._pending = bytearray()
                break
        if not events:
            self.raise_error()
        return events

    def raise_error(self) -> None:
        """Raise the ERROR event read after the events :meth:`feed` last returned, if any."""
        if self._error is not None:
            raise self._error

    def _event(self, line: bytes) -> WatchEvent:
        data = orjson.loads(line)
        kind, obj = data.get("type"), data.get("object")
        if kind == "ERROR":
            code = obj.get("code", 500) if isinstance(obj, dict) else 500
            raise error_from_status(int(code), obj)
        if not isinstance(kind, str) or not isinstance(obj, dict):
            raise ValueError(f"malformed watch event: {line[:200]!r}")
        return WatchEvent(kind, obj)
