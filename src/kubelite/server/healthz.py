"""``/healthz``, ``/livez`` and ``/readyz`` as kube-apiserver serves them (apiserver
pkg/server/healthz/healthz.go), each a list of named checks:

- ``GET /readyz`` runs every check: 200 ``ok``, or 500 listing each check (``[+]etcd ok``,
  ``[-]etcd failed: reason withheld``: the endpoint is public) and ``readyz check failed``.
  ``?verbose`` lists the checks on success too, ending ``readyz check passed``;
  ``?exclude=name`` (repeatable) skips a check (``[+]name excluded: ok``) and names those that
  match none (``warn: some health checks cannot be excluded: no matches for "x"``).
- ``GET /readyz/<name>`` runs one check: 200 ``ok`` or 500 ``internal server error: <reason>``.

The checks (kube-apiserver's that mean something here): ``ping``; ``log`` (the log handlers
flush); ``etcd`` (the store answers: etcd's quorum read, or SQLite's writer thread alive and a
read answered, see :meth:`Store.check`); readyz only: ``etcd-readiness`` (the same),
``informer-sync`` (the CRD controller has caught up with the store) and ``shutdown`` (failing
once the server is stopping); and the post-start hooks, done before the server serves.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qs

from kubelite.api import errors
from kubelite.server.messages import Request, Send
from kubelite.storage import Store

Check = Callable[[], Awaitable[None]]

#: kube's log check: flushed at most once a minute, failing when a flush has not finished for 2.
LOG_FLUSH_SECONDS = 60.0
LOG_BLOCKED_SECONDS = 120.0
#: a check that has not answered in this long fails (kube's storage health timeout)
CHECK_TIMEOUT = 2.0
#: kube-apiserver's post-start hooks whose work :func:`kubelite.server.assembly.assemble`
#: finishes before the server serves: they pass once it serves.
POST_START_HOOKS = (
    "start-apiextensions-informers",
    "start-apiextensions-controllers",
    "crd-informer-synced",
    "start-system-namespaces-controller",
    "bootstrap-controller",
)
TEXT = (b"content-type", b"text/plain; charset=utf-8")
NOSNIFF = (b"x-content-type-options", b"nosniff")


class CheckFailed(Exception):
    """A check's reason for failing (logged and served by ``/<endpoint>/<name>`` only)."""


@dataclass(frozen=True, slots=True)
class HealthCheck:
    name: str
    check: Check


async def ping() -> None:
    return None


class LogCheck:
    """kube's ``log`` check: the log handlers are flushed in a thread at most once a minute; the
    check fails once a flush has not finished for two minutes (a blocked stderr)."""

    def __init__(self) -> None:
        self.verified = time.monotonic()
        self._flushing: asyncio.Task[None] | None = None

    async def __call__(self) -> None:
        now = time.monotonic()
        if self._flushing is None and now - self.verified >= LOG_FLUSH_SECONDS:
            self._flushing = asyncio.create_task(self._flush())
        if now - self.verified >= LOG_BLOCKED_SECONDS:
            raise CheckFailed("logging blocked")

    async def _flush(self) -> None:
        try:
            await asyncio.to_thread(_flush_log_handlers)
            self.verified = time.monotonic()
        finally:
            self._flushing = None


def _flush_log_handlers() -> None:
    for handler in logging.getLogger().handlers:
        handler.flush()


def store_check(store: Store) -> Check:
    async def etcd() -> None:
        try:
            await asyncio.wait_for(store.check(), CHECK_TIMEOUT)
        except TimeoutError:
            raise CheckFailed("error getting data from etcd: context deadline exceeded")

    return etcd


def shutdown_check(stopping: asyncio.Event) -> Check:
    async def shutdown() -> None:
        if stopping.is_set():
            raise CheckFailed("process is shutting down")

    return shutdown


class Health:
    """The three endpoints and their checks; :meth:`serve` answers a path under any of them."""

    def __init__(self, endpoints: dict[str, list[HealthCheck]]) -> None:
        self.endpoints = endpoints

    @classmethod
    def standard(cls, store: Store, informers_synced: Check, stopping: asyncio.Event) -> Health:
        """kube-apiserver's checks, in its order."""
        log = LogCheck()
        common = [
            HealthCheck("ping", ping),
            HealthCheck("log", log),
            HealthCheck("etcd", store_check(store)),
        ]
        hooks = [HealthCheck(f"poststarthook/{name}", ping) for name in POST_START_HOOKS]
        ready = [
            *common,
            HealthCheck("etcd-readiness", store_check(store)),
            HealthCheck("informer-sync", informers_synced),
            *hooks,
            HealthCheck("shutdown", shutdown_check(stopping)),
        ]
        return cls({"healthz": [*common, *hooks], "livez": [*common, *hooks], "readyz": ready})

    def handles(self, path: str) -> bool:
        return path.lstrip("/").split("/")[0] in self.endpoints

    async def serve(self, request: Request, send: Send, path: str) -> None:
        endpoint, _, name = path.lstrip("/").partition("/")
        checks = self.endpoints[endpoint]
        if name:
            check = next((c for c in checks if c.name == name), None)
            if check is None:
                raise errors.path_not_found()
            await self._one(send, check)
            return
        await self._all(request, send, endpoint, checks)

    async def _one(self, send: Send, check: HealthCheck) -> None:
        failure = await _run(check)
        if failure is None:
            await _respond(send, 200, b"ok", nosniff=False)
        else:
            await _respond(send, 500, f"internal server error: {failure}\n".encode())

    async def _all(
        self, request: Request, send: Send, endpoint: str, checks: list[HealthCheck]
    ) -> None:
        query = parse_qs(request.scope.get("query_string", b"").decode(), keep_blank_values=True)
        excluded = set(query.get("exclude", []))
        unknown = set(excluded)
        lines: list[str] = []
        failed: list[str] = []
        for check in checks:
            if check.name in excluded:
                unknown.discard(check.name)
                lines.append(f"[+]{check.name} excluded: ok\n")
                continue
            failure = await _run(check)
            if failure is None:
                lines.append(f"[+]{check.name} ok\n")
            else:
                lines.append(f"[-]{check.name} failed: reason withheld\n")
                failed.append(f"[-]{check.name} failed: {failure}")
        if unknown:
            quoted = ",".join(f'"{name}"' for name in sorted(unknown))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}\n")
        if failed:
            logging.getLogger(__name__).info("%s check failed:\n%s", endpoint, "\n".join(failed))
            body = "".join(lines) + f"{endpoint} check failed\n"
            await _respond(send, 500, body.encode())
        elif "verbose" in query:
            await _respond(send, 200, ("".join(lines) + f"{endpoint} check passed\n").encode())
        else:
            await _respond(send, 200, b"ok")


async def _run(check: HealthCheck) -> str | None:
    """None when the check passes, else its reason."""
    try:
        await check.check()
    except Exception as exc:  # a check that raises anything has failed; never a 500 of ours
        return str(exc) or type(exc).__name__
    return None


async def _respond(send: Send, status: int, body: bytes, *, nosniff: bool = True) -> None:
    """As Go's net/http writes it: ``http.Error`` (and the handler's success) set nosniff; a
    bare ``Fprint`` of ``ok`` only gets its sniffed Content-Type."""
    headers = [TEXT, (b"content-length", str(len(body)).encode())]
    if nosniff:
        headers.append(NOSNIFF)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
