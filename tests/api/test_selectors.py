"""Label and field selectors: matching, and kube-apiserver's exact 400 messages for bad ones.

The expected label-selector errors were checked against apimachinery itself (kubectl 1.37's
``set selector --local``, which runs the same ``labels`` parser and prefixes its own wrapper).
"""

from __future__ import annotations

from typing import Any

import pytest

from kubelite.api.catalogue import ResourceInfo, load_builtin_catalogue
from kubelite.api.catalogue.fieldlabels import NOT_KNOWN, FieldLabel
from kubelite.api.errors import APIError
from kubelite.api.kinds.apiextensions.crdvalidation import infos as crd_infos
from kubelite.api.machinery.selectors import (
    FieldSelector,
    Selection,
    SelectorError,
    for_kind,
    json_path_keys,
    object_fields,
    object_matcher,
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


# --- field labels per kind -----------------------------------------------------------------------

CATALOGUE = load_builtin_catalogue()


def kind(group: str, version: str, plural: str) -> ResourceInfo:
    info = CATALOGUE.lookup(group, version, plural)
    assert info is not None
    return info


def bound(info: ResourceInfo, field_text: str, label_text: str = "") -> Selection:
    selection = object_matcher(label_text, field_text)
    assert isinstance(selection, Selection)
    matcher = for_kind(selection, info.field_labels, info.field_label_error)
    assert isinstance(matcher, Selection)
    return matcher


def refusal(info: ResourceInfo, field_text: str) -> str:
    with pytest.raises(APIError) as caught:
        bound(info, field_text)
    assert caught.value.code == 400
    return caught.value.message


def labels_of(info: ResourceInfo) -> list[str]:
    return [label.name for label in info.field_labels]


def test_each_kind_declares_kubes_labels() -> None:
    assert labels_of(kind("", "v1", "pods")) == [
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
        "spec.host",
    ]
    assert labels_of(kind("", "v1", "nodes")) == ["metadata.name", "spec.unschedulable"]
    assert labels_of(kind("", "v1", "namespaces")) == ["status.phase", "metadata.name"]
    assert "type" in labels_of(kind("", "v1", "secrets"))
    assert "status.replicas" in labels_of(kind("", "v1", "replicationcontrollers"))
    assert "status.successful" in labels_of(kind("batch", "v1", "jobs"))
    csr = kind("certificates.k8s.io", "v1", "certificatesigningrequests")
    assert labels_of(csr) == ["metadata.name", "spec.signerName"]
    core_events = labels_of(kind("", "v1", "events"))
    assert {"involvedObject.uid", "reportingComponent", "source", "type"} <= set(core_events)
    events = labels_of(kind("events.k8s.io", "v1", "events"))
    assert {"regarding.name", "reportingController", "source"} <= set(events)
    assert not any(label.startswith("involvedObject.") for label in events)
    # no conversion of their own: runtime's default pair and text
    for info in (kind("", "v1", "configmaps"), kind("apps", "v1", "replicasets")):
        assert labels_of(info) == ["metadata.name", "metadata.namespace"]
        assert info.field_label_error == NOT_KNOWN


def test_kinds_word_their_refusal_their_own_way() -> None:
    assert refusal(kind("", "v1", "pods"), "spec.x=1") == "field label not supported: spec.x"
    assert refusal(kind("", "v1", "configmaps"), "data.a=1") == (
        '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    assert refusal(kind("batch", "v1", "jobs"), "status.succeeded=1") == (
        'field label "status.succeeded" not supported for batchv1.Job'
    )
    assert refusal(kind("resource.k8s.io", "v1", "resourceslices"), "spec.pool=a") == (
        "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: spec.pool"
    )
    assert refusal(kind("", "v1", "namespaces"), "metadata.namespace=") == (
        "field label not supported: metadata.namespace"
    )


def test_values_are_read_where_the_kind_keeps_them() -> None:
    pods = kind("", "v1", "pods")
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1", "serviceAccount": "legacy"},
        "status": {"podIPs": [{"ip": "10.0.0.2"}, {"ip": "fd00::2"}], "podIP": "10.0.0.9"},
    }
    assert bound(pods, "spec.hostNetwork=false")(pod)  # absent: Go's false
    assert bound(pods, "spec.host=n1")(pod)
    assert bound(pods, "spec.serviceAccountName=legacy")(pod)  # the deprecated field's value
    assert bound(pods, "status.podIP=10.0.0.2")(pod)  # the first of podIPs
    assert bound(pods, "status.podIPs=")(pod)  # accepted, never set
    assert not bound(pods, "status.podIPs=10.0.0.2")(pod)
    pod["spec"]["hostNetwork"] = True
    assert bound(pods, "spec.hostNetwork=true")(pod)
    jobs = kind("batch", "v1", "jobs")
    assert bound(jobs, "status.successful=0")({"metadata": {"name": "j"}})
    assert bound(jobs, "status.successful=3")({"status": {"succeeded": 3}})
    core = kind("", "v1", "events")
    reported = {"reportingComponent": "kubelet", "source": {}}
    assert bound(core, "source=kubelet")(reported)  # no source.component: the reporter
    assert bound(core, "source=sched")({"source": {"component": "sched"}})
    v1 = kind("events.k8s.io", "v1", "events")
    assert bound(v1, "source=kubelet,regarding.name=p")(
        {"reportingController": "kubelet", "regarding": {"name": "p"}}
    )


