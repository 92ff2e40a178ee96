"""JSON patch's bound on what ``copy`` operations add (evanphx/json-patch's
``AccumulatedCopySizeLimit``, kube's ``JSONPatchMaxCopyBytes``): sizes as Go's encoder writes
them, summed over the patch, refused before the copy that passes the limit."""

from __future__ import annotations

import json
from typing import Any

import jsonpatch
import jsonpointer
import pytest

from kubelite.api.patch import json_patch
from kubelite.api.patch.json_patch import MAX_COPY_BYTES, CopyLimitExceeded


def copy(source: str, target: str) -> dict[str, str]:
    return {"op": "copy", "from": source, "path": target}


def test_the_limit_is_kubes_and_the_text_json_patchs() -> None:
    assert MAX_COPY_BYTES == 3 * 1024 * 1024
    assert str(CopyLimitExceeded(3145729)) == (
        "Unable to complete the copy, the accumulated size increase of copy is 3145729, "
        "exceeding the limit 3145728"
    )


def test_a_copy_up_to_the_limit_is_applied_and_one_byte_more_is_not() -> None:
    doc = {"s": "x" * 98}  # "xx...x" is 100 bytes of JSON
    assert json_patch.apply(doc, [copy("/s", "/t")], limit=100) == {"s": doc["s"], "t": doc["s"]}
    with pytest.raises(CopyLimitExceeded) as caught:
        json_patch.apply(doc, [copy("/s", "/t")], limit=99)
    assert caught.value.accumulated == 100


def test_sizes_add_up_over_the_patch_even_when_the_copies_are_removed() -> None:
    doc = {"s": "x" * 8}  # 10 bytes
    round_trip = [copy("/s", "/t"), {"op": "remove", "path": "/t"}]
    assert json_patch.apply(doc, round_trip * 3, limit=30) == doc
    with pytest.raises(CopyLimitExceeded) as caught:
        json_patch.apply(doc, round_trip * 4, limit=30)
    assert caught.value.accumulated == 40


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"b": [1, 2.5, True, None]}, len('{"b":[1,2.5,true,null]}')),
        ("<a&b>", len('"\\u003ca\\u0026b\\u003e"')),  # Go escapes HTML characters
        ("\u2028é", len('"\\u2028é"'.encode())),  # and the line separators, not other UTF-8
        ("tab\there", len('"tab\\there"')),
    ],
)
def test_a_copied_value_is_measured_as_gos_encoder_writes_it(value: Any, size: int) -> None:
    json_patch.apply({"v": value}, [copy("/v", "/w")], limit=size)
    with pytest.raises(CopyLimitExceeded):
        json_patch.apply({"v": value}, [copy("/v", "/w")], limit=size - 1)


def test_self_doubling_copies_stop_at_the_limit_and_leave_the_document_unchanged() -> None:
    doc = {"data": {"a": "b"}}
    ops = [copy("/data", "/d")] + [copy("/d", f"/d/x{i}") for i in range(60)]
    with pytest.raises(CopyLimitExceeded) as caught:
        json_patch.apply(doc, ops)
    # the copy refused is the first past the limit: at most twice the limit was measured
    assert MAX_COPY_BYTES < caught.value.accumulated < 2 * MAX_COPY_BYTES
    assert doc == {"data": {"a": "b"}}


def test_other_failures_are_json_patchs_own() -> None:
    doc: dict[str, Any] = {"a": [1]}
    with pytest.raises(jsonpatch.JsonPatchConflict):
        json_patch.apply(doc, [copy("/missing", "/b")])
    with pytest.raises(jsonpointer.JsonPointerException):  # "-" names no item
        json_patch.apply(doc, [copy("/a/-", "/b")])
    with pytest.raises(jsonpatch.InvalidJsonPatch):  # checked before any operation is applied
        json_patch.apply(doc, [{"op": "add", "path": "/b", "value": 1}, {"op": "nope"}])
    assert json_patch.apply(doc, [{"op": "move", "from": "/a", "path": "/b"}]) == {"b": [1]}
    assert doc == {"a": [1]}


def test_nothing_is_shared_with_the_document_or_the_patch() -> None:
    doc: dict[str, Any] = {"a": {"x": [1]}}
    value = {"y": [2]}
    patched = json_patch.apply(doc, [{"op": "add", "path": "/b", "value": value}])
    patched["a"]["x"].append(3)
    patched["b"]["y"].append(4)
    assert json.dumps(doc) == '{"a": {"x": [1]}}'
    assert value == {"y": [2]}
