"""Fixtures shared by the API-layer tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubelite.storage import Store, StoreOptions, open_store


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    """A private SQLite store in RAM, without automatic compaction."""
    s = await open_store("sqlite://", StoreOptions(compaction_interval_seconds=0))
    try:
        yield s
    finally:
        await s.close()
