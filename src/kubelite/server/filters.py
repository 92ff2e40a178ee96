"""The filter chain in front of routing, each concern one wrapper in a fixed order (kube-apiserver's
DefaultBuildHandlerChain):

    recovery -> request info -> metrics -> timeout -> authentication -> audit -> max in flight
    -> authorization -> routes

- **recovery** turns every error into a ``Status`` through the one mapping
  (:func:`kubelite.api.errors.status_body`): an :class:`APIError` as it is, a store that does not
  answer as 504 Timeout with Retry-After, anything else as a 500 that is logged. The server keeps
  serving.
- **request info** parses the request once (:func:`kubelite.server.requestinfo.request_info`);
  every later filter and handler reads ``request.info``.
- **authentication** sets ``request.user``: a bearer token must be valid on every path (401
  otherwise); a request without one is ``system:anonymous``, allowed only on the public paths
  (``/healthz``, ``/livez``, ``/readyz``, ``/version``) and refused with 401 elsewhere.
- **timeout** and **max in flight** are kube's overload limits
  (:mod:`kubelite.server.overload`).
- **metrics**, **audit** and **authorization** are slots: each takes an object with one method
  (:class:`Metrics`, :class:`Auditor`, :class:`Authorizer`) and passes requests through
  untouched when it has none. Later features fill them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from kubelite.api import errors
from kubelite.api.authn import ANONYMOUS, User
from kubelite.api.errors import APIError
from kubelite.api.request import RequestInfo
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


class Authorizer(Protocol):
    async def authorize(self, user: User, info: RequestInfo) -> None:
        """Raise a 403 APIError when ``user`` may not do what ``info`` asks."""
        ...


class Auditor(Protocol):
    async def record(self, user: User, info: RequestInfo, status: int) -> None: ...


class Metrics(Protocol):
    def observe(self, info: RequestInfo, status: int, seconds: float) -> None: ...


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
            log.exception("internal error serving %s %s", request.method, request.path)
            await send_error(send, errors.internal(f"Internal error occurred: {exc}"))

    return recover


def with_request_info(inner: Handler) -> Handler:
    async def parse(request: Request, send: Send) -> None:
        request.info = request_info(request.method, request.path, request.flag("watch"))
        await inner(request, send)

    return parse


def with_authentication(inner: Handler, authenticator: Authenticator | None) -> Handler:
    """``authenticator`` None: authentication is off and every request is the admin's."""
    if authenticator is None:
        return inner

    async def authenticate(request: Request, send: Send) -> None:
        header = request.headers.get("authorization")
        if header is not None:
            user = await authenticator.authenticate(header)
            if user is None:
                raise errors.unauthorized()
            request.user = user
        elif _path(request) in PUBLIC_PATHS:
            request.user = ANONYMOUS
        else:
            raise errors.unauthorized()
        await inner(request, send)

    return authenticate


def with_authorization(inner: Handler, authorizer: Authorizer | None) -> Handler:
    if authorizer is None:
        return inner

    async def authorize(request: Request, send: Send) -> None:
        await authorizer.authorize(request.user, request.info)
        await inner(request, send)

    return authorize


def with_audit(inner: Handler, auditor: Auditor | None) -> Handler:
    if auditor is None:
        return inner

    async def audit(request: Request, send: Send) -> None:
        status = _StatusRecorder(send)
        try:
            await inner(request, status)
        finally:
            await auditor.record(request.user, request.info, status.code)

    return audit


def with_metrics(inner: Handler, metrics: Metrics | None) -> Handler:
    if metrics is None:
        return inner

    async def measure(request: Request, send: Send) -> None:
        status = _StatusRecorder(send)
        started = time.perf_counter()
        try:
            await inner(request, status)
        finally:
            metrics.observe(request.info, status.code, time.perf_counter() - started)

    return measure


class _StatusRecorder:
    """A ``send`` that remembers the response's status code (0 until it starts; an error that
    escapes before is answered by recovery, outside)."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.code = 0

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.code = int(message["status"])
        await self.send(message)


def _path(request: Request) -> str:
    return request.path.rstrip("/") or "/"


def build_chain(
    routes: Handler,
    *,
    authenticator: Authenticator | None,
    authorizer: Authorizer | None = None,
    auditor: Auditor | None = None,
    metrics: Metrics | None = None,
    limits: Limits | None = None,
) -> Handler:
    """The whole chain around ``routes``, outermost first as listed in the module docstring."""
    limits = limits or Limits()
    handler = with_authorization(routes, authorizer)
    handler = with_max_in_flight(handler, limits)
    handler = with_audit(handler, auditor)
    handler = with_authentication(handler, authenticator)
    handler = with_timeout(handler, limits)
    handler = with_metrics(handler, metrics)
    handler = with_request_info(handler)
    return with_recovery(handler)
