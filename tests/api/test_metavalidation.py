"""Unit tests of kubelite.api.machinery.metavalidation: kube's texts, and no exception on odd
input."""

from __future__ import annotations

from typing import Any

import pytest

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.machinery.metavalidation import (
    annotation_causes,
    create_causes,
    finalizer_causes,
    label_causes,
    owner_reference_causes,
    qualified_name_errors,
    update_causes,
)
from kubelite.api.machinery.names import subdomain_errors

BUILTIN = ResourceInfo("", "v1", "ConfigMap", "configmaps", True)
CUSTOM = ResourceInfo("example.com", "v1", "Widget", "widgets", True, builtin=False)


def test_qualified_names() -> None:
    assert qualified_name_errors("example.com/a") == []
    assert qualified_name_errors("/a") == ["prefix part must be non-empty"]
    assert qualified_name_errors("a/") == [
        "name part must be non-empty",
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]
    assert qualified_name_errors("a" * 64)[0] == "name part must be no more than 63 bytes"


def test_labels_sorted_and_values() -> None:
    causes = label_causes({"b": "-", "a b": "ok"}, "metadata.labels")
    assert [c.message.split(":")[1].strip() for c in causes] == ['"a b"', '"-"']


def test_annotation_keys_case_insensitive_and_size() -> None:
    assert annotation_causes({"Example.COM/Key": "x"}, "metadata.annotations") == []
    big = annotation_causes({"a": "x" * 262144}, "metadata.annotations")
    assert [c.message for c in big] == ["Too long: may not be more than 262144 bytes"]
    assert annotation_causes({"a": "x" * 262143}, "metadata.annotations") == []


def test_banned_owner() -> None:
    ref = {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}
    (cause,) = owner_reference_causes([ref], "metadata.ownerReferences")
    assert cause.message == (
        'Invalid value: {"apiVersion":"v1","kind":"Event","name":"e","uid":"u"}: /v1, Kind=Event '
        "is disallowed from being an owner"
    )


def test_finalizers_builtin_and_custom() -> None:
    assert finalizer_causes(["kubernetes", "orphan", "a.io/b"], "f", True, True) == []
    (custom,) = finalizer_causes(["orphan", "foregroundDeletion"], "f", False, True)
    assert custom.message == (
        'Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion '
        "cannot be both set"
    )
    assert finalizer_causes(["foo"], "f", False, True) == []
    assert [c.field for c in finalizer_causes(["foo"], "f", True, False)] == ["f[0]"]


def test_generate_name_trailing_dash_allowed() -> None:
    obj = {"metadata": {"generateName": "web-"}}
    assert create_causes(BUILTIN, obj, subdomain_errors) == []


@pytest.mark.parametrize(
    "meta",
    [
        {"labels": ["a", "b"]},
        {"labels": {"a": 1}},
        {"annotations": "x"},
        {"ownerReferences": {"a": 1}},
        {"ownerReferences": [1, None]},
        {"finalizers": "x"},
        {"finalizers": [1]},
        {"generateName": 5},
    ],
)
def test_odd_input_never_raises(meta: dict[str, Any]) -> None:
    obj = {"metadata": meta}
    for info in (BUILTIN, CUSTOM):
        create_causes(info, obj, subdomain_errors)
        update_causes(info, obj, obj)
    create_causes(BUILTIN, {"metadata": "x"}, subdomain_errors)
