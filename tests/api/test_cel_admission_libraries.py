"""The CEL pieces admission policies added to kubelite's CEL: ``string.format`` (cel-go's strings
extension v2), lazy composited variables, null-valued variables, field projection, and
``Object{}``/``JSONPatch{}`` construction."""

from __future__ import annotations

from typing import Any

import pytest

from kubelite.api import cel
from kubelite.api.cel.compiling import projections
from kubelite.api.cel.composition import Frame, composing
from kubelite.api.cel.objects import plain, rewrite_objects, type_errors


def run(source: str, **activation: Any) -> Any:
    return cel.evaluate(cel.compile_expression(source, tuple(activation)), activation)[0]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("'%s has %d replicas'.format(['web', 3])", "web has 3 replicas"),
        ("'%.2f|%f|%e'.format([1234.5, 0.25, 1052.032911275])", "1,234.50|0.250000|1.052033e+03"),
        (
            "'%s'.format([[1, 'a', 2.5, true, null, {'b': 1, 'a': ['x']}]])",
            '[1, "a", 2.500000, true, null, {"a":["x"], "b":1}]',
        ),
        ("'%x %X %o %b %b'.format([255, 'hi', 8, 5, true])", "ff 6869 10 101 1"),
        ("'100%% %s %s'.format([2.5, false])", "100% 2.5 false"),
        ("string(true) + string(false)", "truefalse"),
    ],
)
def test_format(source: str, expected: str) -> None:
    assert run(source) == expected


@pytest.mark.parametrize(
    ("source", "error"),
    [
        (
            "'%d'.format([1.5])",
            "error during formatting: decimal clause can only be used on integers, was given "
            "double",
        ),
        (
            "'%q'.format([1])",
            'could not parse formatting clause: unrecognized formatting clause "q"',
        ),
        ("'%s %s'.format([1])", "index 1 out of range"),
    ],
)
def test_format_errors(source: str, error: str) -> None:
    with pytest.raises(cel.EvalError) as failed:
        run(source)
    assert str(failed.value) == error


def test_null_variables_and_projection() -> None:
    assert run("oldObject == null && object.spec.x == 1", object={"spec": {"x": 1}}, oldObject=None)
    assert projections("object.spec.a + object.metadata.b", frozenset({"object"})) == (
        ("object", frozenset({"spec", "metadata"})),
    )
    assert projections("object == null || size(object) > 1", frozenset({"object"})) == ()
    compiled = cel.compile_expression("object.spec", ("object",))
    big = {"spec": 1, "metadata": {"managedFields": ["x"] * 1000}}
    assert cel.evaluate(compiled, {"object": big}) == (1, 3)  # the cost of what it reads only


def test_composited_variables_are_lazy_and_evaluated_once() -> None:
    names = ("object",)
    variables = {
        "a": cel.compile_expression("object.x + 1", names, composited=()),
        "b": cel.compile_expression("variables.a * 2", names, composited=("a",)),
        "broken": cel.compile_expression("object.nope", names, composited=()),
        "bad": "compilation failed: ERROR: <input>:1:1: ...",
    }
    activation = {"object": {"x": 1}}
    frame = Frame(variables, activation, cel.RUNTIME_BUDGET)
    with composing(frame):
        for source, expected in [
            ("variables.b + variables.a", 6),
            ("false && variables.broken", False),
            ("variables.broken == 1 || true", True),
        ]:
            compiled = cel.compile_expression(source, names, composited=variables)
            assert cel.evaluate(compiled, activation)[0] == expected
        for source, error in [
            (
                "variables.broken",
                'composited variable "broken" fails to evaluate: no such key: nope',
            ),
            ("variables.bad", 'composited variable "bad" fails to compile: compilation failed'),
        ]:
            with pytest.raises(cel.EvalError) as failed:
                cel.evaluate(
                    cel.compile_expression(source, names, composited=variables), activation
                )
            assert str(failed.value).startswith(error)
    assert set(frame.values) == {"a", "b", "broken", "bad"}
    with pytest.raises(cel.CompileError, match="undefined field 'c'"):
        cel.compile_expression("variables.c", names, composited=("a",))


def test_object_construction() -> None:
    source = "Object{spec: Object.spec{replicas: 1, template: Object.spec.templatex{}}}"
    value = run(rewrite_objects(source))
    assert plain(value) == {"spec": {"replicas": 1, "template": {}}}
    assert type_errors(value) == [
        'unexpected type name "Object.spec.templatex", expected "Object.spec.template", which '
        "matches field name path from root Object type"
    ]
    patch = "[JSONPatch{op: 'add', path: '/a/' + jsonpatch.escapeKey('x/y~z')}]"
    assert plain(run(rewrite_objects(patch))) == [{"op": "add", "path": "/a/x~1y~0z"}]
