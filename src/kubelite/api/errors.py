"""The API layer's one error tree, and the one mapping from errors to ``Status`` bodies.

Every failure the API reports is an :class:`APIError` carrying exactly what kube-apiserver would
put in its ``Status``: code, reason, message and details. Texts follow k8s.io/apimachinery
``pkg/api/errors/errors.go``, because kubectl and the client libraries print them and branch on
them. :func:`status_body` is the only place a Status body is built; the client turns Status bodies
back into these classes in one place too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Cause:
    reason: str
    message: str
    field: str = ""

    def as_dict(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


class APIError(Exception):
    """A failure with a Kubernetes ``Status``. ``details`` holds name/group/kind/uid/causes;
    ``metadata`` is the Status's ListMeta (an expired continue token's 410 carries a fresh
    ``continue`` token there), ``{}`` when not given."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        retry_after: int | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after
        self.metadata = metadata


def _details(
    name: str | None, group: str, kind: str, causes: list[Cause] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if name is not None:
        out["name"] = name
    if group:
        out["group"] = group
    if kind:
        out["kind"] = kind
    if causes:
        out["causes"] = [c.as_dict() for c in causes]
    return out


def qualified(resource: str, group: str) -> str:
    """``configmaps``, ``deployments.apps``: how messages name a resource."""
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, group: str, name: str) -> APIError:
    return APIError(
        404,
        "NotFound",
        f'{qualified(resource, group)} "{name}" not found',
        _details(name, group, resource),
    )


def already_exists(resource: str, group: str, name: str, *, deleting: bool = False) -> APIError:
    prefix = "object is being deleted: " if deleting else ""
    return APIError(
        409,
        "AlreadyExists",
        f'{prefix}{qualified(resource, group)} "{name}" already exists',
        _details(name, group, resource),
    )


MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def conflict(resource: str, group: str, name: str, why: str = MODIFIED) -> APIError:
    """409 Conflict on a resource (``kind`` here may be a plural or a Kind: callers choose)."""
    return APIError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        _details(name, group, resource),
    )


class StaleWrite(APIError):
    """The 409 of a write that sent resourceVersion ``sent`` while ``current`` is stored: kube's
    Conflict, to which the generic store adds what changed in between (``explained``)."""

    def __init__(self, resource: str, group: str, name: str, sent: int, current: int) -> None:
        base = conflict(resource, group, name)
        super().__init__(base.code, base.reason, base.message, base.details)
        self.sent = sent
        self.current = current

    def explained(self, causes: list[Cause]) -> StaleWrite:
        if causes:
            assert self.details is not None
            self.details["causes"] = [c.as_dict() for c in causes]
        return self


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> APIError:
    """422 Invalid: ``<Kind[.group]> "<name>" is invalid: <field>: <message>[, ...]``. An empty
    name is left out of ``details`` (kube's ``omitempty``): ``ListOptions.meta.k8s.io ""``. The
    message lists a repeated error once (ErrorList.ToAggregate); ``details.causes`` keeps all."""
    texts = list(dict.fromkeys(f"{c.field}: {c.message}" if c.field else c.message for c in causes))
    joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    return APIError(
        422,
        "Invalid",
        f'{qualified(kind, group)} "{name}" is invalid: {joined}',
        _details(name or None, group, kind, causes),
    )


def forbidden(
    resource: str, group: str, name: str, why: str, causes: list[Cause] | None = None
) -> APIError:
    return APIError(
        403,
        "Forbidden",
        f'{qualified(resource, group)} "{name}" is forbidden: {why}',
        _details(name, group, resource, causes),
    )


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def expired(message: str, metadata: dict[str, Any] | None = None) -> APIError:
    return APIError(410, "Expired", message, metadata=metadata)


def unsupported_media_type(accepted: list[str]) -> APIError:
    return APIError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
    )


def method_not_allowed() -> APIError:
    return APIError(
        405, "MethodNotAllowed", "the server does not allow this method on the requested resource"
    )


def path_not_found() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized")


def entity_too_large(message: str) -> APIError:
    """apimachinery's NewRequestEntityTooLargeError: 413 ``Request entity too large: <text>``."""
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: {message}")


def internal(message: str) -> APIError:
    """A 500 without a reason: how kube-apiserver reports errors that are not Status errors."""
    return APIError(500, "", message)


def internal_error(text: str) -> APIError:
    """apimachinery's NewInternalError: a 500 InternalError ``Internal error occurred: <text>``
    with the text as its one cause."""
    details = {"causes": [{"message": text}]}
    return APIError(500, "InternalError", f"Internal error occurred: {text}", details)


def timeout(
    message: str, causes: list[Cause] | None = None, retry_after: int | None = None
) -> APIError:
    details = _details(None, "", "", causes)
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return APIError(504, "Timeout", f"Timeout: {message}", details, retry_after=retry_after)


def success_body(message: str = "", details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``Status`` of success (a delete's answer, an admin action's); kube sends no ``code``."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}}
    body["status"] = "Success"
    if message:
        body["message"] = message
    if details is not None:
        body["details"] = details
    return body


def status_body(error: APIError) -> dict[str, Any]:
    """The ``Status`` body for an error, keys in kube-apiserver's order, empty ones left out."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": error.metadata or {},
        "status": "Failure",
        "message": error.message,
    }
    if error.reason:
        body["reason"] = error.reason
    if error.details is not None:  # kube-apiserver sends {} for some errors, nothing for others
        body["details"] = error.details
    body["code"] = error.code
    return body


# -- Go's quoting, which kube's texts use --------------------------------------------------

_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_GO_ESCAPES |= {"\v": "\\v", '"': '\\"', "\\": "\\\\"}


def go_quote(text: str) -> str:
    """Go's ``%q`` (``strconv.Quote``): printable characters as they are, the rest escaped."""
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ch < " " or ch == "\x7f":
            out.append(f"\\x{ord(ch):02x}")
        elif "\ud800" <= ch <= "\udfff":
            out.append("\\ufffd")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'
