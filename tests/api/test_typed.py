"""Objects walked by their shape (api/fieldmanager/typed, api/fieldmanager/shapes): field sets of
apply configurations, comparisons, merges and removals, with cases ported from
structured-merge-diff's typed tests (typed/toset_test.go, symdiff_test.go, merge_test.go,
remove_test.go; fieldpath/set_test.go TestEnsureNamedFieldsAreMembers) and worked examples
of kube's apply, plus Hypothesis properties."""

from __future__ import annotations

import json
from pathlib import Path as FsPath
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.fieldmanager import fieldpath as fp
from kubelite.api.fieldmanager import shapes, typed
from kubelite.api.fieldmanager.fieldpath import FieldSet, Path
from kubelite.api.fieldmanager.shapes import Shape
from kubelite.api.fieldmanager.typed import MISSING, TypedError

# -- shapes ---------------------------------------------------------------------------------------

STR = {"type": "string"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}


def set_of(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item, "x-kubernetes-list-type": "set"}


def list_map(keys: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": keys,
        "items": {"type": "object", "properties": properties},
    }


#: structured-merge-diff's test types as one custom resource schema: "stringPair" (key, value),
#: "struct grab bag" (numeric ... args), "associative list" (list, atomicList), the null/empty
#: cases (inner, innerMap, innerList), and a few more.
WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "key": STR,
        "value": {},  # untyped
        "numeric": NUM,
        "string": STR,
        "bool": BOOL,
        "setStr": set_of(STR),
        "setBool": set_of(BOOL),
        "setNumeric": set_of(NUM),
        "color": {
            "type": "object",
            "x-kubernetes-map-type": "atomic",
            "properties": {"R": NUM, "G": NUM, "B": NUM},
        },
        "arbitraryWavelengthColor": {
            "type": "object",
            "x-kubernetes-map-type": "atomic",
            "additionalProperties": NUM,
        },
        "args": {
            "type": "array",
            "items": {"type": "object", "properties": {"key": STR, "value": STR}},
        },
        "list": list_map(
            ["key", "id"],
            {
                "key": STR,
                "id": NUM,
                "value": {"type": "object", "additionalProperties": STR},
                "bv": BOOL,
                "nv": NUM,
            },
        ),
        "atomicList": {"type": "array", "items": STR},
        "inner": {"type": "object", "properties": {"value": {}}},
        "innerMap": {"type": "object", "additionalProperties": {}},
        "innerList": {"type": "array", "items": {}},
        "labels": {"type": "object", "additionalProperties": STR},
        "ports": list_map(
            ["name", "protocol"],
            {"name": STR, "protocol": {"type": "string", "default": "TCP"}, "port": NUM},
        ),
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "mapOfLists": {"type": "object", "additionalProperties": set_of(STR)},
        "mapOfMaps": {
            "type": "object",
            "additionalProperties": {"type": "object", "additionalProperties": STR},
        },
    },
}


def custom_shape(kind: str, schema: dict[str, Any]) -> Shape:
    info = ResourceInfo(
        "example.com",
        "v1",
        kind,
        kind.lower() + "s",
        True,
        builtin=False,
        schema=json.dumps(schema),
    )
    return shapes.shape_of(info)


WIDGET = custom_shape("Widget", WIDGET_SCHEMA)


def nested(depth: int) -> dict[str, Any]:
    """set_test.go's recursive ``nestedSchema`` unrolled ``depth`` levels (a CRD schema has no
    references): a map of itself with fields keyAStr, keyBInt, named, list, a and value."""
    node: dict[str, Any] = {
        "type": "object",
        "properties": {"keyAStr": STR, "keyBInt": NUM, "value": NUM},
    }
    if depth > 0:
        sub = nested(depth - 1)
        node["properties"] |= {
            "named": sub,
            "a": sub,
            "list": {**list_map(["keyAStr", "keyBInt"], {}), "items": sub},
        }
        node["additionalProperties"] = sub
    return node


NESTED = custom_shape("Nested", nested(3))


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Catalogue:
    return load_builtin_catalogue(FsPath(tmp_path_factory.mktemp("cache")))


def builtin(catalogue: Catalogue, group: str, version: str, plural: str) -> Shape:
    info = catalogue.lookup(group, version, plural)
    assert info is not None, (group, version, plural)
    return shapes.shape_of(info)


@pytest.fixture(scope="module")
def deployment(catalogue: Catalogue) -> Shape:
    return builtin(catalogue, "apps", "v1", "deployments")


@pytest.fixture(scope="module")
def pod(catalogue: Catalogue) -> Shape:
    return builtin(catalogue, "", "v1", "pods")


@pytest.fixture(scope="module")
def configmap(catalogue: Catalogue) -> Shape:
    return builtin(catalogue, "", "v1", "configmaps")


@pytest.fixture(scope="module")
def service(catalogue: Catalogue) -> Shape:
    return builtin(catalogue, "", "v1", "services")


# -- helpers --------------------------------------------------------------------------------------


def P(*parts: Any) -> Path:
    """A path the way structured-merge-diff's tests write one (``_P``): strings are fields,
    dicts list-map keys, ``V(x)`` set values."""
    out = []
    for part in parts:
        if isinstance(part, dict):
            out.append(fp.key(part))
        elif isinstance(part, V):
            out.append(fp.value(part.item))
        else:
            out.append(fp.field(part))
    return tuple(out)


class V:
    def __init__(self, item: Any) -> None:
        self.item = item


def S(*paths: Path) -> FieldSet:
    return FieldSet.of(*paths)


def K(key: str, id: int) -> dict[str, Any]:
    return {"key": key, "id": id}


def _nothing(c: typed.Comparison) -> bool:
    return c.added.empty() and c.modified.empty() and c.removed.empty()


def j(text: str) -> Any:
    return json.loads(text)


# -- to_set: the field set of an apply configuration ----------------------------------------------

