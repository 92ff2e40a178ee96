"""The request log line: kube's ``httplog`` (k8s.io/apiserver ``pkg/server/httplog``), one
``HTTP`` line per request with its fields, in its order: ``verb`` (``NormalizedVerb``: LIST,
WATCH, APPLY...), ``URI`` (path and query), ``latency`` (a Go duration), ``userAgent``,
``audit-ID``, ``srcIP`` (host:port), ``resp`` (the status code).

kube writes it at klog verbosity 3 (``withLoggingLevel``), above the ``--v=2`` production
servers run at, where only warnings and errors and start-up lines show: kubelite writes it at
DEBUG, so ``--log-level debug`` shows it and the default, info, does not. Only what the line
names is logged: never a header (the bearer token) or a body (a Secret's data).
"""

from __future__ import annotations

import logging

from kubelite.server.messages import Request
from kubelite.server.metrics import clean_scope, reported_verb

log = logging.getLogger("kubelite.httplog")


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String`` (to the microsecond): ``812.5µs``, ``1.234ms``, ``2.5s``."""
    if seconds < 1e-3:
        return _trim(f"{seconds * 1e6:.3f}") + "µs"
    if seconds < 1:
        return _trim(f"{seconds * 1e3:.6f}") + "ms"
    return _trim(f"{seconds:.9f}") + "s"


def _trim(number: str) -> str:
    return number.rstrip("0").rstrip(".") if "." in number else number


class RequestLogger:
    """The :class:`kubelite.server.filters.RequestLog`."""

    def log(self, request: Request, status: int, seconds: float) -> None:
        query = request.scope.get("query_string", b"")
        uri = f"{request.path}?{query.decode()}" if query else request.path
        client = request.scope.get("client")
        fields = {
            "verb": reported_verb(request, clean_scope(request.info)),
            "URI": uri,
            "latency": go_duration(seconds),
            "userAgent": request.headers.get("user-agent", ""),
            "audit-ID": request.audit_id,
            "srcIP": f"{client[0]}:{client[1]}" if client else "",
            "resp": status,
        }
        log.debug("HTTP", extra={"kv": fields})


def request_logger() -> RequestLogger | None:
    """A request logger when debug logging is on (the filter then costs nothing otherwise)."""
    return RequestLogger() if log.isEnabledFor(logging.DEBUG) else None
