"""Field sets (api/fieldmanager/fieldpath) against a model, a Python frozenset of path tuples, and
the FieldsV1 encoding against structured-merge-diff's own test data (fieldpath/set_test.go,
serialize_test.go, serialize-pe_test.go, element_test.go)."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubelite.api.fieldmanager import fieldpath as fp
from kubelite.api.fieldmanager.fieldpath import FieldSet, FieldsV1Error, Path

Model = frozenset[Path]

# -- strategies: small alphabets, so that generated sets share paths and prefixes --------------

NAMES = st.one_of(
    st.sampled_from(["a", "b", "B", "spec", "é", "app.kubernetes.io/name", ""]),
    st.text(max_size=3),
)
SCALARS = st.one_of(
    st.integers(-2, 2), st.sampled_from(["a", "b", "TCP", "a&b"]), st.booleans(), st.none()
)
KEY_FIELDS = st.dictionaries(
    st.sampled_from(["name", "port", "protocol"]), SCALARS, min_size=1, max_size=2
)
ELEMENTS = st.one_of(
    NAMES.map(fp.field),
    KEY_FIELDS.map(fp.key),
    SCALARS.map(fp.value),
    st.integers(0, 3).map(fp.index),
)
PATHS = st.lists(ELEMENTS, min_size=1, max_size=4).map(tuple)
PATH_SETS = st.frozensets(PATHS, max_size=10)


@st.composite
def set_pairs(draw: st.DrawFn) -> tuple[Model, Model]:
    """Two sets drawn from one pool of paths and their prefixes, so they overlap."""
    pool = draw(st.lists(PATHS, min_size=1, max_size=8))
    candidates = sorted({p[:n] for p in pool for n in range(1, len(p) + 1)}, key=repr)
    choose = st.frozensets(st.sampled_from(candidates), max_size=10)
    return draw(choose), draw(choose)


def paths_of(s: FieldSet) -> Model:
    found = list(s.paths())
    assert len(found) == len(set(found)), "a path was listed twice"
    return frozenset(found)


def assert_trimmed(s: FieldSet) -> None:
    """The invariant every set keeps: no empty subsets below it."""
    for sub in s.children.values():
        assert not sub.empty()
        assert_trimmed(sub)


def below_a_member(p: Path, other: Model) -> bool:
    return any(p[:n] in other for n in range(1, len(p) + 1))


# -- structured-merge-diff's element order, ported as an independent oracle ---------------------
# (fieldpath/element.go PathElement.Compare, value/fields.go FieldList.Compare,
# value/value.go Compare), for the values the strategies produce.


def _cmp(a: Any, b: Any) -> int:
    return int(a > b) - int(a < b)


def _value_rank(v: Any) -> int:
    if isinstance(v, bool):
        return 2
    if isinstance(v, int | float):
        return 0
    if isinstance(v, str):
        return 1
    if isinstance(v, list):
        return 3
    if isinstance(v, dict):
        return 4
    return 5  # null


def _go_compare_values(a: Any, b: Any) -> int:
    ra, rb = _value_rank(a), _value_rank(b)
    if ra != rb:
        return _cmp(ra, rb)
    if ra == 1:
        return _cmp(a.encode(), b.encode())
    if ra == 5:
        return 0
    return _cmp(a, b)


def _go_compare_elements(x: str, y: str) -> int:
    rank = "fkvi"
    if x[0] != y[0]:
        return _cmp(rank.index(x[0]), rank.index(y[0]))
    px, py = x[2:], y[2:]
    if x[0] == "f":
        return _cmp(px.encode(), py.encode())
    if x[0] == "i":
        return _cmp(int(px), int(py))
    if x[0] == "v":
        return _go_compare_values(json.loads(px), json.loads(py))
    fx, fy = sorted(json.loads(px).items()), sorted(json.loads(py).items())
    for (nx, vx), (ny, vy) in zip(fx, fy, strict=False):
        c = _cmp(nx.encode(), ny.encode()) or _go_compare_values(vx, vy)
        if c:
            return c
    return _cmp(len(fx), len(fy))


GO_ORDER = functools.cmp_to_key(_go_compare_elements)


def model_iterate(model: Model) -> Iterator[Path]:
    """structured-merge-diff's Set.Iterate: this level's members in order, then each child."""
    yield from sorted((p for p in model if len(p) == 1), key=lambda p: GO_ORDER(p[0]))
    for head in sorted({p[0] for p in model if len(p) > 1}, key=GO_ORDER):
        below = frozenset(p[1:] for p in model if len(p) > 1 and p[0] == head)
        for rest in model_iterate(below):
            yield (head, *rest)


def model_fields_v1(model: Model, prefix: Path = ()) -> dict[str, Any]:
    """The FieldsV1 document of ``model``, built from the spec (§2): ``{}`` for an owned leaf,
    children for a node, ``".": {}`` first when the node is owned too; siblings in order."""
    depth = len(prefix)
    heads = {p[depth] for p in model if len(p) > depth and p[:depth] == prefix}
    out: dict[str, Any] = {}
    for head in sorted(heads, key=GO_ORDER):
        path = (*prefix, head)
        below = model_fields_v1(model, path)
        out[head] = {".": {}, **below} if path in model and below else below
    return out


def as_pairs(document: Any) -> Any:
    """A document with its key order made significant (for ``==``)."""
    if isinstance(document, dict):
        return [(k, as_pairs(v)) for k, v in document.items()]
    return document


# -- the algebra against the model --------------------------------------------------------------


@given(PATH_SETS, PATHS)
def test_paths_size_empty_and_has_agree_with_the_model(model: Model, probe: Path) -> None:
    s = FieldSet.of(*model)
    assert_trimmed(s)
    assert paths_of(s) == model
    assert len(list(s.paths())) == len(model)
    assert s.empty() == (not model)
    assert all(s.has(p) for p in model)
    assert s.has(probe) == (probe in model)
    for p in model:  # a node that only has paths below it is not itself a member
        assert s.has(p[:-1]) == (p[:-1] in model)
    assert not s.has(())


@given(set_pairs())
def test_union(pair: tuple[Model, Model]) -> None:
    a, b = pair
    sa, sb = FieldSet.of(*a), FieldSet.of(*b)
    result = sa.union(sb)
    assert paths_of(result) == a | b
    assert result == sb.union(sa)
    assert_trimmed(result)
    assert (paths_of(sa), paths_of(sb)) == (a, b)  # operands untouched


@given(set_pairs())
def test_intersection(pair: tuple[Model, Model]) -> None:
    a, b = pair
    sa, sb = FieldSet.of(*a), FieldSet.of(*b)
    result = sa.intersection(sb)
    assert paths_of(result) == a & b
    assert result == sb.intersection(sa)
    assert_trimmed(result)
    assert (paths_of(sa), paths_of(sb)) == (a, b)


@given(set_pairs())
def test_difference_takes_away_exact_paths(pair: tuple[Model, Model]) -> None:
    a, b = pair
    sa, sb = FieldSet.of(*a), FieldSet.of(*b)
    result = sa.difference(sb)
    assert paths_of(result) == a - b
    assert_trimmed(result)
    assert (paths_of(sa), paths_of(sb)) == (a, b)
    # set_test.go: intersection from union and difference
    assert sa.union(sb).difference(sa.difference(sb)).difference(sb.difference(sa)) == (
        sa.intersection(sb)
    )


@given(set_pairs())
def test_recursive_difference_takes_away_paths_at_or_below_a_member(
    pair: tuple[Model, Model],
) -> None:
    a, b = pair
    sa, sb = FieldSet.of(*a), FieldSet.of(*b)
    result = sa.recursive_difference(sb)
    assert paths_of(result) == {p for p in a if not below_a_member(p, b)}
    assert_trimmed(result)
    assert (paths_of(sa), paths_of(sb)) == (a, b)
    assert paths_of(result) <= paths_of(sa.difference(sb))


@given(set_pairs())
def test_equality_is_equality_of_paths(pair: tuple[Model, Model]) -> None:
    a, b = pair
    assert (FieldSet.of(*a) == FieldSet.of(*b)) == (a == b)
    assert FieldSet.of(*a) == FieldSet.of(*sorted(a, key=repr, reverse=True))


@given(PATH_SETS)
def test_iteration_order_is_structured_merge_diffs(model: Model) -> None:
    assert list(FieldSet.of(*model).paths()) == list(model_iterate(model))


# -- FieldsV1 -------------------------------------------------------------------------------------


@given(PATH_SETS)
def test_fields_v1_round_trip(model: Model) -> None:
    s = FieldSet.of(*model)
    document = s.to_fields_v1()
    assert FieldSet.from_fields_v1(document) == s
    assert FieldSet.from_fields_v1(json.loads(orjson.dumps(document))) == s
    FieldSet.check_fields_v1(document)


@given(PATH_SETS)
def test_fields_v1_encoding_marks_self_and_orders_siblings(model: Model) -> None:
    """``".": {}`` exactly when an element is both owned and has owned children, always first;
    siblings f: < k: < v: < i:, fields bytewise, keys and values in structured-merge-diff's
    value order."""
    document = FieldSet.of(*model).to_fields_v1()
    assert as_pairs(document) == as_pairs(model_fields_v1(model))


def test_sibling_order_example() -> None:
    elements = [
        "i:1",
        'v:"a"',
        "v:true",
        "v:1",
        'k:{"port":443,"protocol":"udp"}',
        'k:{"name":"second"}',
        'k:{"port":443,"protocol":"tcp"}',
        'k:{"name":"first"}',
        "f:é",
        "f:b",
        "f:a",
        "f:B",
        "i:0",
        "v:null",
    ]
    s = FieldSet.of(*[(e,) for e in elements])
    assert list(s.to_fields_v1()) == [
        "f:B",  # bytewise: upper case first, non-ASCII last
        "f:a",
        "f:b",
        "f:é",
        'k:{"name":"first"}',
        'k:{"name":"second"}',
        'k:{"port":443,"protocol":"tcp"}',
        'k:{"port":443,"protocol":"udp"}',
        "v:1",  # numbers, strings, booleans, ..., null
        'v:"a"',
        "v:true",
        "v:null",
        "i:0",
        "i:1",
    ]


def test_self_marker_example() -> None:
    s = FieldSet.of(
        ("f:data",),
        ("f:data", "f:a"),
        ("f:metadata", "f:labels", "f:app"),
        ("f:spec", 'k:{"name":"x"}'),
        ("f:spec", 'k:{"name":"x"}', "f:image"),
    )
    assert s.to_fields_v1() == {
        "f:data": {".": {}, "f:a": {}},
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {'k:{"name":"x"}': {".": {}, "f:image": {}}},
    }
    assert list(s.to_fields_v1()["f:data"]) == [".", "f:a"]


# serialize_test.go TestSerializeV1GoldenData: decode then encode gives the same bytes.
GOLDEN = [
    r'{"f:aaa":{},"f:aab":{},"f:aac":{},"f:aad":{},"f:aae":{},"f:aaf":{},"k:{\"name\":\"first\"}":{},"k:{\"name\":\"second\"}":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{},"k:{\"port\":443,\"protocol\":\"udp\"}":{},"v:1":{},"v:2":{},"v:3":{},"v:\"aa\"":{},"v:\"ab\"":{},"v:true":{},"i:1":{},"i:2":{},"i:3":{},"i:4":{}}',
    r'{"f:aaa":{"k:{\"name\":\"second\"}":{"v:3":{"f:aab":{}}},"v:3":{},"v:true":{}},"f:aab":{"f:aaa":{},"f:aaf":{"k:{\"port\":443,\"protocol\":\"udp\"}":{"k:{\"port\":443,\"protocol\":\"tcp\"}":{}}},"k:{\"name\":\"first\"}":{}},"f:aac":{"f:aaa":{"v:1":{}},"f:aac":{},"v:3":{"k:{\"name\":\"second\"}":{}}},"f:aad":{"f:aac":{"v:1":{}},"f:aaf":{"k:{\"name\":\"first\"}":{"k:{\"name\":\"first\"}":{}}},"i:1":{"i:1":{},"i:3":{"v:true":{}}}},"f:aae":{"f:aae":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"k:{\"port\":443,\"protocol\":\"udp\"}":{}},"i:4":{"f:aaf":{}}},"f:aaf":{"i:1":{"f:aac":{}},"i:2":{},"i:3":{}},"k:{\"name\":\"first\"}":{"f:aad":{"f:aaf":{}}},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"f:aaa":{"f:aad":{}}},"k:{\"port\":443,\"protocol\":\"udp\"}":{"f:aac":{},"k:{\"name\":\"first\"}":{"i:3":{}},"k:{\"port\":443,\"protocol\":\"udp\"}":{"i:4":{}}},"v:1":{"f:aac":{"i:4":{}},"f:aaf":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{}},"v:2":{"f:aad":{"f:aaf":{}},"i:1":{}},"v:3":{"f:aaa":{},"k:{\"name\":\"first\"}":{},"i:2":{}},"v:\"aa\"":{"f:aab":{"f:aaf":{}},"f:aae":{},"k:{\"name\":\"first\"}":{"f:aad":{}},"i:2":{}},"v:\"ab\"":{"f:aaf":{"i:4":{}},"k:{\"port\":443,\"protocol\":\"tcp\"}":{},"k:{\"port\":443,\"protocol\":\"udp\"}":{},"v:1":{"k:{\"port\":443,\"protocol\":\"udp\"}":{}},"i:1":{"f:aae":{"i:4":{}}}},"v:true":{"k:{\"name\":\"second\"}":{"f:aaa":{}},"i:2":{"k:{\"port\":443,\"protocol\":\"tcp\"}":{}}},"i:1":{"i:3":{"f:aaf":{}}},"i:2":{"f:aae":{},"k:{\"port\":443,\"protocol\":\"tcp\"}":{"v:1":{}}},"i:3":{"f:aab":{"v:true":{"v:\"aa\"":{}}},"f:aaf":{},"i:1":{}},"i:4":{"v:\"aa\"":{"f:aab":{"k:{\"name\":\"second\"}":{}}}}}',
    r'{"f:spec":{".":{},"f:apps":{".":{},"k:{\"name\":\" app-💻\"}":{".":{},"f:container":{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\"name\":\"port 🔑\"}":{".":{},"f:containerPort":{},"f:name":{}}}},"f:name":{}},"k:{\"name\":\" app-🚀\"}":{".":{},"f:container":{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\"name\":\"port-✅ \"}":{".":{},"f:containerPort":{},"f:name":{}}}},"f:name":{}}}}}',  # noqa: E501
]


@pytest.mark.parametrize("golden", GOLDEN)
def test_structured_merge_diff_golden_data(golden: str) -> None:
    s = FieldSet.from_fields_v1(json.loads(golden))
    assert orjson.dumps(s.to_fields_v1()).decode() == golden


def test_non_normalized_documents_are_normalized() -> None:
    """serialize_test.go TestDeserializeForValidNonNormalized: keys in any order, spaces in
    ``k:`` and ``v:`` payloads."""
    document: dict[str, Any] = {
        "f:aad": {},
        "f:aaa": {},
        "v:2": {},
        "v: 3": {},
        'k:{ "protocol":"udp","port":443}': {},
        'k:{"name":"first"}': {},
        "i:2": {},
        "v:1": {},
        "i:1": {},
    }
    s = FieldSet.from_fields_v1(document)
    assert list(s.to_fields_v1()) == [
        "f:aaa",
        "f:aad",
        'k:{"name":"first"}',
        'k:{"port":443,"protocol":"udp"}',
        "v:1",
        "v:2",
        "v:3",
        "i:1",
        "i:2",
    ]
    assert s == FieldSet.from_fields_v1(s.to_fields_v1())


def test_unknown_element_types_are_dropped() -> None:
    """serialize_test.go TestDropUnknown; an element left with only unknown children is a
    member (readIterV1: no children read means a member)."""
    assert FieldSet.from_fields_v1({"f:aaa": {}, "r:aab": {}}).to_fields_v1() == {"f:aaa": {}}
    assert FieldSet.from_fields_v1({"f:a": {"x:y": {}}}) == FieldSet.of(("f:a",))
    assert FieldSet.from_fields_v1({"f:a": {"x:y": {}, "f:b": {}}}) == FieldSet.of(("f:a", "f:b"))
    FieldSet.check_fields_v1({"f:aaa": {}, "r:aab": {}})


def test_null_is_an_empty_object() -> None:
    """A bare null is an empty set, a null body an owned leaf (json-iterator's ReadMapCB reads
    null as an empty object)."""
    assert FieldSet.from_fields_v1(None).empty()
    assert FieldSet.from_fields_v1({"f:a": None}) == FieldSet.of(("f:a",))
    assert FieldSet.from_fields_v1({}).empty()
    FieldSet.check_fields_v1(None)


def test_self_marker_alone_and_ignored_self_values() -> None:
    assert FieldSet.from_fields_v1({"f:a": {".": {}}}) == FieldSet.of(("f:a",))
    assert FieldSet.from_fields_v1({".": {}, "f:a": {".": {"f:x": {}}, "f:b": {}}}) == (
        FieldSet.of(("f:a",), ("f:a", "f:b"))
    )


# serialize-pe_test.go TestPathElementRoundTrip: these spellings decode and encode unchanged.
ROUND_TRIP_ELEMENTS = [
    "i:0",
    "i:1234",
    "f:",
    "f:spec",
    "f:more-complicated-string",
    "f: string-with-spaces   ",
    'k:{"name":"my-container"}',
    'k:{"name":"   name with spaces   "}',
    'k:{"port":"8080","protocol":"TCP"}',
    'k:{"optionalField":null}',
    'k:{"jsonField":{"A":1,"B":null,"C":"D","E":{"F":"G"}}}',
    'k:{"listField":["1","2","3"]}',
    "v:null",
    'v:"some-string"',
    "v:1234",
    'v:{"some":"json"}',
    'v:{"some":" some  with spaces  "}',
    'k:{"name":"app-🚀"}',
    'k:{"name":"app with-unicøde"}',
    'k:{"name":"你好世界"}',
    'k:{"name":"Привет, мир"}',
    "f:spec-🚀",
    "f:spec-\\n",
    'v:"a\\u0026b"',  # values are HTML-escaped ...
    'k:{"a<b":"\\u003c"}',  # ... key field names are not
]


@pytest.mark.parametrize("element", ROUND_TRIP_ELEMENTS)
def test_element_round_trip(element: str) -> None:
    assert FieldSet.from_fields_v1({element: {}}).to_fields_v1() == {element: {}}


# serialize-pe_test.go TestDeserializePathElementSuccess: accepted spellings and their normal form.
NORMALIZED_ELEMENTS = [
    ('v: {"some":"json"}', 'v:{"some":"json"}'),
    ('k: {"name":"my-container"}', 'k:{"name":"my-container"}'),
    ('v:{"some":"json"} ', 'v:{"some":"json"}'),
    ('k:{"name\\u002dcontainer":"my-container"}', 'k:{"name-container":"my-container"}'),
    ('k:{"name\\nwith\\nnewlines":"x"}', 'k:{"name\\nwith\\nnewlines":"x"}'),
    ('k:{"name\\"quoted\\"":"x"}', 'k:{"name\\"quoted\\"":"x"}'),
    ('k:{"name-\\ud83d\\ude80":"x"}', 'k:{"name-🚀":"x"}'),
    ('k:{"\\u4f60\\u597d":"\\u4e16\\u754c"}', 'k:{"你好":"世界"}'),
    ('v:"value\\u002dcontainer"', 'v:"value-container"'),
    ('v:"a&b"', 'v:"a\\u0026b"'),
    ('v:"\\b\\f\\u2028"', 'v:"\\u0008\\u000c\\u2028"'),
    ('k:{"b":1,"a":2}', 'k:{"a":2,"b":1}'),
    ('v:{"b":1,"a":2}', 'v:{"a":2,"b":1}'),
    ("v:1.0", "v:1"),  # a float64 with no fraction is written without one
    ("v:1e21", "v:1e+21"),
    ("v:0.0000001", "v:1e-7"),
    ("i:+5", "i:5"),
    ("i:007", "i:7"),
    ("i:-1", "i:-1"),
]


@pytest.mark.parametrize(("spelling", "normal"), NORMALIZED_ELEMENTS)
def test_element_normalization(spelling: str, normal: str) -> None:
    s = FieldSet.from_fields_v1({spelling: {}})
    assert s.to_fields_v1() == {normal: {}}
    assert s == FieldSet.of((normal,))


def test_key_and_value_helpers() -> None:
    assert fp.key({"protocol": "TCP", "containerPort": 80}) == (
        'k:{"containerPort":80,"protocol":"TCP"}'
    )
    assert fp.key({"name": "nginx"}) == 'k:{"name":"nginx"}'
    assert fp.value("a") == 'v:"a"'
    assert fp.value(80) == "v:80"
    assert fp.value(True) == "v:true"
    assert fp.value(1.5) == "v:1.5"
    assert fp.value("<&>") == 'v:"\\u003c\\u0026\\u003e"'
    assert fp.field("app.kubernetes.io/name") == "f:app.kubernetes.io/name"
    assert fp.index(3) == "i:3"


# serialize_test.go TestSetFromJSONTokenTypeErrors (the ones that survive JSON decoding) and
# serialize-pe_test.go TestDeserializePathElementError.
MALFORMED = [
    [],
    42,
    "hi",
    {"f:a": 1},
    {"f:a": []},
    {"f:a": "x"},
    {"": {}},
    {"x": {}},
    {":": {}},
    {"no-colon": {}},
    {"ab:c": {}},
    {"é:x": {}},  # Go looks for the colon at the second byte
    {"i:index is not a number": {}},
    {"i:1.23": {}},
    {"i:": {}},
    {"i: 0": {}},
    {"i:0 ": {}},
    {"i:--5": {}},
    {"i:²": {}},
    {"i:99999999999999999999": {}},
    {"v:invalid json": {}},
    {"v:": {}},
    {"k:invalid json": {}},
    {'k:{"name":invalid}': {}},
    {'v:{"some":" \\x41"}': {}},
    {"v": {}},
    {"k": {}},
    {"f": {}},
    {"i": {}},
    {'v:{"a":"b"': {}},
    {'k:{"a":"b"': {}},
    {'v:{"some":"json"} {"other":"json"}': {}},
    {'k:{"name":"my-container"} {"other":"my-container"}': {}},
    {'v:{"some":"json"} garbage': {}},
    {"k:[1]": {}},
    {'k:"a"': {}},
    {"v:NaN": {}},
    {"v:Infinity": {}},
    {"v:1e400": {}},
    {"f:a": {"f:b": {"i:x": {}}}},  # deep down too
]


@pytest.mark.parametrize("document", MALFORMED, ids=repr)
def test_malformed_documents_are_rejected(document: Any) -> None:
    with pytest.raises(FieldsV1Error):
        FieldSet.from_fields_v1(document)
    with pytest.raises(FieldsV1Error):
        FieldSet.check_fields_v1(document)


# -- set_test.go tables ---------------------------------------------------------------------------


def P(*names: str) -> Path:
    return tuple(fp.field(n) for n in names)


@pytest.mark.parametrize(
    ("a", "b", "difference", "recursive"),
    [
        ([P("a")], [P("a")], [], []),
        ([P("a", "b", "c")], [P("a", "b", "c")], [], []),
        ([P("a", "b", "c"), P("b", "b", "c")], [P("a", "b", "c")], [P("b", "b", "c")], None),
        ([P("a")], [P("a", "aa")], [P("a")], [P("a")]),
        ([P("a", "b", "c")], [P("a")], [P("a", "b", "c")], []),
        (
            [P("a", "aa", "aab"), P("a", "ab", "aba")],
            [P("a", "aa")],
            [P("a", "aa", "aab"), P("a", "ab", "aba")],
            [P("a", "ab", "aba")],
        ),
        (
            [P("a", "aa", "aab"), P("a", "ab", "aba")],
            [P("a")],
            [P("a", "aa", "aab"), P("a", "ab", "aba")],
            [],
        ),
    ],
)
def test_set_difference_table(
    a: list[Path], b: list[Path], difference: list[Path], recursive: list[Path] | None
) -> None:
    """set_test.go TestSetDifference."""
    sa, sb = FieldSet.of(*a), FieldSet.of(*b)
    assert sa.difference(sb) == FieldSet.of(*difference)
    expected = difference if recursive is None else recursive
    assert sa.recursive_difference(sb) == FieldSet.of(*expected)


def test_iterate_and_size_example() -> None:
    """set_test.go TestSetIterSize: rebuilding a set path by path as Iterate lists them."""
    first, second = fp.key({"name": "first"}), fp.key({"name": "second"})
    s1 = FieldSet.of(
        ("f:foo", "i:0", "f:bar", "f:baz"),
        ("f:foo", "i:0", "f:bar", "f:zot"),
        ("f:foo", "i:0", "f:bar"),
        ("f:foo", "i:0"),
        ("f:foo", "i:1", "f:bar", "f:baz"),
        ("f:foo", "i:1", "f:bar"),
        ("f:qux", first),
        ("f:qux", first, "f:bar"),
        ("f:qux", second, "f:bar"),
    )
    s2 = FieldSet()
    for added, path in enumerate(s1.paths()):
        assert len(list(s2.paths())) == added
        assert s2.empty() == (added == 0)
        s2.insert(path)
    assert s2 == s1
    assert list(s1.paths()) == [  # preorder: a level's members, then each child in order
        ("f:foo", "i:0"),
        ("f:foo", "i:0", "f:bar"),
        ("f:foo", "i:0", "f:bar", "f:baz"),
        ("f:foo", "i:0", "f:bar", "f:zot"),
        ("f:foo", "i:1", "f:bar"),
        ("f:foo", "i:1", "f:bar", "f:baz"),
        ("f:qux", first),
        ("f:qux", first, "f:bar"),
        ("f:qux", second, "f:bar"),
    ]


def test_insert_ignores_the_empty_path() -> None:
    s = FieldSet.of(())
    assert s.empty()
    assert not s.has(())


# -- path strings (conflict messages) -------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "printed"),
    [
        (
            ("f:spec", "f:containers", fp.key({"name": "app"}), "f:image"),
            '.spec.containers[name="app"].image',
        ),
        (("f:metadata", "f:finalizers", fp.value("a")), '.metadata.finalizers[="a"]'),
        ((fp.value("a"),), '[="a"]'),
        (
            ("f:ports", fp.key({"protocol": "TCP", "containerPort": 80})),
            '.ports[containerPort=80,protocol="TCP"]',
        ),
        (("f:data", "f:app.kubernetes.io/name"), ".data.app.kubernetes.io/name"),
        (("f:a", "i:3"), ".a[3]"),
        ((fp.value(True), fp.value(80), fp.value(None)), "[=true][=80][=null]"),
        ((fp.value(1.5), fp.value(1.0), fp.value(0.5e-5)), "[=1.5][=1][=5e-06]"),
        ((fp.value('say "hi"\t\x07é'),), '[="say \\"hi\\"\\t\\aé"]'),  # Go's %q
        ((fp.value("a&b"),), '[="a&b"]'),
        ((fp.key({"name": "x", "port": 8080}),), '[name="x",port=8080]'),
    ],
)
def test_path_string(path: Path, printed: str) -> None:
    assert fp.path_string(path) == printed


def test_repr_lists_paths() -> None:
    s = FieldSet.of(("f:data", "f:a"), ("f:data",))
    assert repr(s) == "FieldSet(['.data', '.data.a'])"
