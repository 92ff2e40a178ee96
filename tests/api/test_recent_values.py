"""guaranteed_update starts from the value this server last wrote; a stale guess (another server
wrote since) never loses an update, never yields a false 409 or 404, never a false no-op."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubelite.api.catalogue import ResourceInfo, load_builtin_catalogue
from kubelite.api.errors import APIError
from kubelite.api.kinds import new_registry
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import Context, DeleteOptions, Updater, WriteOptions
from kubelite.storage import Store

NS = {"metadata": {"name": "default"}}


@pytest.fixture
def cm() -> ResourceInfo:
    info = load_builtin_catalogue().lookup("", "v1", "configmaps")
    assert info is not None
    return info


async def two_servers(store: Store, cm: ResourceInfo) -> tuple[Registry, Registry]:
    """Two registries over one store: each has its own recent values, as two kubelite servers
    over one etcd do."""
    catalogue = load_builtin_catalogue()
    a, b = new_registry(store, catalogue), new_registry(store, catalogue)
    ns = load_builtin_catalogue().lookup("", "v1", "namespaces")
    assert ns is not None
    await a.create(ns, None, NS)
    await a.create(cm, "default", {"metadata": {"name": "x"}, "data": {"n": "0"}})
    return a, b


async def guaranteed_update(
    reg: Registry, cm: ResourceInfo, fn: Any
) -> tuple[dict[str, Any], bool]:
    """``fn`` applied to configmap default/x through the storage's update; (object, written)."""
    storage = reg.storage(cm)
    assert isinstance(storage, Updater)
    before = reg.recent.get("/registry/configmaps/default/x")
    obj, _ = await storage.update(Context("default"), "x", fn, WriteOptions())
    after = reg.recent.get("/registry/configmaps/default/x")
    return obj, after is not None and after is not before


def bump(field: str) -> Any:
    async def fn(current: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(current)  # an update never changes the object it is given
        data = obj.setdefault("data", {})
        data[field] = str(int(data.get(field, "0")) + 1)
        obj["metadata"].pop("resourceVersion", None)
        return obj

    return fn


async def test_a_stale_guess_loses_no_update(store: Store, cm: ResourceInfo) -> None:
    a, b = await two_servers(store, cm)
    assert a.recent.get("/registry/configmaps/default/x") is not None
    await guaranteed_update(b, cm, bump("n"))  # a's guess is now stale
    obj, written = await guaranteed_update(a, cm, bump("n"))
    assert written
    assert obj["data"]["n"] == "2"
    assert (await b.get(cm, "default", "x"))["data"]["n"] == "2"


async def test_a_stale_guess_gives_no_false_conflict(store: Store, cm: ResourceInfo) -> None:
    a, b = await two_servers(store, cm)
    fresh, _ = await guaranteed_update(b, cm, bump("n"))
    body = {**fresh, "data": {"n": "10"}}  # the client read b's write and presents its RV
    updated, _ = await a.update(cm, "default", "x", body)
    assert updated["data"] == {"n": "10"}
    stale = {**fresh, "data": {"n": "11"}}
    with pytest.raises(APIError) as err:  # now it is really stale: a true 409
        await b.update(cm, "default", "x", stale)
    assert err.value.code == 409


async def test_a_stale_guess_gives_no_false_no_op(store: Store, cm: ResourceInfo) -> None:
    a, b = await two_servers(store, cm)
    original = await a.get(cm, "default", "x")
    await guaranteed_update(b, cm, bump("n"))  # n: 1 now

    async def back_to_original(current: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(current)
        obj["data"] = {"n": "0"}  # equal to a's (stale) guess, not to the stored value
        obj["metadata"].pop("resourceVersion", None)
        return obj

    obj, written = await guaranteed_update(a, cm, back_to_original)
    assert written
    assert obj["metadata"]["resourceVersion"] != original["metadata"]["resourceVersion"]
    assert (await b.get(cm, "default", "x"))["data"] == {"n": "0"}


async def test_a_guess_for_an_object_deleted_elsewhere_gives_404(
    store: Store, cm: ResourceInfo
) -> None:
    a, b = await two_servers(store, cm)
    await b.delete(cm, "default", "x", DeleteOptions())
    with pytest.raises(APIError) as err:
        await guaranteed_update(a, cm, bump("n"))
    assert err.value.code == 404
    assert a.recent.get("/registry/configmaps/default/x") is None
