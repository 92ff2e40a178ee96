"""The filter chain and the request info every filter reads: paths parsed as kube-apiserver's
RequestInfoFactory does, and the authorization, audit and metrics slots called with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from kubelite.api.auth.authorizer import Decision
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import ADMIN, ANONYMOUS, User
from kubelite.server.app import KubeliteApp
from kubelite.server.assembly import Assembly, running
from kubelite.server.messages import Request
from kubelite.server.requestinfo import request_info
from kubelite.storage import StoreOptions

TOKEN = "filters-token"


CMS = "/api/v1/namespaces/default/configmaps"
R = RequestInfo


@pytest.mark.parametrize(
    ("method", "path", "watch", "expected"),
    [
        ("GET", CMS, False, R(CMS, "list", True, "api", "", "v1", "default", "configmaps",
                              namespace_path=True)),
        ("GET", CMS, True, R(CMS, "watch", True, "api", "", "v1", "default", "configmaps",
                             namespace_path=True)),
        ("GET", "/api/v1/watch/namespaces/default/configmaps/a", False,
         R("/api/v1/watch/namespaces/default/configmaps/a", "watch", True, "api", "", "v1",
           "default", "configmaps", name="a", namespace_path=True, legacy_watch=True)),
        ("GET", "/apis/apps/v1/deployments", False,
         R("/apis/apps/v1/deployments", "list", True, "apis", "apps", "v1", "", "deployments")),
        ("PUT", "/apis/apps/v1/namespaces/ns/deployments/web/scale", False,
         R("/apis/apps/v1/namespaces/ns/deployments/web/scale", "update", True, "apis", "apps",
           "v1", "ns", "deployments", "scale", "web", namespace_path=True)),
        ("DELETE", "/api/v1/namespaces/ns/secrets", False,
         R("/api/v1/namespaces/ns/secrets", "deletecollection", True, "api", "", "v1", "ns",
           "secrets", namespace_path=True)),
        ("POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", False,
         R("/api/v1/namespaces/ns/serviceaccounts/sa/token", "create", True, "api", "", "v1",
           "ns", "serviceaccounts", "token", "sa", namespace_path=True)),
        # the namespace itself: its namespace is its name, and it is not under a namespace path
        ("GET", "/api/v1/namespaces/team", False,
         R("/api/v1/namespaces/team", "get", True, "api", "", "v1", "team", "namespaces",
           name="team")),
        ("PUT", "/api/v1/namespaces/team/finalize", False,
         R("/api/v1/namespaces/team/finalize", "update", True, "api", "", "v1", "team",
           "namespaces", "finalize", "team")),
        ("GET", "/api/v1/namespaces", False,
         R("/api/v1/namespaces", "list", True, "api", "", "v1", "", "namespaces")),
    ],
)  # fmt: skip
def test_resource_requests(method: str, path: str, watch: bool, expected: RequestInfo) -> None:
    assert request_info(method, path, watch) == expected


@pytest.mark.parametrize("path", ["/version", "/healthz", "/api", "/apis", "/apis/apps", "/x"])
def test_non_resource_requests_take_the_method_as_verb(path: str) -> None:
    assert request_info("GET", path, False) == RequestInfo(path=path, verb="get")


class Recorder:
    """An authorizer, auditor and metrics sink that records what the chain hands it and refuses
    what ``refuse`` names."""

    def __init__(self, refuse: str) -> None:
        self.refuse = refuse
        self.authorized: list[tuple[User, RequestInfo]] = []
        self.audited: list[tuple[str, int]] = []
        self.observed: list[tuple[str, int]] = []

    def authorize(self, user: User, info: RequestInfo) -> Decision:
        self.authorized.append((user, info))
        return Decision(info.resource != self.refuse, "not today")

    def rules_for(self, user: User, namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
        return [], []

    def begin(self, request: Request) -> Recorder.Audit:
        return Recorder.Audit(self, request.info.verb)

    class Audit:
        wants_response_body = False

        def __init__(self, recorder: Recorder, verb: str) -> None:
            self.recorder, self.verb = recorder, verb

        def response_started(self, code: int) -> None: ...

        def complete(self, code: int, status: dict[str, Any] | None, body: bytes | None) -> None:
            self.recorder.audited.append((self.verb, code))

        def panic(self, exc: BaseException) -> None: ...

    def started(self, request: Request) -> None:
        self.observed.append((request.info.verb, -1))

    def observe(self, request: Request, status: int, seconds: float) -> None:
        assert seconds >= 0
        self.observed.append((request.info.verb, status))


@pytest.fixture
async def server() -> AsyncIterator[Assembly]:
    async with running("sqlite://", StoreOptions(compaction_interval_seconds=0), token=TOKEN) as s:
        yield s


async def call(
    app: KubeliteApp, method: str, path: str, token: str | None = TOKEN, body: Any = None
) -> tuple[int, Any]:
    headers = [(b"content-type", b"application/json")]
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": headers,
    }
    raw = orjson.dumps(body) if body is not None else b""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    payload = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], orjson.loads(payload) if payload.startswith(b"{") else payload


async def test_the_slots_see_every_request_with_its_info(server: Assembly) -> None:
    recorder = Recorder(refuse="secrets")
    app = KubeliteApp(
        server.registry,
        server.catalogue,
        server.authenticator,
        authorizer=recorder,
        auditor=recorder,
        metrics=recorder,
    )
    cms = "/api/v1/namespaces/default/configmaps"
    assert (await call(app, "POST", cms, body={"metadata": {"name": "a"}}))[0] == 201
    code, body = await call(app, "POST", "/api/v1/namespaces/default/secrets", body={})
    assert (code, body["reason"]) == (403, "Forbidden")
    assert (await call(app, "GET", "/version", token=None))[0] == 200
    assert (await call(app, "GET", cms, token="wrong"))[0] == 401
    user, info = recorder.authorized[0]
    assert user == ADMIN
    assert (info.verb, info.resource, info.namespace) == ("create", "configmaps", "default")
    assert recorder.authorized[2][0] == ANONYMOUS  # /version without a token
    assert recorder.audited == [("create", 201), ("create", 403), ("get", 200)]
    assert recorder.observed == [
        ("create", -1), ("create", 201), ("create", -1), ("create", 403), ("get", -1),
        ("get", 200), ("list", -1), ("list", 401),
    ]  # fmt: skip
    secrets = server.catalogue.lookup("", "v1", "secrets")
    assert secrets is not None
    listing = await server.registry.list(secrets, "default")
    assert listing["items"] == []  # refused before it reached the storage


def test_audit_ids_are_distinct_version_4_uuids() -> None:
    import uuid

    from kubelite.server.filters import new_audit_id

    ids = [new_audit_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == text
