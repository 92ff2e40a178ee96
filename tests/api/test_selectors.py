"""Label and field selectors: matching, and kube-apiserver's exact 400 messages for bad ones.

The expected label-selector errors were checked against apimachinery itself (kubectl 1.37's
``set selector --local``, which runs the same ``labels`` parser and prefixes its own wrapper).
"""

from __future__ import annotations

import pytest

from kubelite.api.selectors import (
    FieldSelector,
    SelectorError,
    object_fields,
    parse_field_selector,
    parse_label_selector,
)

WEB = {"app": "web", "tier": "frontend", "env": "prod"}

LABEL_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def matches(selector: str, labels: dict[str, str]) -> bool:
    return parse_label_selector(selector).matches(labels)


def label_error(selector: str) -> str:
    with pytest.raises(SelectorError) as caught:
        parse_label_selector(selector)
    return str(caught.value)


def field_error(selector: str) -> str:
    with pytest.raises(SelectorError) as caught:
        parse_field_selector(selector)
    return str(caught.value)


# --- label selectors: matching -------------------------------------------------------------------


@pytest.mark.parametrize("selector", ["app=web", "app==web", "app = web", "app\t==\tweb"])
def test_equality_matches_the_value_only(selector: str) -> None:
    assert matches(selector, WEB)
    assert not matches(selector, {"app": "db"})
    assert not matches(selector, {})


def test_not_equals_matches_other_values_and_a_missing_key() -> None:
    assert matches("app!=web", {"app": "db"})
    assert matches("app!=web", {"tier": "frontend"})
    assert not matches("app!=web", WEB)


def test_empty_value_after_equals_means_the_empty_string() -> None:
    assert matches("app=", {"app": ""})
    assert not matches("app=", {})
    assert not matches("app==", WEB)


def test_in_with_spaces() -> None:
    for selector in (
        "env in (prod,staging)",
        "env in ( prod , staging )",
        " env  in(staging,prod)",
    ):
        assert matches(selector, WEB)
        assert matches(selector, {"env": "staging"})
        assert not matches(selector, {"env": "dev"})
        assert not matches(selector, {})


def test_notin_matches_other_values_and_a_missing_key() -> None:
    assert matches("env notin (dev, qa)", WEB)
    assert matches("env notin (dev, qa)", {})
    assert not matches("env notin (dev, qa)", {"env": "qa"})


def test_empty_members_of_a_value_set_are_the_empty_string() -> None:
    assert parse_label_selector("x in (a,,b)").requirements[0].values == ("", "a", "b")
    assert parse_label_selector("x in (,,)").requirements[0].values == ("",)
    assert parse_label_selector("x notin ()").requirements[0].values == ("",)
    assert matches("x in (a,)", {"x": ""})
    assert not matches("x in (a,)", {})


def test_exists_and_does_not_exist() -> None:
    assert matches("app", WEB)
    assert not matches("app", {"tier": "frontend"})
    assert matches("!legacy", WEB)
    assert not matches("!app", WEB)
    assert matches(" ! legacy ", WEB)


def test_comma_is_and() -> None:
    selector = "app=web, tier!=db, env in (prod), !legacy, tier"
    assert matches(selector, WEB)
    assert not matches(selector, {**WEB, "legacy": "yes"})
    assert not matches(selector, {**WEB, "tier": "db"})
    assert not matches(selector, {"app": "web", "env": "prod"})


def test_in_and_notin_are_plain_words_outside_the_operator_position() -> None:
    assert matches("in in (in, notin)", {"in": "notin"})
    assert matches("notin", {"notin": "x"})
    assert matches("a=in", {"a": "in"})


def test_prefixed_keys() -> None:
    assert matches("example.com/app=web", {"example.com/app": "web"})
    assert not matches("example.com/app=web", WEB)


def test_greater_and_less_than_compare_integers() -> None:
    assert matches("replicas>2", {"replicas": "3"})
    assert not matches("replicas>2", {"replicas": "2"})
    assert matches("replicas<2", {"replicas": "1"})
    assert not matches("replicas<2", {"replicas": "one"})
    assert not matches("replicas<2", {})


@pytest.mark.parametrize("selector", ["", "   ", "\t\n"])
def test_empty_label_selector_matches_everything(selector: str) -> None:
    parsed = parse_label_selector(selector)
    assert parsed.empty
    assert parsed.matches({})
    assert parsed.matches(WEB)
    assert not parse_label_selector("app").empty


