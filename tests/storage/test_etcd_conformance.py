"""The storage conformance suite, unchanged, against the etcd backend on a real etcd member."""

from __future__ import annotations

import itertools

import pytest

from etcdcluster import EtcdCluster
from kubelite.storage import Store, StoreOptions, open_store
from kubelite.storage.testing import StoreConformance

_prefixes = itertools.count()


class TestEtcd(StoreConformance):
    @pytest.fixture(autouse=True)
    def _etcd(self, etcd: EtcdCluster) -> None:
        self.url = etcd.url

    async def open_store(self, options: StoreOptions) -> Store:
        # Every store of every test gets a keyspace of its own on the shared member.
        return await open_store(f"{self.url}?prefix=/conformance/{next(_prefixes):06d}", options)
