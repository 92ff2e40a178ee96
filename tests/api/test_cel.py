"""kubelite.api.cel: kube's CEL environment (extensions and Kubernetes' libraries), cel-go's
compile texts for undeclared references, runtime errors in cel-go's texts, the cost guard."""

from __future__ import annotations

from typing import Any

import pytest

from kubelite.api import cel

SELF: dict[str, Any] = {"a": 1, "l": [3, 1, 2], "s": "Hello", "m": {"k": "v"}}


def run(expression: str, value: Any = None) -> Any:
    compiled = cel.compile_expression(expression, ("self", "oldSelf"))
    return cel.evaluate(compiled, {"self": SELF if value is None else value})[0]


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # strings extension
        ('self.s.charAt(1) == "e"', True),
        ('self.s.indexOf("l") == 2 && self.s.lastIndexOf("l") == 3', True),
        ('self.s.lowerAscii() == "hello" && self.s.upperAscii() == "HELLO"', True),
        ('"a,b,c".split(",") == ["a", "b", "c"] && ["a", "b"].join("-") == "a-b"', True),
        ('self.s.substring(1, 3) == "el" && " x ".trim() == "x"', True),
        ('"aaa".replace("a", "b", 2) == "bba"', True),
        ('strings.quote("a\\"b") == "\\"a\\\\\\"b\\""', True),
        # lists (kube's library and cel-go's ext.Lists)
        ("self.l.isSorted() == false && [1, 2, 2].isSorted()", True),
        ("self.l.sum() == 6 && self.l.min() == 1 && self.l.max() == 3", True),
        ("self.l.indexOf(1) == 1 && [1, 2, 1].lastIndexOf(1) == 2", True),
        ("self.l.sort() == [1, 2, 3] && self.l.slice(1, 2) == [1]", True),
        ("[[1], [2, [3]]].flatten() == [1, 2, [3]] && [1, 1, 2].distinct() == [1, 2]", True),
        ("lists.range(3) == [0, 1, 2] && self.l.first().value() == 3", True),
        # sets, math, encoders
        ("sets.contains([1, 2, 3], [2]) && sets.intersects([1], [1, 4])", True),
        ("sets.equivalent([1, 2], [2, 1, 1])", True),
        ("math.greatest(1, 5, 2) == 5 && math.least([4, 2]) == 2 && math.abs(-3) == 3", True),
        ('base64.encode(b"hi") == "aGk="', True),
        # regex
        ('self.s.find("l+") == "ll" && self.s.findAll("l") == ["l", "l"]', True),
        ('"abc".find("z") == ""', True),
        # urls
        ('url("https://a.example:8080/p?q=1&q=2").getPort() == "8080"', True),
        ('url("https://a.example:8080/p").getHostname() == "a.example"', True),
        ('url("https://a.example/p?q=1&q=2").getQuery()["q"] == ["1", "2"]', True),
        ('url("https://a.example/p").getScheme() == "https" && isURL("/relative/path")', True),
        ('isURL("not a url")', False),
        # quantity
        ('quantity("1Gi").isGreaterThan(quantity("1G"))', True),
        ('quantity("1") == quantity("1000m")', True),
        ('quantity("500m").asApproximateFloat() == 0.5', True),
        ('quantity("2k").asInteger() == 2000 && quantity("1.5").isInteger() == false', True),
        ('quantity("1").add(quantity("500m")).compareTo(quantity("1.5")) == 0', True),
        ('quantity("50k").sub(20000) == quantity("30k") && quantity("-1").sign() == -1', True),
        ('isQuantity("10Mi") && !isQuantity("10 Mi")', True),
        # ip and cidr
        ('ip("192.168.0.1").family() == 4 && ip("::1").family() == 6', True),
        ('string(ip("::1")) == "::1" && ip("127.0.0.1").isLoopback()', True),
        ('isIP("1.2.3.4") && !isIP("1.2.3") && ip.isCanonical("::1")', True),
        ('cidr("10.0.0.0/8").containsIP("10.1.2.3")', True),
        ('cidr("10.0.0.0/8").containsIP(ip("11.0.0.1"))', False),
        ('cidr("10.0.0.0/8").containsCIDR("10.1.0.0/16")', True),
        ('cidr("10.0.0.1/8").masked() == cidr("10.0.0.0/8")', True),
        ('cidr("10.0.0.1/8").prefixLength() == 8', True),
        ('string(cidr("10.0.0.1/8").ip()) == "10.0.0.1" && !isCIDR("1.2.3.0/33")', True),
        # format
        ('format.dns1123Label().validate("abc").hasValue()', False),
        ('format.dns1123Label().validate("Abc").value().size() == 1', True),
        ('format.named("uuid").hasValue() && !format.named("nope").hasValue()', True),
        ('format.dns1123LabelPrefix().validate("abc-").hasValue()', False),
        ('format.labelValue().validate("a b").hasValue()', True),
        ('format.qualifiedName().validate("example.com/My_name").hasValue()', False),
        ('format.qualifiedName().validate("a/b/c").hasValue()', True),
        # semver
        ('semver("1.2.3").isLessThan(semver("1.10.0"))', True),
        ('semver("v1.2", true).major() == 1 && semver("v1.2", true).minor() == 2', True),
        ('isSemver("1.2.3") && !isSemver("1.2")', True),
        ('semver("1.0.0-alpha").compareTo(semver("1.0.0")) == -1', True),
        # optional types, with the .? and [? syntax
        ("self.?missing.orValue(5) == 5 && self.?a.orValue(5) == 1", True),
        ("self.l[?7].orValue(0) == 0 && self.l[?0].orValue(0) == 3", True),
        ('self.m[?"k"].hasValue() && optional.of(1).value() == 1', True),
        ("optional.none().orValue(2) == 2", True),
        # the core, unchanged
        ("self.l.all(x, x > 0) && self.l.exists_one(x, x == 1) && has(self.a)", True),
    ],
)
def test_the_libraries(expression: str, expected: Any) -> None:
    assert run(expression) == expected


