"""/healthz, /livez and /readyz as kube-apiserver's healthz package serves them, on an in-process
server: the per-check listing, the final line, ?exclude, one check's own path, 200 against 500,
and the checks that fail (the store, shutdown)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubelite.server.assembly import Assembly, running
from kubelite.storage import StoreOptions, Unavailable

Response = tuple[int, dict[str, str], str]


@pytest.fixture
async def server() -> AsyncIterator[Assembly]:
    async with running("sqlite://", StoreOptions(compaction_interval_seconds=0), token=None) as s:
        yield s


async def get(server: Assembly, path: str) -> Response:
    path, _, query = path.partition("?")
    scope = {"type": "http", "method": "GET", "path": path, "query_string": query.encode()}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await server.app(scope, receive, send)
    headers = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
    body = b"".join(m.get("body", b"") for m in sent[1:]).decode()
    return sent[0]["status"], headers, body


READY_CHECKS = [
    "ping",
    "log",
    "etcd",
    "etcd-readiness",
    "informer-sync",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/bootstrap-controller",
    "shutdown",
]


def break_store(server: Assembly, monkeypatch: pytest.MonkeyPatch) -> None:
    async def check() -> None:
        raise Unavailable("the SQLite writer thread has stopped")

    monkeypatch.setattr(server.store, "check", check)


async def test_readyz_is_ok_and_verbose_lists_every_check(server: Assembly) -> None:
    status, headers, body = await get(server, "/readyz")
    assert (status, body) == (200, "ok")
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["x-content-type-options"] == "nosniff"
    status, _, body = await get(server, "/readyz?verbose")
    assert status == 200
    expected = "".join(f"[+]{name} ok\n" for name in READY_CHECKS) + "readyz check passed\n"
    assert body == expected


async def test_livez_and_healthz_have_no_readiness_checks(server: Assembly) -> None:
    for endpoint in ("livez", "healthz"):
        status, _, body = await get(server, f"/{endpoint}?verbose")
        names = [line[3:].removesuffix(" ok") for line in body.splitlines()[:-1]]
        assert status == 200
        assert names == [n for n in READY_CHECKS if n not in _READY_ONLY]
        assert body.endswith(f"{endpoint} check passed\n")


_READY_ONLY = {"etcd-readiness", "informer-sync", "shutdown"}


async def test_a_store_that_does_not_answer_fails_with_its_reason_withheld(
    server: Assembly, monkeypatch: pytest.MonkeyPatch
) -> None:
    break_store(server, monkeypatch)
    status, headers, body = await get(server, "/readyz")
    assert status == 500
    assert headers["content-type"] == "text/plain; charset=utf-8"
    lines = body.splitlines()
    assert "[-]etcd failed: reason withheld" in lines
    assert "[-]etcd-readiness failed: reason withheld" in lines
    assert "[+]ping ok" in lines
    assert lines[-1] == "readyz check failed"
    assert body.endswith("\n")
    assert (await get(server, "/livez"))[0] == 500


async def test_one_check_has_its_own_path_with_its_reason(
    server: Assembly, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert (await get(server, "/readyz/etcd"))[::2] == (200, "ok")
    break_store(server, monkeypatch)
    status, _, body = await get(server, "/livez/etcd")
    assert (status, body) == (500, "internal server error: the SQLite writer thread has stopped\n")
    assert (await get(server, "/livez/ping"))[::2] == (200, "ok")
    assert (await get(server, "/livez/shutdown"))[0] == 404  # readyz only


async def test_excluded_checks_pass_and_unknown_ones_are_named(
    server: Assembly, monkeypatch: pytest.MonkeyPatch
) -> None:
    break_store(server, monkeypatch)
    status, _, body = await get(
        server, "/readyz?verbose&exclude=etcd&exclude=etcd-readiness&exclude=nope"
    )
    assert status == 200
    lines = body.splitlines()
    assert "[+]etcd excluded: ok" in lines
    assert "[+]etcd-readiness excluded: ok" in lines
    assert lines[-2:] == [
        'warn: some health checks cannot be excluded: no matches for "nope"',
        "readyz check passed",
    ]


async def test_readyz_fails_once_the_server_is_stopping_and_livez_does_not(
    server: Assembly,
) -> None:
    server.app.shutting_down.set()
    status, _, body = await get(server, "/readyz")
    assert status == 500
    assert "[-]shutdown failed: reason withheld" in body.splitlines()
    assert (await get(server, "/livez"))[0] == 200


async def test_the_sqlite_store_check_fails_when_its_writer_has_stopped(
    server: Assembly, monkeypatch: pytest.MonkeyPatch
) -> None:
    await server.store.check()
    writer = server.store._writer  # type: ignore[attr-defined]
    monkeypatch.setattr(writer, "alive", lambda: False)
    with pytest.raises(Unavailable, match="writer thread has stopped"):
        await server.store.check()