TO_SET_CASES = [
    # toset_test.go "simple pair" (value untyped: a map in it is granular, as kube deduces)
    ('{"key":"foo","value":1}', S(P("key"), P("value"))),
    ('{"key":"foo","value":{"a": "b"}}', S(P("key"), P("value", "a"))),
    ('{"key":"foo","value":null}', S(P("key"), P("value"))),
    ('{"key":"foo"}', S(P("key"))),
    ('{"key":"foo","value":true}', S(P("key"), P("value"))),
    ('{"value":[1, {"a": 1}]}', S(P("value"))),  # untyped lists are atomic
    # "struct grab bag"
    ('{"numeric":1}', S(P("numeric"))),
    ('{"numeric":3.14159}', S(P("numeric"))),
    ('{"string":"aoeu"}', S(P("string"))),
    ('{"bool":true}', S(P("bool"))),
    ('{"bool":false}', S(P("bool"))),
    ('{"setStr":["a","b","c"]}', S(P("setStr", V("a")), P("setStr", V("b")), P("setStr", V("c")))),
    ('{"setBool":[true,false]}', S(P("setBool", V(True)), P("setBool", V(False)))),
    (
        '{"setNumeric":[1,2,3,3.14159]}',
        S(*(P("setNumeric", V(n)) for n in (1, 2, 3, 3.14159))),
    ),
    ('{"setStr":[]}', S()),
    ('{"setStr":null}', S(P("setStr"))),
    ('{"color":{}}', S(P("color"))),
    ('{"color":null}', S(P("color"))),
    ('{"color":{"R":255,"G":0,"B":0}}', S(P("color"))),
    ('{"arbitraryWavelengthColor":{}}', S(P("arbitraryWavelengthColor"))),
    ('{"arbitraryWavelengthColor":null}', S(P("arbitraryWavelengthColor"))),
    ('{"arbitraryWavelengthColor":{"IR":255}}', S(P("arbitraryWavelengthColor"))),
    ('{"args":[]}', S(P("args"))),
    ('{"args":null}', S(P("args"))),
    ('{"args":[null]}', S(P("args"))),
    ('{"args":[{"key":"a","value":"b"},{"key":"c","value":"d"}]}', S(P("args"))),
    # "associative list"
    ('{"list":[]}', S()),
    (
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
        S(
            P("list", K("a", 1)),
            P("list", K("a", 1), "key"),
            P("list", K("a", 1), "id"),
            P("list", K("a", 1), "value", "a"),
        ),
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"a","id":2},{"key":"b","id":1}]}',
        S(
            *(P("list", K(k, i)) for k, i in (("a", 1), ("a", 2), ("b", 1))),
            *(
                P("list", K(k, i), f)
                for k, i in (("a", 1), ("a", 2), ("b", 1))
                for f in ("key", "id")
            ),
        ),
    ),
    ('{"atomicList":["a","a","a"]}', S(P("atomicList"))),
    # declared struct fields: members only when null or {}; map keys always
    ('{"inner":{"value":1}}', S(P("inner", "value"))),
    ('{"inner":{}}', S(P("inner"))),
    ('{"inner":null}', S(P("inner"))),
    ('{"labels":{"a":"b"}}', S(P("labels", "a"))),
    ('{"labels":{}}', S(P("labels"))),
    ('{"free":{"x":{"y":1},"z":{}}}', S(P("free", "x"), P("free", "x", "y"), P("free", "z"))),
    ('{"mapOfMaps":{"b":{"a":"x"}}}', S(P("mapOfMaps", "b"), P("mapOfMaps", "b", "a"))),
    # list-map key fields default from the schema (protocol: TCP)
    (
        '{"ports":[{"name":"http","port":80},{"name":"dns","protocol":"UDP"}]}',
        S(
            P("ports", {"name": "http", "protocol": "TCP"}),
            P("ports", {"name": "http", "protocol": "TCP"}, "name"),
            P("ports", {"name": "http", "protocol": "TCP"}, "port"),
            P("ports", {"name": "dns", "protocol": "UDP"}),
            P("ports", {"name": "dns", "protocol": "UDP"}, "name"),
            P("ports", {"name": "dns", "protocol": "UDP"}, "protocol"),
        ),
    ),
    (
        '{"ports":[{"protocol":"SCTP"}]}',
        S(P("ports", {"protocol": "SCTP"}), P("ports", {"protocol": "SCTP"}, "protocol")),
    ),
]


@pytest.mark.parametrize(("config", "expected"), TO_SET_CASES, ids=[c for c, _ in TO_SET_CASES])
def test_to_set(config: str, expected: FieldSet) -> None:
    assert typed.to_set(j(config), WIDGET) == expected


def test_to_set_lenient_drops_repeated_set_items() -> None:
    config = j('{"setStr":["a","b","c","a","b","c","c"],"setBool":[true,false,true]}')
    assert typed.to_set(config, WIDGET, strict=False) == S(
        P("setStr", V("a")),
        P("setStr", V("b")),
        P("setStr", V("c")),
        P("setBool", V(True)),
        P("setBool", V(False)),
    )


def test_to_set_lenient_duplicated_items_are_members_only() -> None:
    """toset_test.go "associative list", last case (parsed with AllowDuplicates)."""
    config = j(
        '{"list":[{"key":"a","id":1,"nv":2},{"key":"a","id":2,"nv":3},{"key":"b","id":1},'
        '{"key":"a","id":2,"bv":true}]}'
    )
    assert typed.to_set(config, WIDGET, strict=False) == S(
        P("list", K("a", 1)),
        P("list", K("a", 1), "key"),
        P("list", K("a", 1), "id"),
        P("list", K("a", 1), "nv"),
        P("list", K("a", 2)),
        P("list", K("b", 1)),
        P("list", K("b", 1), "key"),
        P("list", K("b", 1), "id"),
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ('{"nope":1}', ".nope: field not declared in schema"),
        ('{"inner":{"nope":1}}', ".inner.nope: field not declared in schema"),
        ('{"numeric":{"a":1}}', '.numeric: expected scalar, got {"a":1}'),
        ('{"labels":[1]}', ".labels: expected map, got [1]"),
        ('{"setStr":"a"}', '.setStr: expected list, got "a"'),
        ('{"setStr":["a","a"]}', '.setStr: duplicate entries for key [="a"]'),
        (
            '{"list":[{"key":"a","id":1},{"id":1,"key":"a"}]}',
            '.list: duplicate entries for key [id=1,key="a"]',
        ),
        (
            '{"list":[{"nv":1}]}',
            ".list: associative list with keys has an element that omits all key fields "
            '["key" "id"] (and doesn\'t have default values for any key fields)',
        ),
        ('{"list":[null]}', ".list: associative list with keys may not have a null element"),
        ('{"list":[1]}', ".list: associative list with keys may not have non-map elements"),
        (
            '{"setStr":[{"a":1}]}',
            ".setStr: associative list without keys has an element that's a map type",
        ),
        ('{"setStr":[["a"]]}', ".setStr: not supported: associative list with lists as elements"),
        (
            '{"setStr":[null]}',
            ".setStr: associative list without keys has an element that's an explicit null",
        ),
    ],
)
def test_to_set_rejects_invalid_configurations(config: str, message: str) -> None:
    with pytest.raises(TypedError) as raised:
        typed.to_set(j(config), WIDGET)
    assert str(raised.value) == message


def test_to_set_lenient_treats_undeclared_fields_as_untyped() -> None:
    assert typed.to_set(j('{"nope":{"a":1}}'), WIDGET, strict=False) == S(P("nope"), P("nope", "a"))


def test_to_set_deployment(deployment: Shape) -> None:
    """Spec §11.8: selector atomic, containers keyed by name, ports by (containerPort,
    protocol) with protocol defaulted (§11.10)."""
    config = {
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "w"}},
            "template": {
                "metadata": {"labels": {"app": "w"}},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]}
                    ]
                },
            },
        }
    }
    assert typed.to_set(config, deployment).to_fields_v1() == {
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},
            "f:template": {
                "f:metadata": {"f:labels": {"f:app": {}}},
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"app"}': {
                            ".": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {
                                'k:{"containerPort":80,"protocol":"TCP"}': {
                                    ".": {},
                                    "f:containerPort": {},
                                }
                            },
                        }
                    }
                },
            },
        }
    }