def test_undeclared_references_fail_compilation_in_cel_gos_text() -> None:
    with pytest.raises(cel.CompileError) as info:
        cel.compile_expression("foo(1)", ("self",))
    assert str(info.value) == (
        "ERROR: <input>:1:4: undeclared reference to 'foo' (in container '')\n | foo(1)\n | ...^"
    )
    with pytest.raises(cel.CompileError) as info:
        cel.compile_expression("self.size > 1 && self.foo()", ("self",))
    assert "ERROR: <input>:1:26: undeclared reference to 'foo' (in container '')" in str(info.value)
    with pytest.raises(cel.CompileError) as info:
        cel.compile_expression("other.x == 1", ("self",))
    assert str(info.value).startswith(
        "ERROR: <input>:1:1: undeclared reference to 'other' (in container '')"
    )
    with pytest.raises(cel.CompileError) as info:
        cel.compile_expression("self.l.all(x, y > 0)", ("self",))
    assert "undeclared reference to 'y'" in str(info.value)
    assert "'x'" not in str(info.value)
    with pytest.raises(cel.CompileError) as info:
        cel.compile_expression("format.nope().validate('x')", ("self",))
    assert "undeclared reference to 'format.nope'" in str(info.value)


def test_syntax_errors_in_cel_gos_layout() -> None:
    with pytest.raises(cel.CompileError) as info:
        cel.compile_expression("self >", ("self",))
    text = str(info.value)
    assert text.startswith("ERROR: <input>:1:7: Syntax error: mismatched input '<EOF>'")
    assert text.endswith("\n | self >\n | ......^")


@pytest.mark.parametrize(
    ("expression", "text", "kind"),
    [
        ("self.missing == 1", "no such key: missing", "other"),
        ("self.a / 0 == 1", "division by zero", "other"),
        ("self.a % 0 == 1", "modulus by zero", "other"),
        ("9223372036854775807 + self.a > 0", "integer overflow", "other"),
        ('self.a + "x" == "y"', "no such overload", "overload"),
        ('quantity("1.5").asInteger() == 1', "cannot convert value to integer", "other"),
        (
            'quantity("x") == quantity("1")',
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            "other",
        ),
        ("[].min() == 1", "min called on empty list", "other"),
        ('self.s.charAt(9) == ""', "index out of range: 9", "other"),
        (
            'ip("1.2.3") == ip("1.2.3.4")',
            'IP Address "1.2.3" parse error during conversion',
            "other",
        ),
        ('self.s.matches("[")', "error parsing regexp: unclosed character class: `[`", "other"),
    ],
)
def test_runtime_errors_in_cel_gos_texts(expression: str, text: str, kind: str) -> None:
    compiled = cel.compile_expression(expression, ("self",))
    with pytest.raises(cel.EvalError) as info:
        cel.evaluate(compiled, {"self": SELF})
    assert str(info.value).startswith(text)
    assert info.value.kind == kind


def test_the_cost_guard_stops_quadratic_and_worse_rules_on_big_data() -> None:
    rule = "self.all(x, self.all(y, self.all(z, x + y + z >= 0)))"
    compiled = cel.compile_expression(rule, ("self",))
    assert cel.evaluate(compiled, {"self": list(range(20))})[0] is True
    with pytest.raises(cel.EvalError) as info:
        cel.evaluate(compiled, {"self": list(range(200))})
    assert str(info.value) == "operation cancelled: actual cost limit exceeded"
    assert info.value.kind == "cost"
    flat = cel.compile_expression("self.all(x, x >= 0)", ("self",))
    assert cel.evaluate(flat, {"self": list(range(200))})[0] is True


def test_overlong_rules_are_refused_at_compile() -> None:
    with pytest.raises(cel.CompileError, match="longer than"):
        cel.compile_expression("self == 1 || " * 1000 + "true", ("self",))


