"""The audit log (``--audit-log-path``, ``--audit-policy-file``): one ``audit.k8s.io/v1``
``Event`` per line and stage, as kube-apiserver's log backend writes them
(k8s.io/apiserver ``pkg/apis/audit/v1/types.go``, ``pkg/audit/request.go``,
``pkg/endpoints/filters/audit.go``).

The policy (:mod:`kubelite.server.auditpolicy`) picks each request's level: ``None`` writes
nothing; ``Metadata`` the user, verb, URI, source IPs, user agent, object reference, response
status and annotations; ``Request`` adds the request body; ``RequestResponse`` the response
body too. Stages: ``RequestReceived`` as the request enters, ``ResponseStarted`` when a watch's
response starts, ``ResponseComplete`` when the response is done, ``Panic`` for an internal
error; the policy's ``omitStages`` leave some out.

Fields appear in the Event's Go field order; timestamps are ``MicroTime`` (RFC 3339 with
microseconds, UTC). Annotations come from ``request.audit_annotations``, which any later stage
of the request (admission) may add to.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import sys
import threading
from typing import IO, Any

import orjson

from kubelite.api.machinery.user import User
from kubelite.server.auditpolicy import Policy, RequestAuditConfig
from kubelite.server.messages import Request

LEVEL_ORDER = {"None": 0, "Metadata": 1, "Request": 2, "RequestResponse": 3}


def micro_time(seconds: float) -> str:
    """metav1.MicroTime's JSON form: ``2006-01-02T15:04:05.000000Z``."""
    stamp = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def source_ips(request: Request) -> list[str]:
    """kube's ``utilnet.SourceIPs``: X-Forwarded-For, then X-Real-Ip, then the peer."""
    ips = [ip.strip() for ip in request.headers.get("x-forwarded-for", "").split(",")]
    ips = [ip for ip in ips if ip]
    real = request.headers.get("x-real-ip", "").strip()
    if real and real not in ips:
        ips.append(real)
    client = request.scope.get("client")
    if client and client[0] not in ips:
        ips.append(str(client[0]))
    return ips


#: how long an audit event may wait in the buffer before it is written out (kube's buffered
#: backend batches them too)
FLUSH_SECONDS = 0.05


class AuditLog:
    """The :class:`kubelite.server.filters.Auditor`: the policy and the file events go to
    (``-``: standard output)."""

    def __init__(self, policy: Policy, path: str) -> None:
        self.policy = policy
        self.path = path
        self._out: IO[bytes]
        if path == "-":
            self._out = sys.stdout.buffer
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._out = os.fdopen(fd, "ab")
        self._lock = threading.Lock()
        self._flush_pending = False

    def begin(self, request: Request) -> AuditRecord | None:
        config = self.policy.evaluate(request.user, request.info)
        if config.level == "None":
            return None
        record = AuditRecord(self, request, config)
        record.emit("RequestReceived")
        return record

    def write(self, event: dict[str, Any]) -> None:
        """Buffer the event's line; the buffer is written out within :data:`FLUSH_SECONDS`
        (a write of its own per event cost a third of a GET), or at once off the event loop."""
        line = orjson.dumps(event, option=orjson.OPT_APPEND_NEWLINE)
        with self._lock:
            self._out.write(line)
            if self._flush_pending:
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self._out.flush()
                return
            self._flush_pending = True
        loop.call_later(FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        with self._lock:
            self._flush_pending = False
            if not self._out.closed:
                self._out.flush()

    def close(self) -> None:
        self.flush()
        if self.path != "-":
            self._out.close()


class AuditRecord:
    """One request's events, at the level the policy gave it."""

    def __init__(self, log: AuditLog, request: Request, config: RequestAuditConfig) -> None:
        self.log = log
        self.request = request
        self.config = config
        self.level = LEVEL_ORDER[config.level]
        #: the filter keeps the response body for this record (RequestResponse)
        self.wants_response_body = self.level >= LEVEL_ORDER["RequestResponse"]
        self.response_status: dict[str, Any] | None = None
        self.response_body: bytes | None = None

    def response_started(self, code: int) -> None:
        self.response_status = {"metadata": {}, "code": code}
        self.emit("ResponseStarted")

    def complete(self, code: int, status: dict[str, Any] | None, body: bytes | None) -> None:
        """The response is done: ``status`` the Status body of an error, ``body`` the response
        (when :attr:`wants_response_body`)."""
        self.response_status = _response_status(code, status)
        self.response_body = body
        self.emit("ResponseComplete")

    def panic(self, exc: BaseException) -> None:
        self.response_status = {
            "metadata": {},
            "status": "Failure",
            "message": f"APIServer panic'd: {exc}",
            "reason": "InternalError",
            "code": 500,
        }
        self.emit("Panic")

    def emit(self, stage: str) -> None:
        if stage in self.config.omit_stages:
            return
        request = self.request
        info = request.info
        event: dict[str, Any] = {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": self.config.level,
            "auditID": request.audit_id,
            "stage": stage,
            "requestURI": _request_uri(request),
            "verb": info.verb,
            "user": _user(request.impersonator or request.user),
        }
        if request.impersonator is not None:
            event["impersonatedUser"] = _user(request.user)
        event["sourceIPs"] = source_ips(request)
        agent = request.headers.get("user-agent")
        if agent:
            event["userAgent"] = agent
        if info.is_resource_request:
            event["objectRef"] = _object_ref(request)
        if self.response_status is not None:
            event["responseStatus"] = self.response_status
        if self.level >= LEVEL_ORDER["Request"] and request.raw:
            obj = self._body(request.raw)
            if obj is not None:
                event["requestObject"] = obj
        if stage == "ResponseComplete" and self.response_body:
            obj = self._body(self.response_body)
            if obj is not None:
                event["responseObject"] = obj
        event["requestReceivedTimestamp"] = micro_time(request.received)
        event["stageTimestamp"] = micro_time(_now())
        if request.audit_annotations:
            event["annotations"] = dict(request.audit_annotations)
        self.log.write(event)

    def _body(self, raw: bytes) -> Any:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None  # YAML or protobuf: kube would log the decoded object
        if self.config.omit_managed_fields:
            _strip_managed_fields(obj)
        return obj


def _now() -> float:
    return datetime.datetime.now(datetime.UTC).timestamp()


def _request_uri(request: Request) -> str:
    query = request.scope.get("query_string", b"")
    return f"{request.path}?{query.decode()}" if query else request.path


def _user(user: User) -> dict[str, Any]:
    return user.info()


def _object_ref(request: Request) -> dict[str, Any]:
    """kube's ObjectReference, empty fields left out (``apiGroup`` for core)."""
    info = request.info
    ref: dict[str, Any] = {"resource": info.resource}
    if info.namespace:
        ref["namespace"] = info.namespace
    if info.name:
        ref["name"] = info.name
    if info.api_group:
        ref["apiGroup"] = info.api_group
    ref["apiVersion"] = info.api_version
    if info.subresource:
        ref["subresource"] = info.subresource
    return ref


def _response_status(code: int, status: dict[str, Any] | None) -> dict[str, Any]:
    """The bounded copy of a Status response kube keeps (status, message, reason, details,
    code), or just the code."""
    out: dict[str, Any] = {"metadata": {}}
    if status is not None and status.get("kind") == "Status":
        for key in ("status", "message", "reason", "details"):
            if status.get(key):
                out[key] = status[key]
    out["code"] = code
    return out


def _strip_managed_fields(obj: Any) -> None:
    if not isinstance(obj, dict):
        return
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    for item in obj.get("items") or ():
        _strip_managed_fields(item)