def test_to_set_pod_list_types(pod: Shape) -> None:
    """Spec §7: finalizers a set, ownerReferences keyed by uid (an atomic struct), args and
    tolerations atomic, env keyed by name, volumeMounts by mountPath, labels granular."""
    config = {
        "metadata": {
            "labels": {"x": "y"},
            "finalizers": ["example.com/a", "b"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "n", "uid": "u1"}],
        },
        "spec": {
            "tolerations": [{"key": "k"}],
            "containers": [
                {
                    "name": "c",
                    "args": ["a"],
                    "env": [{"name": "E", "value": "1"}],
                    "volumeMounts": [{"name": "v", "mountPath": "/m"}],
                }
            ],
        },
    }
    assert typed.to_set(config, pod).to_fields_v1() == {
        "f:metadata": {
            "f:finalizers": {'v:"b"': {}, 'v:"example.com/a"': {}},
            "f:labels": {"f:x": {}},
            "f:ownerReferences": {'k:{"uid":"u1"}': {}},
        },
        "f:spec": {
            "f:containers": {
                'k:{"name":"c"}': {
                    ".": {},
                    "f:args": {},
                    "f:env": {'k:{"name":"E"}': {".": {}, "f:name": {}, "f:value": {}}},
                    "f:name": {},
                    "f:volumeMounts": {
                        'k:{"mountPath":"/m"}': {".": {}, "f:mountPath": {}, "f:name": {}}
                    },
                }
            },
            "f:tolerations": {},
        },
    }


def test_to_set_service_ports_default_protocol(service: Shape) -> None:
    config = {"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}}
    assert typed.to_set(config, service).to_fields_v1() == {
        "f:spec": {
            "f:ports": {
                'k:{"port":53,"protocol":"UDP"}': {".": {}, "f:port": {}, "f:protocol": {}},
                'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}},
            }
        }
    }


def test_to_set_custom_resource_list_types() -> None:
    """Spec §11.12."""
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "tags": set_of(STR),
                    "ports": list_map(["name"], {"name": STR, "port": {"type": "integer"}}),
                    "cfg": {
                        "type": "object",
                        "x-kubernetes-map-type": "atomic",
                        "additionalProperties": STR,
                    },
                    "items": {"type": "array", "items": {"type": "integer"}},
                },
            }
        },
    }
    config = {
        "spec": {
            "tags": ["x", "y"],
            "ports": [{"name": "http", "port": 80}],
            "cfg": {"k": "v"},
            "items": [1, 2],
        }
    }
    got = typed.to_set(config, custom_shape("Thing", schema)).to_fields_v1()
    assert json.dumps(got, separators=(",", ":")) == (
        '{"f:spec":{"f:cfg":{},"f:items":{},"f:ports":{"k:{\\"name\\":\\"http\\"}":'
        '{".":{},"f:name":{},"f:port":{}}},"f:tags":{"v:\\"x\\"":{},"v:\\"y\\"":{}}}}'
    )


# -- compare --------------------------------------------------------------------------------------

# symdiff_test.go: (lhs, rhs, removed, modified, added)
COMPARE_CASES = [
    # "simple pair"
    ('{"key":"foo","value":1}', '{"key":"foo","value":1}', S(), S(), S()),
    ('{"key":"foo","value":{}}', '{"key":"foo","value":1}', S(), S(P("value")), S()),
    ('{"key":"foo","value":1}', '{"key":"foo","value":{}}', S(), S(P("value")), S()),
    ('{"key":"foo","value":null}', '{"key":"foo","value":{}}', S(), S(P("value")), S()),
    ('{"key":"foo"}', '{"value":true}', S(P("key")), S(), S(P("value"))),
    ('{"key":"foot"}', '{"key":"foo","value":true}', S(), S(P("key")), S(P("value"))),
    # "null/empty map", "null/empty struct", "null/empty list": empty on both sides is a leaf
    *(
        case
        for field in ("innerMap", "inner")
        for case in [
            ("{}", f'{{"{field}":{{}}}}', S(), S(), S(P(field))),
            ("{}", f'{{"{field}":null}}', S(), S(), S(P(field))),
            (f'{{"{field}":null}}', f'{{"{field}":{{}}}}', S(), S(P(field)), S()),
            (f'{{"{field}":{{}}}}', f'{{"{field}":null}}', S(), S(P(field)), S()),
            (f'{{"{field}":{{}}}}', f'{{"{field}":{{}}}}', S(), S(), S()),
        ]
    ),
    ("{}", '{"innerList":[]}', S(), S(), S(P("innerList"))),
    ("{}", '{"innerList":null}', S(), S(), S(P("innerList"))),
    ('{"innerList":null}', '{"innerList":[]}', S(), S(P("innerList")), S()),
    ('{"innerList":[]}', '{"innerList":null}', S(), S(P("innerList")), S()),
    ('{"innerList":[]}', '{"innerList":[]}', S(), S(), S()),
    # "map merge" (a granular map of maps: free is untyped, so deduced granular)
    ('{"free":{"a":{},"b":{}}}', '{"free":{"a":{},"b":{}}}', S(), S(), S()),
    ('{"free":{"a":{}}}', '{"free":{"b":{}}}', S(P("free", "a")), S(), S(P("free", "b"))),
    (
        '{"free":{"a":{"b":{"c":{}}}}}',
        '{"free":{"a":{"b":{}}}}',
        S(P("free", "a", "b", "c")),
        S(),
        S(),
    ),
    ('{"free":{"a":{}}}', '{"free":{"a":{"b":{}}}}', S(), S(), S(P("free", "a", "b"))),
    # "untyped deduced" (same-kind cases)
    ('{"free":{"a":null}}', '{"free":{"a":{"b":{}}}}', S(), S(), S(P("free", "a", "b"))),
    ('{"free":{"a":{"b":{}}}}', '{"free":{"a":null}}', S(P("free", "a", "b")), S(), S()),
    ('{"free":{"a":[]}}', '{"free":{"a":["b"]}}', S(), S(P("free", "a")), S()),
    ('{"free":{"a":null}}', '{"free":{"a":["b"]}}', S(), S(P("free", "a")), S()),
    ('{"free":{"a":null}}', '{"free":{"a":"b"}}', S(), S(P("free", "a")), S()),
    ('{"free":{"a":["b"]}}', '{"free":{"a":"b"}}', S(), S(P("free", "a")), S()),
    # "struct grab bag"
    ('{"numeric":1}', '{"numeric":3.14159}', S(), S(P("numeric")), S()),
    ('{"numeric":1}', '{"numeric":1.0}', S(), S(), S()),  # numbers compare numerically
    ('{"string":"aoeu"}', '{"bool":true}', S(P("string")), S(), S(P("bool"))),
    ('{"setStr":["a","b"]}', '{"setStr":["a","b","c"]}', S(), S(), S(P("setStr", V("c")))),
    ('{"setStr":["a","b"]}', '{"setStr":["b","a"]}', S(), S(), S()),  # order is not a change
    (
        '{"setStr":["a","b","c"]}',
        '{"setStr":[]}',
        S(P("setStr", V("a")), P("setStr", V("b")), P("setStr", V("c"))),
        S(),
        S(),
    ),
    (
        '{"setBool":[true]}',
        '{"setBool":[false]}',
        S(P("setBool", V(True))),
        S(),
        S(P("setBool", V(False))),
    ),
    (
        '{"setNumeric":[1,2,3.14159]}',
        '{"setNumeric":[1,2,3]}',
        S(P("setNumeric", V(3.14159))),
        S(),
        S(P("setNumeric", V(3))),
    ),
    # "associative list"
    (
        "{}",
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
        S(),
        S(),
        S(
            P("list"),
            P("list", K("a", 1)),
            P("list", K("a", 1), "key"),
            P("list", K("a", 1), "id"),
            P("list", K("a", 1), "value"),
            P("list", K("a", 1), "value", "a"),
        ),
    ),
    (
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
        '{"list":[{"key":"a","id":1,"value":{"a":"b"}}]}',
        S(),
        S(P("list", K("a", 1), "value", "a")),
        S(),
    ),
    (
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
        '{"list":[{"key":"a","id":2,"value":{"a":"a"}}]}',
        S(
            *(
                P("list", K("a", 1), *rest)
                for rest in [(), ("key",), ("id",), ("value",), ("value", "a")]
            )
        ),
        S(),
        S(
            *(
                P("list", K("a", 2), *rest)
                for rest in [(), ("key",), ("id",), ("value",), ("value", "a")]
            )
        ),
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"b","id":1}]}',
        '{"list":[{"key":"a","id":1},{"key":"a","id":2}]}',
        S(P("list", K("b", 1)), P("list", K("b", 1), "key"), P("list", K("b", 1), "id")),
        S(),
        S(P("list", K("a", 2)), P("list", K("a", 2), "key"), P("list", K("a", 2), "id")),
    ),
    ('{"atomicList":["a","a","a"]}', '{"atomicList":null}', S(), S(P("atomicList")), S()),
    ('{"atomicList":["a","b","c"]}', '{"atomicList":[]}', S(), S(P("atomicList")), S()),
    ('{"atomicList":["a","a","a"]}', '{"atomicList":["a","a"]}', S(), S(P("atomicList")), S()),
    ('{"color":{"R":1}}', '{"color":{"R":1,"G":2}}', S(), S(P("color")), S()),
]


