"""The filter chain in front of routing, each concern one wrapper in a fixed order (kube-apiserver's
DefaultBuildHandlerChain):

    audit init -> recovery -> request info -> http log -> metrics -> timeout -> authentication
    -> audit -> impersonation -> priority and fairness (or max in flight) -> authorization
    -> (injected delay) -> routes

- **audit init** gives the request its audit ID (the client's ``Audit-ID`` header, else a new
  UUID) and receipt time, and returns the ID in every response's ``Audit-Id`` header
  (``WithAuditInit``).
- **recovery** turns every error into a ``Status`` through the one mapping
  (:func:`kubelite.api.errors.status_body`): an :class:`APIError` as it is, a store that does not
  answer as 504 Timeout with Retry-After, anything else as a 500 that is logged once, with the
  request's method, URI and audit ID. The server keeps serving.
- **request info** parses the request once (:func:`kubelite.server.requestinfo.request_info`);
  every later filter and handler reads ``request.info``.
- **http log** writes one line per request when debug logging is on (:mod:`.httplog`).
- **authentication** sets ``request.user``: a verified client certificate's user (x509, before
  tokens, as kube's); else a bearer token, which must be valid on every path (401
  otherwise); a request without one (or whose ``Authorization`` header is another scheme) is
  ``system:anonymous``, allowed only on the public paths (``/healthz``, ``/livez``,
  ``/readyz``, ``/version``) and refused with 401 elsewhere, or everywhere the authorizer
  allows it when anonymous requests are enabled.
- **timeout** and **max in flight** are kube's overload limits
  (:mod:`kubelite.server.overload`); **priority and fairness** takes the place of max in flight
  when the app has a flow controller and the limits enable it (kube's default:
  :mod:`kubelite.server.flowcontrol`).
- **metrics**, **audit** and **authorization** are slots: each takes an object
  (:class:`Metrics`, :class:`Auditor`, :class:`Authorizer`) and passes requests through
  untouched when it has none. :mod:`.metrics` and :mod:`.audit` fill the first two.
- **injected delay** is there only when ``--inject slow=P:DURATION`` asks for it
  (:mod:`kubelite.server.faults`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson

from kubelite.api import errors
from kubelite.api.auth.authn import CertificateError, certificate_user
from kubelite.api.auth.authorizer import Authorizer
from kubelite.api.auth.rbac import forbidden
from kubelite.api.errors import APIError
from kubelite.api.machinery.names import path_segment_errors
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.selectors import SelectorError, parse_field_selector
from kubelite.api.machinery.user import ANONYMOUS, User
from kubelite.server.faults import Faults, with_injected_delay
from kubelite.server.flowcontrol.config import FlowControl
from kubelite.server.flowcontrol.filter import with_priority_and_fairness
from kubelite.server.impersonation import with_impersonation
from kubelite.server.messages import Request, Send, send_error
from kubelite.server.overload import Limits, with_max_in_flight, with_timeout
from kubelite.server.requestinfo import request_info
from kubelite.storage import Unavailable

log = logging.getLogger(__name__)

Handler = Callable[[Request, Send], Awaitable[None]]

HEALTH_PATHS = ("/healthz", "/livez", "/readyz")
#: Paths an unauthenticated request may read (kube's AnonymousAuthConfigurableEndpoints and
#: the system:public-info-viewer role).
PUBLIC_PATHS = frozenset({*HEALTH_PATHS, "/version"})


class Authenticator(Protocol):
    async def authenticate(self, authorization: str) -> User | None:
        """The user an ``Authorization`` header names, or None when it names none."""
        ...


class AuditRecord(Protocol):
    """One audited request's events (RequestReceived is written when it is made)."""

    #: the filter hands :meth:`complete` the response body (RequestResponse level)
    wants_response_body: bool

    def response_started(self, code: int) -> None:
        """A long-running (watch) response has started: ResponseStarted."""
        ...

    def complete(self, code: int, status: dict[str, Any] | None, body: bytes | None) -> None:
        """ResponseComplete; ``status`` is an error's Status body."""
        ...

    def panic(self, exc: BaseException) -> None:
        """The request ended in an internal error: Panic."""
        ...


class Auditor(Protocol):
    def begin(self, request: Request) -> AuditRecord | None:
        """The record of ``request`` (its RequestReceived event written), None when the policy
        says None."""
        ...


class Metrics(Protocol):
    def started(self, request: Request) -> None:
        """``request`` enters (in flight, or long-running)."""
        ...

    def observe(self, request: Request, status: int, seconds: float) -> None:
        """``request`` was answered with ``status`` after ``seconds``."""
        ...


class RequestLog(Protocol):
    def log(self, request: Request, status: int, seconds: float) -> None: ...


def status_of(exc: BaseException) -> int:
    """The status recovery will answer an escaping error with."""
    if isinstance(exc, APIError):
        return exc.code
    if isinstance(exc, Unavailable):
        return 504
    return 500


AUDIT_ID_HEADER = b"audit-id"


