"""JSON merge patch: RFC 7386 Appendix A, the example of section 3, and no aliasing."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubelite.api.patch.merge_patch import json_merge_patch

# RFC 7386, Appendix A: (original, patch, result), in the RFC's order.
APPENDIX_A: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("original", "patch", "expected"), APPENDIX_A)
def test_rfc7386_appendix_a(original: Any, patch: Any, expected: Any) -> None:
    assert json_merge_patch(original, patch) == expected


def test_rfc7386_section_3_example() -> None:
    original = {
        "title": "Goodbye!",
        "author": {"givenName": "John", "familyName": "Doe"},
        "tags": ["example", "sample"],
        "content": "This will be unchanged",
    }
    patch = {
        "title": "Hello!",
        "phoneNumber": "+01-123-456-7890",
        "author": {"familyName": None},
        "tags": ["example"],
    }
    assert json_merge_patch(original, patch) == {
        "title": "Hello!",
        "author": {"givenName": "John"},
        "tags": ["example"],
        "content": "This will be unchanged",
        "phoneNumber": "+01-123-456-7890",
    }


def test_inputs_are_not_mutated_and_result_shares_nothing() -> None:
    original = {"metadata": {"labels": {"a": "1"}}, "data": {"k": ["v"]}}
    patch = {"metadata": {"labels": {"b": "2", "a": None}}, "spec": {"x": [1]}}
    before = copy.deepcopy((original, patch))
    result = json_merge_patch(original, patch)
    assert (original, patch) == before
    assert result == {"metadata": {"labels": {"b": "2"}}, "data": {"k": ["v"]}, "spec": {"x": [1]}}
    result["data"]["k"].append("w")
    result["spec"]["x"].append(2)
    assert original["data"] == {"k": ["v"]}
    assert patch["spec"] == {"x": [1]}


def test_key_order_original_first_then_new_keys() -> None:
    result = json_merge_patch({"a": 1, "b": 2, "c": 3}, {"d": 4, "b": 20})
    assert list(result) == ["a", "b", "c", "d"]