def test_variables_are_those_declared_and_used() -> None:
    compiled = cel.compile_expression("self.a == oldSelf.a", ("self", "oldSelf"))
    assert compiled.variables == frozenset({"self", "oldSelf"})
    assert cel.compile_expression("self.a > 0", ("self", "oldSelf")).variables == {"self"}
    with pytest.raises(cel.CompileError):
        cel.compile_expression("self.a == oldSelf.a", ("self",))


@pytest.mark.parametrize(
    ("expression", "value", "expected"),
    [
        ("cel.bind(x, self + 1, x * x)", 2, 9),
        # nested, and shadowing: the inner x is the outer x + 1, the outer x is back after it
        ("cel.bind(x, self, cel.bind(x, x + 1, x * 10) + x)", 2, 32),
        ("self.map(x, cel.bind(x, x * 2, x + 1))", [1, 2], [3, 5]),
        # a string literal holding the macro's text is left as it is
        ('cel.bind(s, "cel.bind(x, 1, x)", s + \'.all(i, v, v)\')', 0,
         "cel.bind(x, 1, x).all(i, v, v)"),
        ("self.all(i, v, i < v)", [1, 2, 3], True),
        ("self.all(i, v, i < v)", [0], False),
        ('self.exists(k, v, k == "b" && v == 2)', {"a": 1, "b": 2}, True),
        ("self.existsOne(i, v, v > 1)", [1, 2, 3], False),
        ("self.exists_one(i, v, v > 2)", [1, 2, 3], True),
        ("self.transformList(i, v, i * v)", [1, 2, 3], [0, 2, 6]),
        ("self.transformList(i, v, v > 1, i * v)", [1, 2, 3], [2, 6]),
        ("self.transformMap(k, v, v + 1)", {"a": 1, "b": 2}, {"a": 2, "b": 3}),
        ("self.transformMap(i, v, v > 1, v + 1)", [5, 1, 7], {0: 6, 2: 8}),
        ("self.transformMapEntry(k, v, {v: k})", {"a": "x", "b": "y"}, {"x": "a", "y": "b"}),
        ("self.all(i, v, v.all(j, w, w > i))", [[1, 2], [3]], True),
        ("self.all(i, v, v.all(i, v, v > i))", [[1, 2], [0]], False),
        ("cel.bind(i, 10, self.all(i, v, i < v) && i == 10)", [1, 2], True),
    ],
)  # fmt: skip
def test_bind_and_two_variable_comprehensions(expression: str, value: Any, expected: Any) -> None:
    assert run(expression, value) == expected


def test_macro_misuse_in_cel_gos_texts() -> None:
    with pytest.raises(cel.CompileError) as info:
        cel.compile_expression("cel.bind(a.b, 1, 2) == 2")
    assert str(info.value) == (
        "ERROR: <input>:1:11: cel.bind() variable names must be simple identifiers\n"
        " | cel.bind(a.b, 1, 2) == 2\n | ..........^"
    )
    with pytest.raises(cel.CompileError, match="1:13: argument must be a simple name"):
        cel.compile_expression("self.all(i, 1, true)")
    # an undeclared name inside a rewritten macro is reported where the source has it
    with pytest.raises(cel.CompileError) as info:
        cel.compile_expression("self.all(i, v, w > i)")
    assert str(info.value).startswith("ERROR: <input>:1:16: undeclared reference to 'w'")
    with pytest.raises(cel.EvalError, match="insert failed: key z already exists"):
        run('self.transformMapEntry(k, v, {"z": k})', {"a": "x", "b": "y"})


def test_cel_bind_is_no_comprehension_for_the_cost_guard() -> None:
    assert cel.compile_expression("cel.bind(x, self, x.all(y, y > 0))").depth == 1
    assert cel.compile_expression("self.all(i, v, self.exists(j, w, w == v))").depth == 2


@pytest.mark.parametrize(
    ("expression", "kind"),
    [
        ("self.a == 1", "bool"),
        ("!self.b", "bool"),
        ("1", "int"),
        ("'x'", "string"),
        ("[1, 2]", "list"),
        ("self.l.size()", "int"),
        ("size(self.l)", "int"),
        ("self.l.all(x, x > 0)", "bool"),
        ("self.s", None),
        ("'a' + self.s", None),
        ("self.b ? 'a' : 1", None),
        ("[1][0]", None),
        ("string(self.a)", "string"),
    ],
)
def test_result_kind_only_where_it_is_sure(expression: str, kind: str | None) -> None:
    assert cel.result_kind(expression) == kind


@pytest.mark.parametrize(
    "source",
    [
        r"""!'a\b'.contains(r'\') && 'x' != 'abc'""",
        r"""r'\' + 'x' == r'\x' && cel.bind(y, 1, y == 1)""",
        r'''R"\" != "abc" && r"""\""" == '\\' ''',
    ],
)
def test_a_raw_strings_backslash_ends_nothing(source: str) -> None:
    """In a raw string a backslash is a plain character: ``r'\'`` is a whole literal, and the
    text after it is not read as names (which would be undeclared)."""
    compiled = cel.compile_expression(source)
    assert cel.evaluate(compiled, {"self": SELF})[0] is True