def with_audit_init(inner: Handler) -> Handler:
    """kube's ``WithAuditInit``, and the one ``send`` wrapper of the chain: it notes the
    response's status code on the request (``request.status``) for the filters inside."""

    async def init(request: Request, send: Send) -> None:
        request.audit_id = request.headers.get("audit-id") or new_audit_id()
        request.received = time.time()
        header = (b"Audit-Id", request.audit_id.encode())

        async def send_with_id(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                request.status = int(message["status"])
                message["headers"] = [*message.get("headers", ()), header, *request.extra_headers]
            await send(message)

        await inner(request, send_with_id)

    return init


def new_audit_id() -> str:
    """A random (version 4) UUID, as text, at a tenth of ``str(uuid.uuid4())``'s cost: an audit
    ID only tells requests apart, so it needs no cryptographic randomness (no system call)."""
    bits = (random.getrandbits(128) & ~(0xF << 76) & ~(0x3 << 62)) | (0x4 << 76) | (0x2 << 62)
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def with_recovery(inner: Handler) -> Handler:
    async def recover(request: Request, send: Send) -> None:
        try:
            await inner(request, send)
        except APIError as exc:
            await send_error(send, exc)
        except Unavailable as exc:  # the store did not answer (etcd lost quorum, say): retry
            log.warning("storage unavailable serving %s %s: %s", request.method, request.path, exc)
            await send_error(send, errors.timeout(str(exc), retry_after=1))
        except Exception as exc:  # never let one request take the server down
            log.exception(
                "Internal error serving %s %s",
                request.method,
                request.path,
                extra={"kv": {"audit-ID": request.audit_id, "user": request.user.name}},
            )
            await send_error(send, errors.internal(f"Internal error occurred: {exc}"))

    return recover


def with_request_info(inner: Handler) -> Handler:
    async def parse(request: Request, send: Send) -> None:
        request.info = request_info(request.method, request.path, request.flag("watch"))
        await inner(request, send)

    return parse


def with_authentication(
    inner: Handler, authenticator: Authenticator | None, *, anonymous: bool = False
) -> Handler:
    """``authenticator`` None: authentication is off and every request is the admin's.
    ``anonymous``: a request without credentials is ``system:anonymous`` on every path (the
    authorizer decides what it may do, as kube-apiserver's anonymous authenticator); otherwise
    only on the public paths, and refused with 401 elsewhere."""
    if authenticator is None:
        return inner

    async def authenticate(request: Request, send: Send) -> None:
        header = request.headers.get("authorization")
        token = None if header is None else bearer_token(header)
        try:
            certified, refused = _certificate_user(request), False
        except CertificateError as exc:
            log.info("client certificate refused: %s", exc)
            certified, refused = None, True
        if certified is not None:
            request.user = certified
        elif token is not None:
            user = await authenticator.authenticate(f"Bearer {token}")
            if user is None:
                request.refused = True
                raise errors.unauthorized()
            request.user = user
        elif not refused and (anonymous or _path(request) in PUBLIC_PATHS):
            request.user = ANONYMOUS
        else:
            request.refused = True
            raise errors.unauthorized()
        await inner(request, send)

    return authenticate


def _certificate_user(request: Request) -> User | None:
    """The user of the request's verified client certificate (only the client-certificate
    listener, :mod:`.clientcerts`, passes one), as kube's x509 authenticator, which comes before
    its token authenticators: a certificate whose subject has no CN falls through to them, one
    out of its validity is 401 unless a token authenticates the request (kube's union of
    authenticators: the first that succeeds)."""
    tls = request.scope.get("extensions", {}).get("tls")
    if not tls or not tls["client_cert_chain"]:
        return None
    return certificate_user(tls["client_cert_chain"][0])


def bearer_token(header: str) -> str | None:
    """The token of an ``Authorization`` header as kube's bearer-token authenticator reads it
    (the scheme in any case, the token up to the next space), or None when the header carries
    none (another scheme, no token): such a request is anonymous, as one without the header."""
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


DECISION_ANNOTATION = "authorization.k8s.io/decision"
REASON_ANNOTATION = "authorization.k8s.io/reason"


def with_authorization(inner: Handler, authorizer: Authorizer | None) -> Handler:
    """kube's ``WithAuthorization``: the authorizer's decision on the request's attributes; a
    request it does not allow gets the 403 Status that names what was refused. The decision
    and its reason are the audit event's annotations."""
    if authorizer is None:
        return inner

    async def authorize(request: Request, send: Send) -> None:
        attrs = authorization_attributes(request)
        decision = authorizer.authorize(request.user, attrs)
        annotations = request.audit_annotations
        annotations[DECISION_ANNOTATION] = "allow" if decision.allowed else "forbid"
        annotations[REASON_ANNOTATION] = decision.reason
        if not decision.allowed:
            request.refused = True
            raise forbidden(request.user, attrs, decision.reason)
        await inner(request, send)

    return authorize


def authorization_attributes(request: Request) -> RequestInfo:
    """The request info, with a list or watch that pins ``metadata.name`` in its field
    selector named (kube's request info does so, so that ``resourceNames`` rules can allow a
    watch of one object): only a collection's (a request naming an object keeps its name),
    not a legacy ``/watch/`` path's (kube reads the selector only for a GET it made a list or
    watch), and only a name that is a valid path segment."""
    info = request.info
    if (
        info.verb in ("list", "watch")
        and not info.name
        and not info.legacy_watch
        and "fieldSelector" in request.query
    ):
        try:
            selector = parse_field_selector(request.query["fieldSelector"], None)
        except SelectorError:
            return info
        name = selector.exact_name()
        if name and not path_segment_errors(name):
            return info._replace(name=name)
    return info


def with_audit(inner: Handler, auditor: Auditor | None) -> Handler:
    """kube's ``WithAudit``: the policy's level for the request, its stages as it goes."""
    if auditor is None:
        return inner

    async def audit(request: Request, send: Send) -> None:
        record = auditor.begin(request)
        if record is None:
            await inner(request, send)
            return
        watch = request.info.verb == "watch"
        capture = _ResponseCapture(send, record, watch)
        try:
            await inner(request, capture)
        except (APIError, Unavailable) as exc:
            error = exc if isinstance(exc, APIError) else errors.timeout(str(exc), retry_after=1)
            record.complete(error.code, errors.status_body(error), None)
            raise
        except asyncio.CancelledError:  # the request timeout (outside) answers it 504
            error = errors.timeout("request did not complete within the allotted timeout")
            record.complete(error.code, errors.status_body(error), None)
            raise
        except Exception as exc:
            record.panic(exc)
            raise
        record.complete(capture.code, capture.status(), capture.body())

    return audit


class _ResponseCapture:
    """A ``send`` that tells the audit record when a watch's response starts, and keeps the
    body when the record wants it or the response is an error's Status."""

    def __init__(self, send: Send, record: AuditRecord, watch: bool) -> None:
        self.send = send
        self.record = record
        self.watch = watch
        self.code = 0
        self.keep = False
        self.chunks: list[bytes] = []

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.code = int(message["status"])
            if self.watch:
                self.record.response_started(self.code)
            else:
                self.keep = self.record.wants_response_body or self.code >= 400
        elif self.keep and message.get("body"):
            self.chunks.append(message["body"])
        await self.send(message)

    def status(self) -> dict[str, Any] | None:
        if self.code < 400 or not self.chunks:
            return None
        try:
            body = orjson.loads(b"".join(self.chunks))
        except orjson.JSONDecodeError:
            return None
        return body if isinstance(body, dict) else None

    def body(self) -> bytes | None:
        return b"".join(self.chunks) if self.record.wants_response_body else None


def with_metrics(inner: Handler, metrics: Metrics | None) -> Handler:
    if metrics is None:
        return inner
    return _reported(inner, metrics.observe, metrics.started)


def with_request_log(inner: Handler, request_log: RequestLog | None) -> Handler:
    """kube's ``WithHTTPLogging``: one line per request, after its response."""
    if request_log is None:
        return inner
    return _reported(inner, request_log.log)


def _reported(
    inner: Handler,
    report: Callable[[Request, int, float], None],
    start: Callable[[Request], None] | None = None,
) -> Handler:
    """``inner``, then ``report(request, status, seconds)`` however it ended: the status sent,
    or the one recovery (outside) will answer its error with."""

    async def reported(request: Request, send: Send) -> None:
        started = time.perf_counter()
        if start is not None:
            start(request)
        code = 0
        try:
            await inner(request, send)
            code = request.status
        except BaseException as exc:
            code = request.status or status_of(exc)
            raise
        finally:
            report(request, code, time.perf_counter() - started)

    return reported


def _path(request: Request) -> str:
    return request.path.rstrip("/") or "/"


def build_chain(
    routes: Handler,
    *,
    authenticator: Authenticator | None,
    authorizer: Authorizer | None = None,
    anonymous: bool = False,
    auditor: Auditor | None = None,
    metrics: Metrics | None = None,
    request_log: RequestLog | None = None,
    limits: Limits | None = None,
    faults: Faults | None = None,
    flow_control: FlowControl | None = None,
) -> Handler:
    """The whole chain around ``routes``, outermost first as listed in the module docstring."""
    limits = limits or Limits()
    handler = with_injected_delay(routes, faults)
    handler = with_authorization(handler, authorizer)
    if flow_control is not None and limits.priority_and_fairness:
        handler = with_priority_and_fairness(handler, flow_control, limits.request_timeout)
    else:
        handler = with_max_in_flight(handler, limits)
    handler = with_impersonation(handler, authorizer)
    handler = with_audit(handler, auditor)
    handler = with_authentication(handler, authenticator, anonymous=anonymous)
    handler = with_timeout(handler, limits)
    handler = with_metrics(handler, metrics)
    handler = with_request_log(handler, request_log)
    handler = with_request_info(handler)
    handler = with_recovery(handler)
    return with_audit_init(handler)
