"""The Endpoints controller's pure parts (pkg/controller/endpoint/endpoints_controller.go
``truncateEndpoints``, pkg/api/v1/endpoints ``RepackSubsets``): over 1000 addresses are cut to
1000, ready ones first and each subset in proportion; addresses are grouped by the ports they
serve, a ready address beats a not-ready one for the same port, and addresses are sorted (the
subsets by their first address, where kube orders them by a hash)."""

from __future__ import annotations

from typing import Any

from kubelite.api.controllers.endpoints import MAX_CAPACITY, repack, truncate


def address(ip: str, uid: str = "") -> dict[str, Any]:
    return {"ip": ip, "targetRef": {"kind": "Pod", "uid": uid or ip}}


def port(number: int, name: str = "") -> dict[str, Any]:
    return {"name": name, "port": number, "protocol": "TCP"}


def ips(listed: list[dict[str, Any]] | None) -> list[str]:
    return [a["ip"] for a in listed or []]


def test_repack_groups_by_ports_and_sorts() -> None:
    a, b, c = address("10.0.0.3"), address("10.0.0.1"), address("10.0.0.2")
    subsets = repack(
        [
            (a, port(80, "http"), True),
            (a, port(443, "https"), True),
            (b, port(80, "http"), False),
            (b, port(443, "https"), False),
            (c, port(9090, "http"), True),
        ]
    )
    assert [(ips(s.get("addresses")), ips(s.get("notReadyAddresses"))) for s in subsets] == [
        (["10.0.0.2"], []),
        (["10.0.0.3"], ["10.0.0.1"]),
    ]
    assert subsets[1]["ports"] == [port(80, "http"), port(443, "https")]
    assert "notReadyAddresses" not in subsets[0]


def test_repack_ready_wins_and_no_ports() -> None:
    a = address("10.0.0.1")
    (subset,) = repack([(a, port(80), False), (a, port(80), True)])
    assert ips(subset["addresses"]) == ["10.0.0.1"]
    assert "notReadyAddresses" not in subset
    (headless,) = repack([(address("10.0.0.9"), None, True), (address("10.0.0.8"), None, True)])
    assert ips(headless["addresses"]) == ["10.0.0.8", "10.0.0.9"]
    assert "ports" not in headless
    assert repack([]) == []


def _many(prefix: str, count: int) -> list[dict[str, Any]]:
    return [address(f"{prefix}.{i // 250}.{i % 250}") for i in range(count)]


def test_truncate_under_capacity_is_untouched() -> None:
    subsets = [{"addresses": _many("10.1", 600), "notReadyAddresses": _many("10.2", 400)}]
    assert truncate(subsets) is False
    assert len(subsets[0]["addresses"]) == 600


def test_truncate_keeps_ready_addresses_first() -> None:
    # 600 ready and 600 not ready: all ready kept, 400 not ready
    subsets = [{"addresses": _many("10.1", 600), "notReadyAddresses": _many("10.2", 600)}]
    assert truncate(subsets) is True
    assert len(subsets[0]["addresses"]) == 600
    assert len(subsets[0]["notReadyAddresses"]) == MAX_CAPACITY - 600


def test_truncate_ready_in_proportion() -> None:
    # kube's case: 1500 ready in two subsets (1000 and 500), not ready dropped
    subsets = [
        {"addresses": _many("10.1", 1000), "notReadyAddresses": _many("10.3", 10)},
        {"addresses": _many("10.2", 500)},
    ]
    assert truncate(subsets) is True
    assert [len(s["addresses"]) for s in subsets] == [667, 333]
    assert all("notReadyAddresses" not in s for s in subsets)