@pytest.mark.parametrize(
    ("lhs", "rhs", "removed", "modified", "added"),
    COMPARE_CASES,
    ids=[f"{c[0]}->{c[1]}" for c in COMPARE_CASES],
)
def test_compare(
    lhs: str, rhs: str, removed: FieldSet, modified: FieldSet, added: FieldSet
) -> None:
    got = typed.compare(j(lhs), j(rhs), WIDGET)
    assert (got.removed, got.modified, got.added) == (removed, modified, added)
    assert _nothing(got) == (removed.empty() and modified.empty() and added.empty())
    back = typed.compare(j(rhs), j(lhs), WIDGET)  # and the reverse, as symdiff_test.go checks
    assert (back.removed, back.modified, back.added) == (added, modified, removed)


# symdiff_test.go cases where a live object holds duplicated items (AllowDuplicates).
DUPLICATE_COMPARE_CASES = [
    (
        '{"setStr":["a","b"]}',
        '{"setStr":["a","b","b"]}',
        S(P("setStr", V("b"))),
        S(),
        S(P("setStr", V("b"))),
    ),
    (
        '{"setNumeric":[1,2,2,3.14159,1]}',
        '{"setNumeric":[1,2,3]}',
        S(P("setNumeric", V(1)), P("setNumeric", V(2)), P("setNumeric", V(3.14159))),
        S(),
        S(P("setNumeric", V(1)), P("setNumeric", V(2)), P("setNumeric", V(3))),
    ),
    (
        '{"list":[{"key":"a","id":1,"nv":2},{"key":"b","id":1},{"key":"a","id":1,"bv":true}]}',
        '{"list":[{"key":"a","id":1},{"key":"a","id":2}]}',
        S(
            P("list", K("b", 1)),
            P("list", K("b", 1), "key"),
            P("list", K("b", 1), "id"),
            P("list", K("a", 1)),
        ),
        S(),
        S(
            P("list", K("a", 1)),
            P("list", K("a", 1), "key"),
            P("list", K("a", 1), "id"),
            P("list", K("a", 2)),
            P("list", K("a", 2), "key"),
            P("list", K("a", 2), "id"),
        ),
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"b","id":1},{"key":"a","id":1,"bv":true}]}',
        '{"list":[{"key":"a","id":1},{"key":"b","id":1},{"key":"a","id":1,"bv":true,"nv":1}]}',
        S(),
        S(P("list", K("a", 1))),
        S(),
    ),
]


@pytest.mark.parametrize(("lhs", "rhs", "removed", "modified", "added"), DUPLICATE_COMPARE_CASES)
def test_compare_duplicated_items(
    lhs: str, rhs: str, removed: FieldSet, modified: FieldSet, added: FieldSet
) -> None:
    got = typed.compare(j(lhs), j(rhs), WIDGET)
    assert (got.removed, got.modified, got.added) == (removed, modified, added)


# symdiff_test.go "untyped deduced": a value changing kind is walked as both kinds.
KIND_CHANGE_CASES = [
    (
        '{"free":{"a":{"b":{}}}}',
        '{"free":{"a":["b"]}}',
        S(P("free", "a", "b")),
        S(P("free", "a")),
        S(),
    ),
    (
        '{"free":{"a":["b"]}}',
        '{"free":{"a":{"b":{}}}}',
        S(),
        S(P("free", "a")),
        S(P("free", "a", "b")),
    ),
    (
        '{"free":{"a":{"b":{}}}}',
        '{"free":{"a":"b"}}',
        S(P("free", "a", "b")),
        S(P("free", "a")),
        S(),
    ),
    (
        '{"free":{"a":"b"}}',
        '{"free":{"a":{"b":{}}}}',
        S(),
        S(P("free", "a")),
        S(P("free", "a", "b")),
    ),
]


@pytest.mark.parametrize(("lhs", "rhs", "removed", "modified", "added"), KIND_CHANGE_CASES)
def test_compare_kind_change(
    lhs: str, rhs: str, removed: FieldSet, modified: FieldSet, added: FieldSet
) -> None:
    got = typed.compare(j(lhs), j(rhs), WIDGET)
    assert (got.removed, got.modified, got.added) == (removed, modified, added)


@pytest.mark.parametrize(
    ("lhs", "rhs", "modified"),
    [
        ('{"value":1}', '{"value":true}', S(P("value"))),
        ('{"free":{"x":0}}', '{"free":{"x":false}}', S(P("free", "x"))),
        ('{"value":[1]}', '{"value":[true]}', S(P("value"))),
    ],
)
def test_compare_booleans_are_not_numbers(lhs: str, rhs: str, modified: FieldSet) -> None:
    assert typed.compare(j(lhs), j(rhs), WIDGET).modified == modified