# --- label selectors: errors, word for word -------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a,", "found '', expected: identifier after ','"),
        ("a=b,,c", "found ',', expected: identifier after ','"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        (",", "found ',', expected: !, identifier, or 'end of string'"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("a!==b", "unable to parse requirement: found '=', expected: identifier"),
        ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
        ("a in", "unable to parse requirement: found '' expected: '('"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        (
            "a>b",
            'unable to parse requirement: values[0]: Invalid value: "b": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
    ],
)
def test_syntax_errors_carry_apimachinery_messages(selector: str, message: str) -> None:
    assert label_error(selector) == message


def test_invalid_label_value() -> None:
    assert label_error("app=-web") == (
        f'unable to parse requirement: values[0][app]: Invalid value: "-web": {LABEL_VALUE_RULE}'
    )
    assert label_error("app=" + "v" * 64) == (
        f'unable to parse requirement: values[0][app]: Invalid value: "{"v" * 64}": '
        "must be no more than 63 bytes"
    )
    assert label_error('app=a"b') == (
        f'unable to parse requirement: values[0][app]: Invalid value: "a\\"b": {LABEL_VALUE_RULE}'
    )
    parse_label_selector("app=" + "v" * 63)  # the limit itself is fine


def test_several_invalid_values_are_listed_in_sorted_order() -> None:
    assert label_error("x in (-b, -a)") == (
        "unable to parse requirement: ["
        f'values[0][x]: Invalid value: "-a": {LABEL_VALUE_RULE}, '
        f'values[1][x]: Invalid value: "-b": {LABEL_VALUE_RULE}]'
    )


def test_invalid_label_keys() -> None:
    prefix = "unable to parse requirement: <nil>: Invalid value:"
    assert label_error("-app=x") == f'{prefix} "-app": name part {LABEL_NAME_RULE}'
    assert label_error("/app") == f'{prefix} "/app": prefix part must be non-empty'
    assert label_error("a/b/c") == (
        f'{prefix} "a/b/c": a valid label key {LABEL_NAME_RULE} with an optional DNS subdomain '
        "prefix and '/' (e.g. 'example.com/MyName')"
    )
    assert label_error("Example.com/app") == (
        f'{prefix} "Example.com/app": prefix part a lowercase RFC 1123 subdomain must consist of '
        "lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    assert (
        label_error("k" * 64) == f'{prefix} "{"k" * 64}": name part must be no more than 63 bytes'
    )


# --- field selectors -----------------------------------------------------------------------------

FIELDS = {"metadata.name": "web", "metadata.namespace": "prod"}


@pytest.mark.parametrize("selector", ["metadata.name=web", "metadata.name==web"])
def test_field_equality(selector: str) -> None:
    parsed = parse_field_selector(selector)
    assert parsed.matches(FIELDS)
    assert not parsed.matches({**FIELDS, "metadata.name": "db"})


def test_field_not_equals_and_missing_fields_read_as_empty() -> None:
    parsed = parse_field_selector("metadata.namespace!=kube-system")
    assert parsed.matches(FIELDS)
    assert parsed.matches({})
    assert not parsed.matches({"metadata.namespace": "kube-system"})
    assert parse_field_selector("metadata.namespace=").matches({"metadata.name": "node-1"})


def test_field_terms_are_anded() -> None:
    parsed = parse_field_selector("metadata.name=web,metadata.namespace!=dev")
    assert parsed.matches(FIELDS)
    assert not parsed.matches({**FIELDS, "metadata.namespace": "dev"})


def test_field_value_escapes() -> None:
    parsed = parse_field_selector(r"metadata.name=a\,b\=c\\d")
    assert parsed.terms[0].value == "a,b=c\\d"
    assert parsed.matches({"metadata.name": "a,b=c\\d"})
    (term,) = parse_field_selector(r"metadata.name=a\,metadata.namespace\=b").terms
    assert (term.field, term.value) == ("metadata.name", "a,metadata.namespace=b")


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        (
            "metadata.name=a,b",
            "invalid selector: 'metadata.name=a,b'; can't understand 'b'",
        ),
        (r"metadata.name=a\b", "invalid field selector: invalid escape sequence: \\b"),
        ("metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"),
        ("metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
        ("metadata.name!=a=b", "invalid field selector: unescaped character in value: 61"),
    ],
)
def test_field_syntax_errors(selector: str, message: str) -> None:
    assert field_error(selector) == message


def test_unsupported_field() -> None:
    assert field_error("spec.nodeName=n1") == "field label not supported: spec.nodeName"
    assert field_error("metadata.name =web") == "field label not supported: metadata.name "
    assert field_error("metadata.name=a,status.phase=Running") == (
        "field label not supported: status.phase"
    )


def test_a_kind_can_support_more_fields() -> None:
    pods = ("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase")
    parsed = parse_field_selector("spec.nodeName=,status.phase!=Succeeded", supported=pods)
    pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": []},
        "status": {"phase": "Pending"},
    }
    fields = object_fields(pod, ("spec.nodeName", "status.phase"))
    assert fields == {
        "metadata.name": "p",
        "metadata.namespace": "default",
        "spec.nodeName": "",
        "status.phase": "Pending",
    }
    assert parsed.matches(fields)
    pod["spec"] = {"nodeName": "node-1"}
    assert not parsed.matches(object_fields(pod, ("spec.nodeName", "status.phase")))


def test_object_fields_render_scalars_like_go() -> None:
    obj = {"metadata": {"name": "n"}, "spec": {"hostNetwork": True}, "status": {"replicas": 3}}
    fields = object_fields(obj, ("spec.hostNetwork", "status.replicas", "spec.hostNetwork.x"))
    assert fields["metadata.namespace"] == ""
    assert fields["spec.hostNetwork"] == "true"
    assert fields["status.replicas"] == "3"
    assert fields["spec.hostNetwork.x"] == ""


def test_exact_name_and_namespace() -> None:
    parsed = parse_field_selector("metadata.namespace=prod,metadata.name==web")
    assert parsed.exact_name() == "web"
    assert parsed.exact_namespace() == "prod"
    assert parse_field_selector("metadata.name=web,metadata.name=web").exact_name() == "web"
    assert parse_field_selector("metadata.name!=web").exact_name() is None
    assert parse_field_selector("metadata.namespace=prod").exact_name() is None
    assert parse_field_selector(r"metadata.name=a\,b").exact_name() == "a,b"


@pytest.mark.parametrize("selector", ["", ",", ",,"])
def test_empty_field_selector_matches_everything(selector: str) -> None:
    parsed = parse_field_selector(selector)
    assert parsed.empty
    assert parsed == FieldSelector()
    assert parsed.matches({})
    assert parsed.matches(FIELDS)
    assert parsed.exact_name() is None
