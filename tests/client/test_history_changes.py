"""The field changes ``kubelite history --diff`` prints between two versions of an object."""

from __future__ import annotations

from kubelite.client.history import changes, timeline


def test_changed_added_and_removed_fields_in_field_order() -> None:
    before = {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "a", "old": "o"}}
    after = {
        "metadata": {"name": "a", "labels": {"x": "1", "app.kubernetes.io/name": "web"}},
        "data": {"k": "b", "n": 1},
    }
    assert changes(before, after) == [
        '+ .metadata.labels["app.kubernetes.io/name"]: "web"',
        '~ .data.k: "a" -> "b"',
        '- .data.old: "o"',
        "+ .data.n: 1",
    ]


def test_lists_by_index_and_maps_that_appear_field_by_field() -> None:
    before = {"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}
    after = {
        "spec": {
            "containers": [{"name": "c", "image": "nginx:2"}, {"name": "d", "image": "x"}],
            "selector": {"app": "web", "tier": "front"},
        }
    }
    assert changes(before, after) == [
        '~ .spec.containers[0].image: "nginx:1" -> "nginx:2"',
        '+ .spec.containers[1].name: "d"',
        '+ .spec.containers[1].image: "x"',
        '+ .spec.selector.app: "web"',
        '+ .spec.selector.tier: "front"',
    ]


def test_metadata_noise_is_left_out() -> None:
    last_applied = "kubectl.kubernetes.io/last-applied-configuration"
    before = {
        "metadata": {"resourceVersion": "1", "generation": 1, "managedFields": [{"a": 1}]},
        "spec": {"replicas": 1},
    }
    after = {
        "metadata": {
            "resourceVersion": "2",
            "generation": 2,
            "managedFields": [{"a": 2}],
            "annotations": {last_applied: "{...}", "note": "kept"},
        },
        "spec": {"replicas": 1},
    }
    assert changes(before, after) == ['+ .metadata.annotations.note: "kept"']
    assert changes(before, before) == []


def test_a_type_change_is_a_change_and_long_values_are_cut() -> None:
    assert changes({"v": 1}, {"v": True}) == ["~ .v: 1 -> true"]
    assert changes({"v": [1]}, {"v": []}) == ["- .v[0]: 1"]
    [line] = changes({}, {"v": "x" * 100})
    assert line.endswith("…")
    assert len(line) < 80


def test_timeline_columns_and_the_diff_under_each_row() -> None:
    items = [
        {"resourceVersion": "5", "time": "T1", "manager": "m", "operation": "Create",
         "object": {"data": {"k": "a"}}},
        {"resourceVersion": "12", "time": "T2", "manager": "ctl", "operation": "Update",
         "subresource": "status", "object": {"data": {"k": "b"}}},
        {"resourceVersion": "13", "time": "T3", "manager": "", "operation": "Delete",
         "object": {"data": {"k": "b"}}},
    ]  # fmt: skip
    assert timeline(items, diff=True).splitlines() == [
        "REVISION   TIME   MANAGER        OPERATION",
        "5          T1     m              Create",
        "12         T2     ctl (status)   Update",
        '    ~ .data.k: "a" -> "b"',
        "13         T3     -              Delete",
    ]
