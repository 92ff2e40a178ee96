"""The client's one exception tree, built from the server's ``Status`` in one function.

::

    ApiError                      any non-2xx answer, or an ERROR event in a watch
    ├── BadRequest                400
    ├── Unauthorized              401
    ├── Forbidden                 403
    ├── NotFound                  404
    ├── MethodNotAllowed          405
    ├── AlreadyExists             409, reason AlreadyExists
    ├── Conflict                  409, reason Conflict (or any other 409), with ``changes``
    ├── Expired (alias Gone)      410, reason Expired or Gone: history compacted, relist
    ├── UnsupportedMediaType      415
    ├── Invalid                   422, with ``causes``
    ├── TooManyRequests           429, with ``retry_after``
    └── ServerError               5xx
        └── ServerTimeout         504

    MergeConflict                 a three-way merge found the same field changed on both sides
    ResourceNotFound              discovery knows no such apiVersion/kind (a client-side lookup)

Every ``ApiError`` keeps the ``Status`` it was made from (``.status``), its ``code``, ``reason`` and
``message``. The reason decides the class when it is known (as client-go's ``ReasonForError``
does); the HTTP code decides otherwise, so a Status-less 409 from a proxy is still a Conflict.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class ApiError(Exception):
    """A failed request: the server's ``Status`` and the HTTP code it came with."""

    def __init__(self, code: int, status: Mapping[str, Any]) -> None:
        self.code = code
        self.status: dict[str, Any] = dict(status)
        self.reason: str = str(status.get("reason", ""))
        self.message: str = str(status.get("message", ""))
        super().__init__(f"({code}) {self.reason or 'Error'}: {self.message}")

    @property
    def details(self) -> dict[str, Any]:
        details = self.status.get("details")
        return details if isinstance(details, dict) else {}

    @property
    def causes(self) -> list[dict[str, Any]]:
        causes = self.details.get("causes")
        return [c for c in causes if isinstance(c, dict)] if isinstance(causes, list) else []

    @property
    def retry_after(self) -> int | None:
        seconds = self.details.get("retryAfterSeconds")
        return seconds if isinstance(seconds, int) and seconds > 0 else None


class BadRequest(ApiError):
    pass


class Unauthorized(ApiError):
    pass


class Forbidden(ApiError):
    pass


class NotFound(ApiError):
    pass


class MethodNotAllowed(ApiError):
    pass


class AlreadyExists(ApiError):
    pass


@dataclass(frozen=True, slots=True)
class FieldChange:
    """A field that changed between the version a refused write sent and the stored one, as a
    kubelite server explains its 409s: ``change`` is ``changed``, ``added`` or ``removed``;
    ``manager`` the field manager that made it ("" when the server could not tell);
    ``resource_version`` the write that made it ("" when only known to be after the sent one)."""

    field: str
    change: str
    manager: str
    resource_version: str


_CHANGE = re.compile(
    r'(?P<change>changed|added|removed)(?: by "(?P<manager>.*)")?'
    r" (?:at resourceVersion (?P<rv>\d+)|since resourceVersion \d+)"
)


class Conflict(ApiError):
    """The object changed since it was read (409): re-read, re-apply, retry. ``changes``
    lists what changed (kubelite's servers say; a cluster's 409 has none). From a
    server-side apply (``apply()``): fields another manager owns; ``causes`` lists each as
    ``{"reason": "FieldManagerConflict", "field": ".data.k", "message": 'conflict with "bob"'}``
    (apply again with ``force=True`` to take them, or leave them out)."""

    @property
    def changes(self) -> list[FieldChange]:
        """Each field changed since the version the write sent, from the Status's causes."""
        out = []
        for cause in self.causes:
            found = _CHANGE.fullmatch(str(cause.get("message", "")))
            if cause.get("reason") == "FieldValueChanged" and cause.get("field") and found:
                change, manager, revision = found.group("change", "manager", "rv")
                out.append(FieldChange(str(cause["field"]), change, manager or "", revision or ""))
        return out


class Expired(ApiError):
    """The requested resourceVersion is older than the server's history (410): relist."""


Gone = Expired


class UnsupportedMediaType(ApiError):
    pass


class Invalid(ApiError):
    pass


class TooManyRequests(ApiError):
    pass


class ServerError(ApiError):
    pass


class ServerTimeout(ServerError):
    pass


class MergeConflict(Exception):
    """A three-way merge found fields that both the caller and someone else changed
    (differently) since the base was read. ``fields`` are dotted paths, e.g. ``spec.replicas``."""

    def __init__(self, fields: list[str]) -> None:
        self.fields = fields
        super().__init__("both sides changed " + ", ".join(fields))


class ResourceNotFound(LookupError):
    """The server's discovery documents list no resource for this apiVersion and kind."""


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Expired": Expired,
    "Gone": Expired,
    "UnsupportedMediaType": UnsupportedMediaType,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "Timeout": ServerTimeout,
    "InternalError": ServerError,
    "ServiceUnavailable": ServerError,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Expired,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    504: ServerTimeout,
}


def error_from_status(code: int, status: Any) -> ApiError:
    """The exception for an answer with HTTP ``code`` and body ``status`` (a Status dict, or
    anything else a non-Kubernetes proxy may have sent)."""
    if not isinstance(status, dict) or status.get("kind") != "Status":
        status = {"kind": "Status", "status": "Failure", "code": code, "message": str(status)}
    reason = str(status.get("reason", ""))
    cls = _BY_REASON.get(reason) or _BY_CODE.get(code)
    if cls is None:
        cls = ServerError if code >= 500 else ApiError
    return cls(code, status)
