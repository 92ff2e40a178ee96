"""kube-apiserver's max-in-flight limit and request timeout (server/overload.py), on an
in-process app: a request whose body never finishes holds its slot, so the limits can be
reached without timing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from kubelite.api.machinery.user import ADMIN, User
from kubelite.server.app import KubeliteApp
from kubelite.server.assembly import Assembly, running
from kubelite.server.overload import Limits
from kubelite.storage import StoreOptions

CMS = "/api/v1/namespaces/default/configmaps"
ALICE = User("alice", ("system:authenticated",))


class Tokens:
    """``admin`` is system:masters, ``alice`` is not."""

    async def authenticate(self, authorization: str) -> User | None:
        return {"Bearer admin": ADMIN, "Bearer alice": ALICE}.get(authorization)


@pytest.fixture
async def server() -> AsyncIterator[Assembly]:
    async with running("sqlite://", StoreOptions(compaction_interval_seconds=0), token=None) as s:
        yield s


def app(server: Assembly, limits: Limits) -> KubeliteApp:
    return KubeliteApp(server.registry, server.catalogue, Tokens(), limits=limits)


class Call:
    """One request in flight; ``stall`` keeps its body from ever finishing."""

    def __init__(
        self, app: KubeliteApp, method: str, path: str, user: str, body: Any = None
    ) -> None:
        self.sent: list[dict[str, Any]] = []
        self.received = False
        path, _, query = path.partition("?")
        scope = {
            "type": "http",
            "method": method,
            "path": path,
            "query_string": query.encode(),
            "headers": [(b"authorization", f"Bearer {user}".encode())],
        }
        self.body = orjson.dumps(body) if body is not None else b""
        self.task = asyncio.create_task(app(scope, self.receive, self.send))

    async def receive(self) -> dict[str, Any]:
        if self.body == b"stall" or self.received:
            await asyncio.Event().wait()  # the client stopped sending, or is still connected
        self.received = True
        return {"type": "http.request", "body": self.body, "more_body": False}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    async def done(self) -> tuple[int, dict[str, str], bytes]:
        await asyncio.wait_for(self.task, 30)
        headers = {k.decode(): v.decode() for k, v in self.sent[0]["headers"]}
        return self.sent[0]["status"], headers, b"".join(m.get("body", b"") for m in self.sent[1:])


def stalled(app: KubeliteApp, user: str = "alice") -> Call:
    call = Call(app, "POST", CMS, user)
    call.body = b"stall"
    return call


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_mutating_request_over_the_limit_gets_kubes_429(server: Assembly) -> None:
    limited = app(server, Limits(max_requests_inflight=0, max_mutating_requests_inflight=1))
    holder = stalled(limited)
    await settle()
    status, headers, body = await Call(limited, "POST", CMS, "alice", {"metadata": {}}).done()
    assert status == 429
    assert body == b"Too many requests, please try again later.\n"
    assert headers["retry-after"] == "1"
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["x-content-type-options"] == "nosniff"
    # reads are counted apart (and unlimited here)
    assert (await Call(limited, "GET", CMS, "alice").done())[0] == 200
    holder.task.cancel()
    await asyncio.gather(holder.task, return_exceptions=True)
    await settle()
    created = Call(limited, "POST", CMS, "alice", {"metadata": {"name": "after"}})
    assert (await created.done())[0] == 201


async def test_system_masters_is_served_over_the_limit(server: Assembly) -> None:
    limited = app(server, Limits(max_requests_inflight=1, max_mutating_requests_inflight=1))
    holder = stalled(limited)
    await settle()
    created = Call(limited, "POST", CMS, "admin", {"metadata": {"name": "by-admin"}})
    assert (await created.done())[0] == 201
    holder.task.cancel()
    await asyncio.gather(holder.task, return_exceptions=True)


async def test_watches_are_not_counted_and_reads_have_their_own_limit(server: Assembly) -> None:
    limited = app(server, Limits(max_requests_inflight=1, max_mutating_requests_inflight=1))
    watches = [Call(limited, "GET", f"{CMS}?watch=1", "alice") for _ in range(3)]
    await settle()
    assert (await Call(limited, "GET", CMS, "alice").done())[0] == 200
    assert all(not w.task.done() for w in watches)  # still watching, not refused
    for w in watches:
        w.task.cancel()
    await asyncio.gather(*(w.task for w in watches), return_exceptions=True)


async def test_a_body_that_stops_arriving_is_answered_504_after_the_request_timeout(
    server: Assembly,
) -> None:
    limited = app(server, Limits(request_timeout=0.2))
    status, _, body = await stalled(limited).done()
    assert status == 504
    status_body = orjson.loads(body)
    assert status_body["reason"] == "Timeout"
    assert status_body["message"] == (
        "Timeout: request did not complete within the allotted timeout"
    )


async def test_watches_outlive_the_request_timeout(server: Assembly) -> None:
    limited = app(server, Limits(request_timeout=0.2))
    watch = Call(limited, "GET", f"{CMS}?watch=1&timeoutSeconds=1", "alice")
    status, _, _ = await watch.done()
    assert status == 200  # ended by its own timeoutSeconds, not cut at 0.2 s
    assert watch.sent[-1].get("more_body") is not True


async def test_a_timed_out_request_leaves_its_task_uncancelled() -> None:
    """The timeout cancels the request's task; however the request ends (answered 504, or an
    error of its own), the task is not left cancelling: a connection's next request on the same
    task must not inherit it."""
    from kubelite.api.errors import APIError
    from kubelite.server.messages import Request
    from kubelite.server.overload import with_timeout

    async def swallows(request: Request, send: object) -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            raise ValueError("the handler's own error") from None

    async def waits(request: Request, send: object) -> None:
        await asyncio.sleep(5)

    scope = {"type": "http", "method": "GET", "path": "/api/v1/namespaces", "headers": []}
    for inner, expected in ((swallows, ValueError), (waits, APIError)):
        handler = with_timeout(inner, Limits(request_timeout=0.2))  # type: ignore[arg-type]
        request = Request(scope, None)  # type: ignore[arg-type]
        with pytest.raises(expected):
            await handler(request, None)  # type: ignore[arg-type]
        task = asyncio.current_task()
        assert task is not None
        assert task.cancelling() == 0
