"""A custom resource schema at work, without a server: pruning, defaulting and validation texts
for the cases the server tests do not reach."""

from __future__ import annotations

from typing import Any

import orjson

from kubelite.api.apiextensions import schema as crschema


def compiled(schema: dict[str, Any]) -> crschema.CompiledSchema:
    return crschema.compiled(orjson.dumps(schema).decode())


SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "port": {"type": "integer", "default": 80},
                        },
                    },
                },
                "when": {"type": "string", "format": "date-time"},
                "limit": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 5"}]},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }
    },
}


def test_defaults_reach_into_list_items_and_unknown_fields_are_pruned() -> None:
    schema = compiled(SCHEMA)
    obj = {"spec": {"ports": [{"name": "http", "extra": 1}], "labels": {"a": "b"}, "x": 1}}
    assert schema.prune(obj) == ["spec.ports[0].extra", "spec.x"]
    schema.default(obj)
    assert obj == {"spec": {"ports": [{"name": "http", "port": 80}], "labels": {"a": "b"}}}
    assert schema.errors(obj) == []


def test_embedded_resources_keep_their_type_meta_and_must_name_it() -> None:
    schema = compiled(SCHEMA)
    obj = {"spec": {"template": {"apiVersion": "v1", "metadata": {"name": "t"}, "any": 1}}}
    assert schema.prune(obj) == []
    causes = schema.errors(obj)
    assert [(c.field, c.message) for c in causes] == [
        ("spec.template.kind", "Required value: must not be empty")
    ]


def test_list_map_keys_are_unique() -> None:
    obj = {"spec": {"ports": [{"name": "a"}, {"name": "a"}]}}
    causes = compiled(SCHEMA).errors(obj)
    assert [(c.field, c.message) for c in causes] == [
        ("spec.ports[1]", 'Duplicate value: map[string]interface {}{"name":"a"}')
    ]


def test_formats_and_rules_without_a_message() -> None:
    schema = compiled(SCHEMA)
    causes = schema.errors({"spec": {"when": "yesterday"}})
    assert [(c.field, c.message) for c in causes] == [
        (
            "spec.when",
            'Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"',
        )
    ]
    causes = schema.errors({"spec": {"limit": 7}})
    assert [(c.field, c.message) for c in causes] == [
        ("spec.limit", "Invalid value: 7: failed rule: self < 5")
    ]
    assert schema.errors({"spec": {"limit": 4, "when": "2026-01-01T00:00:00Z"}}) == []