def test_compare_marks_new_nodes_added(configmap: Shape, deployment: Shape) -> None:
    """Spec §2 Update sets: every node the write creates is added (so it gets ``"."`` when it
    has children), a node that existed, even empty, is not."""
    zero = configmap.zero()
    created = typed.compare(zero, {**zero, "data": {"a": "1"}}, configmap)
    assert created.added.to_fields_v1() == {"f:data": {".": {}, "f:a": {}}}  # spec §11.7
    existed = typed.compare({"data": {}}, {"data": {"a": "1"}}, configmap)
    assert existed.added.to_fields_v1() == {"f:data": {"f:a": {}}}
    # a custom resource's zero object is empty: spec itself is new
    assert typed.compare(
        {}, {"spec": {"a": 1}}, custom_shape("Blob", {"type": "object"})
    ).added == (S(P("spec"), P("spec", "a")))

    # Deployment: spec, spec.template, spec.strategy and the pod metadata are value structs
    zero = deployment.zero()
    new = json.loads(json.dumps(zero))
    new["spec"]["replicas"] = 1
    new["spec"]["template"]["metadata"]["labels"] = {"app": "w"}
    new["spec"]["template"]["spec"]["containers"] = [{"name": "app", "image": "i"}]
    got = typed.compare(zero, new, deployment)
    assert got.added.to_fields_v1() == {
        "f:spec": {
            "f:replicas": {},
            "f:template": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}}
                },
            },
        }
    }
    assert got.modified.empty()  # containers went from null to a list: items, not the list
    assert got.removed.empty()


def test_comparison_helpers() -> None:
    got = typed.compare(
        j('{"labels":{"a":"1","b":"2"}}'), j('{"labels":{"a":"x","c":"3"}}'), WIDGET
    )
    assert got.changed() == S(P("labels", "a"), P("labels", "c"))
    assert _nothing(got.without(S(P("labels"))))
    assert got.without(S(P("labels", "a"))).changed() == S(P("labels", "c"))


# -- merge ----------------------------------------------------------------------------------------

# merge_test.go: (lhs = live, rhs = config, out)
MERGE_CASES = [
    # "simple pair"
    ('{"key":"foo","value":{}}', '{"key":"foo","value":1}', '{"key":"foo","value":1}'),
    ('{"key":"foo","value":1}', '{"key":"foo","value":{}}', '{"key":"foo","value":{}}'),
    ('{"key":"foo","value":null}', '{"key":"foo","value":{}}', '{"key":"foo","value":{}}'),
    ('{"key":"foo"}', '{"value":true}', '{"key":"foo","value":true}'),
    # "null/empty map", "null/empty struct", "null/empty list"
    *(
        case
        for field, empty in (("innerMap", "{}"), ("inner", "{}"), ("innerList", "[]"))
        for case in [
            ("{}", f'{{"{field}":{empty}}}', f'{{"{field}":{empty}}}'),
            ("{}", f'{{"{field}":null}}', f'{{"{field}":null}}'),
            (f'{{"{field}":null}}', f'{{"{field}":{empty}}}', f'{{"{field}":{empty}}}'),
            (f'{{"{field}":{empty}}}', f'{{"{field}":null}}', f'{{"{field}":null}}'),
            (f'{{"{field}":{empty}}}', f'{{"{field}":{empty}}}', f'{{"{field}":{empty}}}'),
        ]
    ),
    # "struct grab bag": scalars replace, sets are unions in SMD's order
    ('{"numeric":1}', '{"numeric":3.14159}', '{"numeric":3.14159}'),
    ('{"numeric":3.14159}', '{"numeric":1}', '{"numeric":1}'),
    ('{"string":"aoeu"}', '{"bool":true}', '{"string":"aoeu","bool":true}'),
    ('{"setStr":["a","b","c"]}', '{"setStr":["a","b"]}', '{"setStr":["a","b","c"]}'),
    ('{"setStr":["a","b"]}', '{"setStr":["a","b","c"]}', '{"setStr":["a","b","c"]}'),
    ('{"setStr":["a","b","c"]}', '{"setStr":[]}', '{"setStr":["a","b","c"]}'),
    ('{"setStr":[]}', '{"setStr":["a","b","c"]}', '{"setStr":["a","b","c"]}'),
    ('{"setStr":["a","b"]}', '{"setStr":["b","a"]}', '{"setStr":["b","a"]}'),
    (
        '{"setStr":["a","b","c"]}',
        '{"setStr":["d","e","f"]}',
        '{"setStr":["a","b","c","d","e","f"]}',
    ),
    (
        '{"setStr":["a","b","c"]}',
        '{"setStr":["c","d","e","f"]}',
        '{"setStr":["a","b","c","d","e","f"]}',
    ),
    (
        '{"setStr":["a","b","c","g","f"]}',
        '{"setStr":["c","d","e","f"]}',
        '{"setStr":["a","b","c","g","d","e","f"]}',
    ),
    (
        '{"setStr":["a","b","c"]}',
        '{"setStr":["d","e","f","x","y","z"]}',
        '{"setStr":["a","b","c","d","e","f","x","y","z"]}',
    ),
    (
        '{"setStr":["c","d","e","f"]}',
        '{"setStr":["a","c","e"]}',
        '{"setStr":["a","c","d","e","f"]}',
    ),
    (
        '{"setStr":["a","b","c","x","y","z"]}',
        '{"setStr":["d","e","f"]}',
        '{"setStr":["a","b","c","x","y","z","d","e","f"]}',
    ),
    (
        '{"setStr":["a","b","c","x","y","z"]}',
        '{"setStr":["d","e","f","x","y","z"]}',
        '{"setStr":["a","b","c","d","e","f","x","y","z"]}',
    ),
    (
        '{"setStr":["c","a","g","f"]}',
        '{"setStr":["c","f","a","g"]}',
        '{"setStr":["c","f","a","g"]}',
    ),
    (
        '{"setStr":["a","b","c","d"]}',
        '{"setStr":["d","e","f","a"]}',
        '{"setStr":["b","c","d","e","f","a"]}',
    ),
    (
        '{"setStr":["c","d","e","f","g","h","i","j"]}',
        '{"setStr":["2","h","3","e","4","k","l"]}',
        '{"setStr":["c","d","f","g","2","h","i","j","3","e","4","k","l"]}',
    ),
    (
        '{"setStr":["a","b","c","d","e","f","g","h","i","j"]}',
        '{"setStr":["1","b","2","h","3","e","4","k","l"]}',
        '{"setStr":["a","1","b","c","d","f","g","2","h","i","j","3","e","4","k","l"]}',
    ),
    # duplicates in the live object
    ('{"setStr":["a","b","b"]}', '{"setStr":["c"]}', '{"setStr":["a","b","b","c"]}'),
    ('{"setStr":["a","b","b"]}', '{"setStr":["b"]}', '{"setStr":["a","b"]}'),
    ('{"setStr":["a","b","b"]}', '{"setStr":["a"]}', '{"setStr":["a","b","b"]}'),
    (
        '{"setStr":["a","b","c","d","e","c"]}',
        '{"setStr":["1","b","2","e","d"]}',
        '{"setStr":["a","1","b","c","2","e","c","d"]}',
    ),
    (
        '{"setStr":["a","b","c","d","e","c"]}',
        '{"setStr":["1","b","2","c","e","d"]}',
        '{"setStr":["a","1","b","2","c","e","d"]}',
    ),
    (
        '{"setStr":["a","a","b","b"]}',
        '{"setStr":["b","c","d"]}',
        '{"setStr":["a","a","b","c","d"]}',
    ),
    ('{"setStr":["a","a","b","b"]}', '{"setStr":[]}', '{"setStr":["a","a","b","b"]}'),
    ('{"setBool":[true]}', '{"setBool":[false]}', '{"setBool":[true, false]}'),
    ('{"setNumeric":[1,2,3.14159]}', '{"setNumeric":[1,2,3]}', '{"setNumeric":[1,2,3.14159,3]}'),
    (
        '{"setStr":["c","a","g","f","c","a"]}',
        '{"setStr":["c","f","a","g"]}',
        '{"setStr":["c","f","a","g"]}',
    ),
    (
        '{"setNumeric":[1,2,3.14159,1,2]}',
        '{"setNumeric":[1,2,3]}',
        '{"setNumeric":[1,2,3.14159,3]}',
    ),
    ('{"setBool":[true,false,true]}', '{"setBool":[false]}', '{"setBool":[true,false,true]}'),
    ('{"setBool":[true,false,true]}', '{"setBool":[true]}', '{"setBool":[true, false]}'),
    # "associative list"
    (
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
    ),
    (
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}}]}',
        '{"list":[{"key":"a","id":2,"value":{"a":"a"}}]}',
        '{"list":[{"key":"a","id":1,"value":{"a":"a"}},{"key":"a","id":2,"value":{"a":"a"}}]}',
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"b","id":1}]}',
        '{"list":[{"key":"a","id":1},{"key":"a","id":2}]}',
        '{"list":[{"key":"a","id":1},{"key":"b","id":1},{"key":"a","id":2}]}',
    ),
    (
        '{"list":[{"key":"b","id":2}]}',
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
        '{"list":[{"key":"c","id":3},{"key":"b","id":2}]}',
        '{"list":[{"key":"a","id":1},{"key":"c","id":3},{"key":"b","id":2}]}',
    ),
    (
        '{"list":[{"key":"a","id":1},{"key":"b","id":2},{"key":"c","id":3}]}',
        '{"list":[{"key":"c","id":3},{"key":"a","id":1}]}',
        '{"list":[{"key":"b","id":2},{"key":"c","id":3},{"key":"a","id":1}]}',
    ),
    ('{"atomicList":["a","a","a"]}', '{"atomicList":null}', '{"atomicList":null}'),
    ('{"atomicList":["a","b","c"]}', '{"atomicList":[]}', '{"atomicList":[]}'),
    ('{"atomicList":["a","a","a"]}', '{"atomicList":["a","a"]}', '{"atomicList":["a","a"]}'),
    (
        '{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}',
        '{"list":[]}',
        '{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}',
    ),
    (
        '{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}',
        "{}",
        '{"list":[{"key":"a","id":1,"nv":1},{"key":"a","id":1,"nv":2}]}',
    ),
    # granular maps merge key by key; atomic ones are replaced
    (
        '{"labels":{"a":"1","b":"2"}}',
        '{"labels":{"b":"x","c":"3"}}',
        '{"labels":{"a":"1","b":"x","c":"3"}}',
    ),
    ('{"color":{"R":1,"G":2}}', '{"color":{"B":3}}', '{"color":{"B":3}}'),
    (
        '{"free":{"a":{"x":1},"b":2}}',
        '{"free":{"a":{"y":2}}}',
        '{"free":{"a":{"x":1,"y":2},"b":2}}',
    ),
    ('{"free":{"a":[1,2]}}', '{"free":{"a":[3]}}', '{"free":{"a":[3]}}'),
    # a granular map merged with null keeps its keys (merge.go visits the live keys)
    ('{"labels":{"a":"1"}}', '{"labels":null}', '{"labels":{"a":"1"}}'),
    # list-map items merge field by field; a defaulted key matches the explicit one
    (
        '{"ports":[{"name":"a","protocol":"TCP","port":1},{"name":"b","port":2}]}',
        '{"ports":[{"name":"a","port":9}]}',
        '{"ports":[{"name":"a","protocol":"TCP","port":9},{"name":"b","port":2}]}',
    ),
]