def test_labels_and_fields_select_together() -> None:
    pods = kind("", "v1", "pods")
    pod = {"metadata": {"name": "p", "labels": {"app": "web"}}, "spec": {"nodeName": "n"}}
    assert bound(pods, "spec.nodeName=n", "app=web")(pod)
    assert not bound(pods, "spec.nodeName=n", "app=db")(pod)
    assert not bound(pods, "spec.nodeName=m", "app=web")(pod)


def test_an_unbound_selection_checks_grammar_only() -> None:
    selection = object_matcher("", "spec.anything=x")
    assert isinstance(selection, Selection)
    assert selection({"spec": {"anything": "x"}})
    with pytest.raises(APIError) as caught:
        object_matcher("", "spec.anything")
    assert (
        caught.value.message
        == "invalid selector: 'spec.anything'; can't understand 'spec.anything'"
    )
    assert object_matcher("", "") is None
    plain = lambda obj: True  # noqa: E731 - any other matcher passes through unbound
    assert for_kind(plain, ()) is plain
    assert for_kind(None, ()) is None


def test_field_labels_survive_the_catalogue_cache() -> None:
    for info in CATALOGUE:
        assert ResourceInfo.from_json(info.to_json()) == info


def test_json_path_keys() -> None:
    assert json_path_keys(".spec.color") == ("spec", "color")
    assert json_path_keys(".metadata['a.b']") == ("metadata", "a.b")
    assert json_path_keys("spec.color") == ()


def paint_crd(scope: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "paints.example.org"},
        "spec": {
            "group": "example.org",
            "scope": scope,
            "names": {"plural": "paints", "kind": "Paint"},
            "versions": [
                {"name": "v1", "served": True, "storage": True,
                 "selectableFields": [{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}]},
                {"name": "v2", "served": True, "storage": False},
            ],
        },
        "status": {"conditions": [{"type": "Established", "status": "True"}]},
    }  # fmt: skip


def test_a_crd_version_declares_its_selectable_fields() -> None:
    v1, v2 = crd_infos(paint_crd("Namespaced"))
    assert labels_of(v1) == ["metadata.name", "metadata.namespace", "spec.color", "spec.size"]
    assert labels_of(v2) == ["metadata.name", "metadata.namespace"]
    assert v1.field_label_error == "field label not supported: {label}"
    assert ResourceInfo.from_json(v1.to_json()) == v1
    red = {"metadata": {"name": "r"}, "spec": {"color": "red", "size": 3}}
    assert bound(v1, "spec.color=red,spec.size=3")(red)
    assert bound(v1, "spec.color=")({"spec": {}})
    assert refusal(v2, "spec.color=red") == "field label not supported: spec.color"
    (cluster, _) = crd_infos(paint_crd("Cluster"))
    assert labels_of(cluster) == ["metadata.name", "spec.color", "spec.size"]
    assert refusal(cluster, "metadata.namespace=") == (
        "field label not supported: metadata.namespace"
    )


def test_field_label_declarations_are_well_formed() -> None:
    for info in CATALOGUE:
        names = [label.name for label in info.field_labels]
        assert len(names) == len(set(names)), info.kind
        assert "metadata.name" in names, info.kind
        assert all(isinstance(label, FieldLabel) for label in info.field_labels)
