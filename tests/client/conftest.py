"""Fixtures: the same client calls against a real server over HTTPS (what ``kubelite serve``
runs, a server of the test's own on a thread of this process) and against the server app
through the client's in-process ASGI transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from client_harness import TOKEN, app_in_thread, in_process_app
from harness import Server, start_in_process, stop_server

from kubelite.client import AsyncClient, Client


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = start_in_process(tmp_path / "data")
    try:
        yield srv
    finally:
        stop_server(srv)


@pytest.fixture(params=["http", "in-process"])
async def aclient(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncClient]:
    """An AsyncClient over HTTPS to a real server, or through the ASGI transport."""
    if request.param == "http":
        srv = start_in_process(tmp_path / "data")
        try:
            async with AsyncClient.from_kubeconfig(srv.kubeconfig) as client:
                yield client
        finally:
            stop_server(srv)
    else:
        async with in_process_app() as app:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with AsyncClient(app=app, headers=headers) as client:
                yield client


@pytest.fixture(params=["http", "in-process"])
def client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Client]:
    """A Client over HTTPS to a real server, or through the ASGI transport (the app running on
    its own loop in a thread)."""
    if request.param == "http":
        srv = start_in_process(tmp_path / "data")
        try:
            with Client.from_kubeconfig(srv.kubeconfig) as c:
                yield c
        finally:
            stop_server(srv)
    else:
        with app_in_thread() as (app, loop):
            headers = {"Authorization": f"Bearer {TOKEN}"}
            with Client.in_process(app, loop, headers) as c:
                yield c
