"""The storage conformance suite against the SQLite backend: in RAM and on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelite.storage import Store, StoreOptions, open_store
from kubelite.storage.testing import StoreConformance


class TestSqliteMemory(StoreConformance):
    async def open_store(self, options: StoreOptions) -> Store:
        return await open_store("sqlite://", options)


class TestSqliteDisk(StoreConformance):
    @pytest.fixture(autouse=True)
    def _dir(self, tmp_path: Path) -> None:
        self.dir = tmp_path

    async def open_store(self, options: StoreOptions) -> Store:
        return await open_store(f"sqlite://{self.dir}/state.db", options)