@pytest.mark.parametrize(
    ("live", "config", "out"), MERGE_CASES, ids=[f"{c[0]}+{c[1]}" for c in MERGE_CASES]
)
def test_merge(live: str, config: str, out: str) -> None:
    before = j(live), j(config)
    assert typed.merge(j(live), j(config), WIDGET) == j(out)
    live_value, config_value = j(live), j(config)
    typed.merge(live_value, config_value, WIDGET)
    assert (live_value, config_value) == before  # operands untouched


def test_merge_with_missing_sides() -> None:
    assert typed.merge(MISSING, {"a": 1}, WIDGET) == {"a": 1}
    assert typed.merge({"a": 1}, MISSING, WIDGET) == {"a": 1}


def test_merge_replaces_duplicated_live_items() -> None:
    """merge_test.go "associative list", duplicated key {a,1} in the live object."""
    live = j(
        '{"list":[{"key":"a","id":1,"bv":true},{"key":"b","id":2},'
        '{"key":"a","id":1,"bv":false,"nv":2}]}'
    )
    config = j('{"list":[{"key":"a","id":1,"nv":3},{"key":"c","id":3},{"key":"b","id":2}]}')
    assert typed.merge(live, config, WIDGET) == j(
        '{"list":[{"key":"a","id":1,"nv":3},{"key":"c","id":3},{"key":"b","id":2}]}'
    )


def test_merge_deployment_containers(deployment: Shape) -> None:
    """Spec §11.8: a second applier's container goes after the first's."""
    live = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:1"}]}}}}
    config = {"spec": {"template": {"spec": {"containers": [{"name": "proxy", "image": "e:1"}]}}}}
    merged = typed.merge(live, config, deployment)
    assert [c["name"] for c in merged["spec"]["template"]["spec"]["containers"]] == ["app", "proxy"]
    config = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}}}
    assert typed.merge(live, config, deployment)["spec"]["template"]["spec"]["containers"] == [
        {"name": "app", "image": "app:2"}
    ]


# -- remove_items ---------------------------------------------------------------------------------

