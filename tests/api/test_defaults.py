"""Defaults applied on create and update, as kube-apiserver's SetDefaults functions do."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubelite.api.catalogue import load_builtin_catalogue
from kubelite.api.kinds import new_registry
from kubelite.api.machinery.registry import Registry
from kubelite.storage import StoreOptions, open_store


@pytest.fixture
async def registry() -> AsyncIterator[Registry]:
    store = await open_store("sqlite://", StoreOptions(compaction_interval_seconds=0))
    reg = new_registry(store, load_builtin_catalogue())
    namespaces = load_builtin_catalogue().lookup("", "v1", "namespaces")
    assert namespaces is not None
    await reg.create(namespaces, None, {"metadata": {"name": "default"}})
    try:
        yield reg
    finally:
        await store.close()


async def test_secret_type_defaults_to_opaque(registry: Registry) -> None:
    info = load_builtin_catalogue().lookup("", "v1", "secrets")
    assert info is not None
    made = await registry.create(info, "default", {"metadata": {"name": "s"}})
    assert made["type"] == "Opaque"
    tls = {"tls.crt": "Y3J0", "tls.key": "a2V5"}
    typed = await registry.create(
        info, "default", {"metadata": {"name": "t"}, "type": "kubernetes.io/tls", "data": tls}
    )
    assert typed["type"] == "kubernetes.io/tls"
    updated, _ = await registry.update(info, "default", "s", {"metadata": {"name": "s"}})
    assert updated["type"] == "Opaque"


async def test_service_ports_and_type_default(registry: Registry) -> None:
    info = load_builtin_catalogue().lookup("", "v1", "services")
    assert info is not None
    made = await registry.create(
        info, "default", {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}
    )
    assert made["spec"]["type"] == "ClusterIP"
    assert made["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
