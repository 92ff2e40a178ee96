"""A three-member etcd on loopback for the HA tests (one per module), healed after each test, and
kubelite servers over it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from etcdcluster import EtcdCluster

sys.path.insert(0, str(Path(__file__).parents[1] / "server"))  # harness.py: a real kubelite serve

from load import Servers


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    # No fsync: a SIGKILL'd member loses nothing the kernel holds; the tests kill processes,
    # never the machine.
    with EtcdCluster(tmp_path_factory.mktemp("etcd3"), 3, fsync=False) as cluster:
        yield cluster


@pytest.fixture(autouse=True)
def heal(cluster: EtcdCluster) -> None:
    """Every test starts with all three members up."""
    for member in cluster.members:
        if not member.running:
            cluster.restart(member)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    started = Servers(tmp_path)
    try:
        yield started
    finally:
        started.stop()