# remove_test.go, with kubelite's documented difference: where structured-merge-diff leaves an
# emptied list or map as null, kubelite drops the key (and keeps its parent, even empty), which is
# what the stored object ends up as once nulls of non-nullable fields are pruned.
REMOVE_CASES = [
    ('{"key":"foo"}', S(P("key")), MISSING),
    ('{"key":"foo"}', S(), '{"key":"foo"}'),
    ('{"key":"foo","value":true}', S(P("key")), '{"value":true}'),
    ('{"key":"foo","value":{"a": "b"}}', S(P("value")), '{"key":"foo"}'),
    ('{"setBool":[false]}', S(P("setBool", V(False))), "{}"),
    ('{"setBool":[false]}', S(P("setBool", V(True))), '{"setBool":[false]}'),
    ('{"setBool":[true,false]}', S(P("setBool", V(True))), '{"setBool":[false]}'),
    ('{"setBool":[true,false]}', S(P("setBool")), MISSING),
    (
        '{"setNumeric":[1,2,3,4.5]}',
        S(P("setNumeric", V(1)), P("setNumeric", V(4.5))),
        '{"setNumeric":[2,3]}',
    ),
    ('{"setStr":["a","b","c"]}', S(P("setStr", V("a"))), '{"setStr":["b","c"]}'),
    (
        '{"list":[{"key":"a","id":1},{"key":"a","id":2},{"key":"b","id":1}]}',
        S(P("list", K("a", 1))),
        '{"list":[{"key":"a","id":2},{"key":"b","id":1}]}',
    ),
    ('{"atomicList":["a", "a", "a"]}', S(P("atomicList")), MISSING),
    ('{"color":{"R":1}}', S(P("color")), MISSING),
    (
        '{"list":[{"key":"a","id":1,"value":{"b":"x","c":"y"}},{"key":"d","id":1}]}',
        S(P("list", K("a", 1), "value", "b")),
        '{"list":[{"key":"a","id":1,"value":{"c":"y"}},{"key":"d","id":1}]}',
    ),
    (
        '{"list":[{"key":"a","id":1,"value":{"b":"x"}}]}',
        S(P("list", K("x", 9))),
        '{"list":[{"key":"a","id":1,"value":{"b":"x"}}]}',
    ),
    (
        '{"mapOfLists":{"b":["a","c"],"d":["e","f"]}}',
        S(P("mapOfLists", "b")),
        '{"mapOfLists":{"d":["e","f"]}}',
    ),
    (
        '{"mapOfLists":{"b":["a","c"],"d":["e","f"]}}',
        S(P("mapOfLists", "b", V("a"))),
        '{"mapOfLists":{"b":["c"],"d":["e","f"]}}',
    ),
    ('{"mapOfLists":{"b":null,"d":["e"]}}', S(P("mapOfLists", "b")), '{"mapOfLists":{"d":["e"]}}'),
    (
        '{"mapOfMaps":{"b":{"a":"x","c":"z"},"d":{"e":"y"}}}',
        S(P("mapOfMaps", "b", "a")),
        '{"mapOfMaps":{"b":{"c":"z"},"d":{"e":"y"}}}',
    ),
    ('{"mapOfMaps":{"b":{"a":"x"}}}', S(P("mapOfMaps", "b", "a")), '{"mapOfMaps":{}}'),
    ('{"mapOfMaps":{}}', S(P("mapOfMaps")), MISSING),
    ('{"mapOfMaps":null}', S(P("mapOfMaps")), MISSING),
    ('{"setStr":[]}', S(P("setStr")), MISSING),
]


@pytest.mark.parametrize(
    ("obj", "paths", "out"), REMOVE_CASES, ids=[f"{c[0]}-{c[1]!r}" for c in REMOVE_CASES]
)
def test_remove_items(obj: str, paths: FieldSet, out: Any) -> None:
    value = j(obj)
    got = typed.remove_items(value, paths, WIDGET)
    assert got == (out if out is MISSING else j(out))
    assert value == j(obj)  # the input is untouched


# -- ensure_named_fields -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "before", "after"),
    [
        (
            '{"named": {"named": {"value": 0}}}',
            [P("named", "named", "value")],
            [P("named", "named", "value"), P("named", "named"), P("named")],
        ),
        (
            '{"named": {"a": {"named": {"value": 42}}}, "a": {"named": {"value": 1}}}',
            [P("named", "a", "named", "value"), P("a", "named", "value")],
            [
                P("named", "a", "named", "value"),
                P("named", "a", "named"),
                P("named", "a"),
                P("named"),
                P("a", "named", "value"),
                P("a", "named"),
                P("a"),
            ],
        ),
        (
            '{"named": {"list": [{"keyAStr": "a", "keyBInt": 1, "named": {"value": 0}}]}}',
            [
                P("named", "list", {"keyAStr": "a", "keyBInt": 1}, "keyAStr"),
                P("named", "list", {"keyAStr": "a", "keyBInt": 1}, "keyBInt"),
                P("named", "list", {"keyAStr": "a", "keyBInt": 1}, "named", "value"),
                P("named", "list", {"keyAStr": "a", "keyBInt": 1}),
            ],
            [
                P("named", "list", {"keyAStr": "a", "keyBInt": 1}, "keyAStr"),
                P("named", "list", {"keyAStr": "a", "keyBInt": 1}, "keyBInt"),
                P("named", "list", {"keyAStr": "a", "keyBInt": 1}, "named", "value"),
                P("named", "list", {"keyAStr": "a", "keyBInt": 1}, "named"),
                P("named", "list", {"keyAStr": "a", "keyBInt": 1}),
                P("named", "list"),
                P("named"),
            ],
        ),
        (  # a map key (not a declared field) is left as it is
            '{"zz": {"named": {"value": 1}}}',
            [P("zz", "named", "value"), P("zz")],
            [P("zz", "named", "value"), P("zz", "named"), P("zz")],
        ),
    ],
)
def test_ensure_named_fields(obj: str, before: list[Path], after: list[Path]) -> None:
    """set_test.go TestEnsureNamedFieldsAreMembers."""
    got = typed.to_set(j(obj), NESTED)
    assert got == S(*before)
    assert typed.ensure_named_fields(got, NESTED) == S(*after)


# -- properties ---------------------------------------------------------------------------------

SMALL_INT = st.integers(-2, 3)
LETTERS = st.sampled_from("abcdef")

LIST_ITEMS = st.fixed_dictionaries(
    {"key": st.sampled_from("ab"), "id": st.integers(1, 2)},
    optional={
        "value": st.dictionaries(st.sampled_from("xyz"), st.sampled_from("12"), min_size=1),
        "bv": st.booleans(),
        "nv": SMALL_INT,
    },
)
PORT_ITEMS = st.fixed_dictionaries(
    {"name": st.sampled_from(["http", "dns"])},
    optional={"protocol": st.sampled_from(["TCP", "UDP"]), "port": SMALL_INT},
)
UNTYPED = st.recursive(
    st.one_of(SMALL_INT, st.booleans(), LETTERS, st.lists(SMALL_INT, max_size=2)),
    lambda inner: st.dictionaries(st.sampled_from("pqr"), inner, min_size=1, max_size=2),
    max_leaves=4,
)

#: Widget configurations that are valid (no duplicates) and granular wherever they can be: no
#: empty or null maps or lists where a granular one is declared (merge keeps live keys there).
CONFIGS = st.fixed_dictionaries(
    {},
    optional={
        "numeric": SMALL_INT,
        "string": LETTERS,
        "bool": st.booleans(),
        "value": UNTYPED,
        "setStr": st.lists(LETTERS, unique=True, min_size=1, max_size=5),
        "setNumeric": st.lists(SMALL_INT, unique=True, min_size=1, max_size=3),
        "color": st.fixed_dictionaries({}, optional={"R": SMALL_INT, "G": SMALL_INT}),
        "atomicList": st.lists(LETTERS, max_size=3),
        "list": st.lists(
            LIST_ITEMS, unique_by=lambda i: (i["key"], i["id"]), min_size=1, max_size=4
        ),
        "labels": st.dictionaries(LETTERS, st.sampled_from("12"), min_size=1, max_size=3),
        "ports": st.lists(
            PORT_ITEMS,
            unique_by=lambda p: (p["name"], p.get("protocol", "TCP")),
            min_size=1,
            max_size=3,
        ),
        "free": st.dictionaries(st.sampled_from("pqr"), UNTYPED, min_size=1, max_size=3),
        "inner": st.fixed_dictionaries({"value": SMALL_INT}),
    },
)


