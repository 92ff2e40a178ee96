"""The Service allocator on a store: bitmaps kept as RangeAllocation objects, compare-and-swap
under concurrent allocation, the lower band used last, exhaustion, revert and release."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import orjson
import pytest

from kubelite.api.errors import APIError
from kubelite.api.kinds.core import serviceallocation as allocation
from kubelite.api.kinds.core import servicefields
from kubelite.api.kinds.core.serviceallocation import IP_KEY, PORT_KEY, ServiceAllocator
from kubelite.storage import Store


def svc(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("ports", [{"port": 80, "protocol": "TCP"}])
    return {"metadata": {"name": name}, "spec": spec}


def test_ranges_as_kube_sizes_them() -> None:
    network, ips = allocation.ip_range("10.96.0.0/12")
    assert ips.base == int(network.network_address) + 1
    assert ips.size == 2**20 - 2
    assert ips.static_size == 256  # 10.96.0.1-10.96.1.0
    ports = allocation.port_range(30000, 32767)
    assert ports.size == 2768
    assert ports.static_size == 86


async def test_allocations_are_stored_as_range_allocations(store: Store) -> None:
    alloc = ServiceAllocator(store, rng=random.Random(1))
    obj = svc("a", clusterIP="10.96.0.10", type="NodePort")
    txn = await alloc.allocate(obj, None, dry_run=False)
    await txn.commit()
    assert obj["spec"]["clusterIPs"] == ["10.96.0.10"]
    kv = await store.get(IP_KEY)
    assert kv is not None
    body = orjson.loads(kv.value)
    assert body["kind"] == "RangeAllocation"
    assert body["range"] == "10.96.0.0/12"
    assert allocation.decode_bits(kv.value) == 1 << 9  # offset 9 = 10.96.0.10
    port = obj["spec"]["ports"][0]["nodePort"]
    assert 30086 <= port <= 32767
    ports = await store.get(PORT_KEY)
    assert ports is not None
    assert allocation.decode_bits(ports.value) == 1 << (port - 30000)
    await alloc.release(obj)
    assert allocation.decode_bits((await store.get(IP_KEY)).value) == 0  # type: ignore[union-attr]
    assert allocation.decode_bits((await store.get(PORT_KEY)).value) == 0  # type: ignore[union-attr]


async def test_concurrent_allocators_never_hand_out_one_value_twice(store: Store) -> None:
    # Two allocators over one store, as two servers over one etcd: a tiny range so they collide.
    first = ServiceAllocator(store, "10.0.0.0/27", rng=random.Random(1))
    second = ServiceAllocator(store, "10.0.0.0/27", rng=random.Random(1))
    objs = [svc(f"s{i}") for i in range(30)]
    await asyncio.gather(
        *(
            (first if i % 2 else second).allocate(obj, None, dry_run=False)
            for i, obj in enumerate(objs)
        )
    )
    ips = [obj["spec"]["clusterIP"] for obj in objs]
    assert len(set(ips)) == 30  # 32 addresses - network - broadcast
    with pytest.raises(APIError) as exc:
        await first.allocate(svc("full"), None, dry_run=False)
    assert exc.value.code == 500
    assert str(exc.value) == "failed to allocate a serviceIP: range is full"


async def test_the_lower_band_is_used_last(store: Store) -> None:
    alloc = ServiceAllocator(store, "10.0.0.0/24", rng=random.Random(3))  # band: 16 addresses
    objs = [svc(f"s{i}") for i in range(254)]
    for obj in objs:
        await alloc.allocate(obj, None, dry_run=False)
    order = [int(obj["spec"]["clusterIP"].rsplit(".", 1)[1]) for obj in objs]
    assert all(last > 16 for last in order[:238])
    assert sorted(order[238:]) == list(range(1, 17))


async def test_a_failed_allocation_reverts_what_it_took(store: Store) -> None:
    alloc = ServiceAllocator(store)
    taken = svc("t", type="NodePort", ports=[{"port": 1, "protocol": "TCP", "nodePort": 30001}])
    await alloc.allocate(taken, None, dry_run=False)
    again = svc(
        "u", clusterIP="10.96.0.50", type="NodePort",
        ports=[{"port": 1, "protocol": "TCP", "nodePort": 30001}],
    )  # fmt: skip
    with pytest.raises(APIError) as exc:
        await alloc.allocate(again, None, dry_run=False)
    assert exc.value.code == 422
    # The IP it took before the port failed is free again.
    fine = svc("v", clusterIP="10.96.0.50")
    await alloc.allocate(fine, None, dry_run=False)


async def test_dry_run_stores_nothing(store: Store) -> None:
    alloc = ServiceAllocator(store)
    obj = svc("d")
    txn = await alloc.allocate(obj, None, dry_run=True)
    assert obj["spec"]["clusterIP"]
    assert not txn.taken
    assert await store.get(IP_KEY) is None


async def test_an_update_frees_on_commit(store: Store) -> None:
    alloc = ServiceAllocator(store)
    old = svc("n", type="NodePort", ports=[{"port": 1, "protocol": "TCP", "nodePort": 30002}])
    await alloc.allocate(old, None, dry_run=False)
    new = svc("n", clusterIP=old["spec"]["clusterIP"], clusterIPs=old["spec"]["clusterIPs"])
    txn = await alloc.allocate(new, old, dry_run=False)
    assert not txn.taken
    assert allocation.decode_bits((await store.get(PORT_KEY)).value) == 1 << 2  # type: ignore[union-attr]
    await txn.commit()
    assert allocation.decode_bits((await store.get(PORT_KEY)).value) == 0  # type: ignore[union-attr]


def test_helpers_before_validation() -> None:
    old = svc("h", clusterIP="10.96.0.5", clusterIPs=["10.96.0.5"], type="NodePort")
    old["spec"]["ports"] = [{"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30005}]
    new = svc("h", type="NodePort", ports=[{"name": "a", "port": 80, "protocol": "TCP"}])
    servicefields.patch_allocated_values(new, old)
    assert new["spec"]["clusterIP"] == "10.96.0.5"
    assert new["spec"]["ports"][0]["nodePort"] == 30005
    fresh = svc("f", clusterIP="10.96.0.6")
    servicefields.normalize_cluster_ips(fresh, None)
    servicefields.init_ip_family_fields(fresh, None)
    assert fresh["spec"]["clusterIPs"] == ["10.96.0.6"]
    assert fresh["spec"]["ipFamilies"] == ["IPv4"]
    assert fresh["spec"]["ipFamilyPolicy"] == "SingleStack"
