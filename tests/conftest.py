"""Shared by every test directory: which storage backend the API tests run on, and a real etcd.

``--storage-backend etcd`` (or ``KUBELITE_TEST_STORAGE=etcd``) makes the ``server`` fixture of
tests/server start ``kubelite serve --storage etcd://...`` over one etcd started for the session,
each test under its own key prefix. The default is SQLite.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from etcdcluster import EtcdCluster


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--storage-backend",
        choices=("sqlite", "etcd"),
        default=os.environ.get("KUBELITE_TEST_STORAGE", "sqlite"),
        help="backend for the API server tests (default: sqlite, or $KUBELITE_TEST_STORAGE)",
    )


@pytest.fixture(scope="session")
def storage_backend(request: pytest.FixtureRequest) -> str:
    return str(request.config.getoption("--storage-backend"))


@pytest.fixture(scope="session")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    """One real etcd member for the whole session (started on first use). Tests share it, each
    under a key prefix of its own; nothing durable is at stake, so it skips fsync."""
    with EtcdCluster(tmp_path_factory.mktemp("etcd"), 1, fsync=False) as cluster:
        yield cluster


@pytest.fixture
def storage_url(storage_backend: str, request: pytest.FixtureRequest) -> str | None:
    """``kubelite serve --storage`` for this test: None (SQLite in the data dir), or the
    session's etcd under a prefix of the test's own."""
    if storage_backend == "sqlite":
        return None
    cluster: EtcdCluster = request.getfixturevalue("etcd")
    return f"{cluster.url}?prefix=/api/{uuid.uuid4().hex}"