def _canonical(value: Any) -> str:
    """JSON with sorted keys and integral floats as integers: equal for equal values."""

    def norm(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: norm(w) for k, w in v.items()}
        if isinstance(v, list):
            return [norm(w) for w in v]
        return v

    return json.dumps(norm(value), sort_keys=True)


def _reordered(value: Any) -> Any:
    """The same value with every object's keys in reverse order."""
    if isinstance(value, dict):
        return {k: _reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reordered(v) for v in value]
    return value


@given(CONFIGS, st.sampled_from(["numeric", "string", "bool", "inner"]))
def test_compare_finds_a_changed_leaf_and_nothing_else(x: dict[str, Any], name: str) -> None:
    assert _nothing(typed.compare(x, _reordered(x), WIDGET))
    y = json.loads(json.dumps(x))
    path = P(name, "value") if name == "inner" else P(name)
    if name == "inner":
        y["inner"] = {"value": (x.get("inner") or {"value": 0})["value"] + 1}
    elif name == "numeric":
        y[name] = 1 + x.get(name, 0)
    elif name == "string":
        y[name] = f"{x.get(name)}!"
    else:
        y[name] = not x.get(name, False)
    got = typed.compare(x, y, WIDGET)
    if name in x:
        assert (got.added, got.modified, got.removed) == (S(), S(path), S())
    else:  # a field that appears: it is added, as is the struct that holds it
        assert got.modified == S()
        assert got.removed == S()
        assert path in set(got.added.paths())


@given(CONFIGS, CONFIGS)
def test_compare_is_symmetric(x: dict[str, Any], y: dict[str, Any]) -> None:
    forward, back = typed.compare(x, y, WIDGET), typed.compare(y, x, WIDGET)
    assert (forward.added, forward.modified, forward.removed) == (
        back.removed,
        back.modified,
        back.added,
    )
    for a, b in [
        (forward.added, forward.modified),
        (forward.added, forward.removed),
        (forward.modified, forward.removed),
    ]:
        assert a.intersection(b).empty()  # compare.go: no field is in two of the sets


@given(CONFIGS)
def test_an_applied_set_is_added_from_nothing(x: dict[str, Any]) -> None:
    created = typed.compare({}, x, WIDGET)
    assert typed.to_set(x, WIDGET).difference(created.added).empty()
    assert created.modified.empty()
    assert created.removed.empty()


@given(CONFIGS)
def test_merge_with_itself_is_itself(x: dict[str, Any]) -> None:
    assert typed.merge(x, x, WIDGET) == x


@given(CONFIGS, CONFIGS)
def test_merged_object_holds_the_configuration(
    live: dict[str, Any], config: dict[str, Any]
) -> None:
    merged = typed.merge(live, config, WIDGET)
    config_set = typed.to_set(config, WIDGET)
    assert config_set.difference(typed.to_set(merged, WIDGET)).empty()
    assert _nothing(typed.compare(merged, typed.merge(merged, config, WIDGET), WIDGET))
    # every configured leaf has the configured value
    paths = list(config_set.paths())
    leaves = [p for p in paths if not any(len(q) > len(p) and q[: len(p)] == p for q in paths)]
    for path in leaves:
        assert lookup(merged, path) == lookup(config, path)


def lookup(obj: Any, path: Path) -> Any:
    """The value at ``path`` (fields and list items)."""
    shape = WIDGET
    for element in path:
        if element.startswith("f:"):
            obj = obj[element[2:]]
            shape = shape.member(element[2:])[0] or shapes.UNTYPED_SHAPE
        else:
            obj = next(item for item in obj if typed.item_element(shape, item) == element)
            shape = shape.item
    return obj


@settings(max_examples=200)
@given(
    st.lists(LETTERS, unique=True, max_size=6),
    st.lists(LETTERS, unique=True, min_size=1, max_size=6),
)
def test_set_merge_order(live: list[str], config: list[str]) -> None:
    """merge.go visitListItems: every item once; the configuration's items in its order, the
    live-only items in theirs."""
    merged = typed.merge({"setStr": live}, {"setStr": config}, WIDGET)["setStr"]
    assert sorted(merged) == sorted(set(live) | set(config))
    assert [x for x in merged if x in config] == config
    assert [x for x in merged if x not in config] == [x for x in live if x not in config]


@given(
    st.lists(LIST_ITEMS, unique_by=lambda i: (i["key"], i["id"]), max_size=4),
    st.lists(LIST_ITEMS, unique_by=lambda i: (i["key"], i["id"]), min_size=1, max_size=4),
)
def test_list_map_merge_order(live: list[dict[str, Any]], config: list[dict[str, Any]]) -> None:
    def ids(items: list[dict[str, Any]]) -> list[tuple[str, int]]:
        return [(i["key"], i["id"]) for i in items]

    merged = typed.merge({"list": live}, {"list": config}, WIDGET)["list"]
    assert ids([i for i in merged if (i["key"], i["id"]) in ids(config)]) == ids(config)
    assert ids([i for i in merged if (i["key"], i["id"]) not in ids(config)]) == [
        k for k in ids(live) if k not in ids(config)
    ]


@given(CONFIGS)
def test_removing_every_applied_path_leaves_nothing(x: dict[str, Any]) -> None:
    assert typed.remove_items(x, typed.to_set(x, WIDGET), WIDGET) in ({}, MISSING)
    assert typed.remove_items(x, FieldSet(), WIDGET) == x


def removes_a_key_field(path: tuple[str, ...]) -> bool:
    """Whether ``path`` is a key field of a list-map item. Removing one gives the item another
    key (a defaulted protocol: TCP), which may be one of the removed paths (as in
    structured-merge-diff, which also derives keys from defaults)."""
    if len(path) < 2 or not path[-2].startswith("k:") or not path[-1].startswith("f:"):
        return False
    return path[-1][2:] in json.loads(path[-2][2:])


@given(CONFIGS, st.data())
def test_removed_paths_are_gone(x: dict[str, Any], data: st.DataObject) -> None:
    applied = [p for p in typed.to_set(x, WIDGET).paths() if not removes_a_key_field(p)]
    chosen = data.draw(st.lists(st.sampled_from(applied), max_size=4)) if applied else []
    removed = S(*chosen)
    left = typed.remove_items(x, removed, WIDGET)
    if left is not MISSING:
        assert typed.to_set(left, WIDGET, strict=False).intersection(removed).empty()
    absent = S(P("nope"), P("list", {"key": "z", "id": 9}))
    assert typed.remove_items(x, absent, WIDGET) == x


@given(CONFIGS)
def test_ensure_named_fields_only_adds_declared_parents(x: dict[str, Any]) -> None:
    applied = typed.to_set(x, WIDGET)
    ensured = typed.ensure_named_fields(applied, WIDGET)
    assert applied.difference(ensured).empty()
    assert typed.ensure_named_fields(ensured, WIDGET) == ensured
    for path in ensured.difference(applied).paths():
        assert path[-1].startswith("f:")
        assert any(p[: len(path)] == path and len(p) > len(path) for p in applied.paths())
