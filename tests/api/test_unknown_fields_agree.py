"""The decoder and the strict-validation walker agree on what an unknown field is.

For a built-in kind, a request body is walked for unknown fields only when its decoder dropped
one (as in Go, where strict decoding is the decoder itself): the common body, which has none,
is not walked twice. That skips no check only if the two agree. Here, for every built-in kind,
an unknown field is put in turn at every object the kind's schema reaches (structs, maps of
structs, list items; 12 levels deep): when the decoder reports that it dropped it, the walker
must name exactly that path, and when it kept it (free-form JSON), the walker must name none.
What the decoder keeps is reported by neither."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from kubelite.api.catalogue import ResourceInfo, load_builtin_catalogue, load_schema_definitions
from kubelite.api.encoding import decoding
from kubelite.api.machinery import validation

DEFS = "#/$defs/"
UNKNOWN = "zzUnknownField"


def _resolve(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    for _ in range(32):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith(DEFS):
            schema = definitions.get(ref[len(DEFS) :]) or {}
            continue
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            schema = {**all_of[0], **{k: v for k, v in schema.items() if k != "allOf"}}
            continue
        break
    return schema


def _join(prefix: str, path: str) -> str:
    return f"{prefix}{path}" if path.startswith("[") else f"{prefix}.{path}"


def placements(
    schema: dict[str, Any], definitions: dict[str, Any], depth: int, trail: frozenset[str]
) -> Iterator[tuple[Any, str]]:
    """(body, path): a body holding one unknown field, at ``path``, for each object node."""
    resolved = _resolve(schema, definitions)
    declared = resolved.get("type")
    types = set(declared) if isinstance(declared, list) else {declared}
    properties = resolved.get("properties")
    additional = resolved.get("additionalProperties")
    if "object" in types or isinstance(properties, dict):
        if not isinstance(additional, dict):  # a map's keys are never unknown
            yield {UNKNOWN: "x"}, UNKNOWN
        if depth == 0:
            return
        for name, sub in (properties or {}).items():
            mark = f"{name}:{sub.get('$ref', '')}" if isinstance(sub, dict) else ""
            if isinstance(sub, dict) and mark not in trail:
                for body, path in placements(sub, definitions, depth - 1, trail | {mark}):
                    yield {name: body}, _join(name, path)
        if isinstance(additional, dict):
            for body, path in placements(additional, definitions, depth - 1, trail):
                yield {"key": body}, _join("key", path)
    elif "array" in types and isinstance(resolved.get("items"), dict) and depth > 0:
        for body, path in placements(resolved["items"], definitions, depth - 1, trail):
            yield [body], _join("[0]", path)


def builtin_kinds() -> list[ResourceInfo]:
    kinds: dict[str, ResourceInfo] = {}
    for info in load_builtin_catalogue():
        if decoding.builtin(info) and "/" not in info.plural:
            kinds.setdefault(info.schema_ref, info)
    return sorted(kinds.values(), key=lambda i: i.schema_ref)


@pytest.mark.parametrize("info", builtin_kinds(), ids=lambda i: i.schema_ref.rsplit(".", 2)[-1])
def test_the_decoder_drops_exactly_the_fields_strict_validation_calls_unknown(
    info: ResourceInfo,
) -> None:
    definitions = load_schema_definitions()
    cases = list(placements({"$ref": DEFS + info.schema_ref}, definitions, 12, frozenset()))
    assert cases, info.schema_ref
    kept = 0  # free-form objects (untyped JSON) keep every field, for both
    for body, path in cases:
        sent = json.dumps(body).encode()
        decoded = copy.deepcopy(body)
        try:
            dropped = decoding.check(info, decoded)
        except decoding.DecodeError:
            continue  # a skeleton Go would not read (a required type): 400 before any warning
        unknown = validation.unknown_fields(info, sent)
        assert unknown == ([path] if dropped else []), f"{info.kind}: {path} dropped: {dropped}"
        kept += not dropped
        # what the decoder keeps is free of unknown fields for both
        assert not decoding.check(info, copy.deepcopy(decoded))
        assert validation.unknown_fields(info, decoded) == []
    assert kept < len(cases) / 2, f"{info.kind}: most placements are in structs"
