"""A strategic merge of long lists costs what the lists hold, not its square: a patch item finds
the item it merges into through an index (apimachinery scans the list for each, and a body of
a few hundred kilobytes held the event loop for minutes), with the scan's result."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from kubelite.api.catalogue import load_schema_definitions
from kubelite.api.patch import strategic_merge as smp
from kubelite.api.patch.strategic_merge import Schema, strategic_merge


def pod_schema() -> Schema:
    return Schema.from_definitions(load_schema_definitions(), "io.k8s.api.core.v1.Pod")


def pod(containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": containers}}


def test_a_long_list_is_merged_in_time_proportional_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    token = smp._token

    def counted(value: Any) -> Any:
        nonlocal calls
        calls += 1
        return token(value)

    monkeypatch.setattr(smp, "_token", counted)
    n = 2000
    # the even items on the server; the patch adds the odd ones, deletes every fourth and
    # orders what is left
    original = pod([{"name": f"c{i}", "image": "old"} for i in range(0, n, 2)])
    kept = [f"c{i}" for i in range(n) if i % 4]
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": name} for name in kept],
            "containers": [{"name": f"c{i}", "image": "new"} for i in range(1, n, 2)]
            + [{"name": f"c{i}", "$patch": "delete"} for i in range(0, n, 4)],
        }
    }
    merged = strategic_merge(original, patch, pod_schema())
    assert [c["name"] for c in merged["spec"]["containers"]] == kept
    images = {c["name"]: c["image"] for c in merged["spec"]["containers"]}
    assert images == {f"c{i}": "new" if i % 2 else "old" for i in range(n) if i % 4}
    assert calls < 30 * n, f"{calls} identities computed for {n} items"  # the scan: n * n / 2


@pytest.mark.parametrize("seed", range(40))
def test_the_index_finds_the_item_the_scan_finds(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"c{i}" for i in range(6)]

    def item(extra: str) -> dict[str, Any]:
        return {"name": rng.choice(names), extra: [rng.randrange(3)], "image": rng.choice("ab")}

    # duplicated names on the server and in the patch, as a stored object may hold them
    original = [item("ports") for _ in range(rng.randrange(8))]
    patch = [item("args") for _ in range(rng.randrange(1, 8))]
    spec = pod_schema().field("spec")
    assert spec is not None
    containers = spec.field("containers")
    assert containers is not None
    fast = smp._merge_list(copy.deepcopy(original), copy.deepcopy(patch), containers, "c")
    slow = smp._merge_list_slowly(
        copy.deepcopy(original), copy.deepcopy(patch), "name", containers.items(), "c"
    )
    assert fast == slow
