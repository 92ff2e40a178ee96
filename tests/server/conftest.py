"""Fixtures: a real ``kubelite serve --port 0`` per test, in a temp dir, on the storage backend
chosen with ``--storage-backend`` (tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Server, start_server, stop_server


@pytest.fixture
def server(tmp_path: Path, storage_url: str | None) -> Iterator[Server]:
    srv = start_server(tmp_path / "data", storage_url)
    try:
        yield srv
    finally:
        stop_server(srv)
