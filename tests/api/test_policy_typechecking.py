"""A ValidatingAdmissionPolicy's type check (kube's validating/typechecking.go): the kinds its
rules match, and cel-go's ``undefined field`` issues of each expression against their schemas
(and params' kind), in kube's exact warning texts; nothing for what kubelite cannot type."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubelite.api.admission.policy.typechecking import (
    GroupVersionKind,
    check_policy,
    types_to_check,
)
from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.controllers.policystatus import PolicyStatusController
from kubelite.api.kinds import new_registry
from kubelite.storage import Store

Obj = dict[str, Any]
DEPLOYMENTS = {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}
CONFIGMAPS = {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}
WIDGET_SCHEMA: Obj = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
    },
}


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


def policy(*validations: Obj, rules: tuple[Obj, ...] = (DEPLOYMENTS,), **spec: Any) -> Obj:
    return {
        "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["*"], **r} for r in rules]},
            "validations": list(validations),
            **spec,
        }
    }


def warning(expression: str, catalogue: Catalogue, **spec: Any) -> str:
    """The one warning of a policy with one validation; "" when none."""
    warnings = check_policy(policy({"expression": expression}, **spec), catalogue)
    assert len(warnings) <= 1
    return warnings[0]["warning"] if warnings else ""


def test_a_typo_in_a_deployment_field_reads_as_kube_writes_it(catalogue: Catalogue) -> None:
    assert check_policy(policy({"expression": "object.replicas > 1"}), catalogue) == [
        {
            "fieldRef": "spec.validations[0].expression",
            "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n"
            " | object.replicas > 1\n"
            " | ......^\n",
        }
    ]
    assert warning("object.spec.replica <= 5", catalogue) == (
        "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'\n"
        " | object.spec.replica <= 5\n"
        " | ...........^\n"
    )


def test_the_core_group_reads_with_an_empty_group(catalogue: Catalogue) -> None:
    assert warning("object.dta.x == 'a'", catalogue, rules=(CONFIGMAPS,)) == (
        "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'dta'\n"
        " | object.dta.x == 'a'\n"
        " | ......^\n"
    )


def test_each_matched_kind_has_its_entry_sorted_by_group_version_kind(
    catalogue: Catalogue,
) -> None:
    rules = (
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["replicasets", "deployments"]},
        CONFIGMAPS,
    )
    # replicasets have no strategy; deployments and configmaps have no minReadySecond
    text = warning("object.spec.strategy == null || object.spec.minReadySecond > 0", catalogue,
                   rules=rules)  # fmt: skip
    snippet = " | object.spec.strategy == null || object.spec.minReadySecond > 0\n"
    assert text == (
        "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'spec'\n"
        + snippet + " | " + "." * 6 + "^\n"
        "ERROR: <input>:1:39: undefined field 'spec'\n"
        + snippet + " | " + "." * 38 + "^\n"
        "\n"
        "apps/v1, Kind=Deployment: ERROR: <input>:1:44: undefined field 'minReadySecond'\n"
        + snippet + " | " + "." * 43 + "^\n"
        "\n"
        "apps/v1, Kind=ReplicaSet: ERROR: <input>:1:12: undefined field 'strategy'\n"
        + snippet + " | " + "." * 11 + "^\n"
        "ERROR: <input>:1:44: undefined field 'minReadySecond'\n"
        + snippet + " | " + "." * 43 + "^\n"
    )  # fmt: skip


def test_params_are_typed_by_their_kind_and_message_expressions_are_checked(
    catalogue: Catalogue,
) -> None:
    checked = policy(
        {"expression": "object.spec.replicas <= int(params.data.max)"},
        {"expression": "true", "messageExpression": "'at most ' + params.dta.max"},
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
    )
    assert check_policy(checked, catalogue) == [
        {
            "fieldRef": "spec.validations[1].messageExpression",
            "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:20: undefined field 'dta'\n"
            " | 'at most ' + params.dta.max\n"
            " | ...................^\n",
        }
    ]
    # a params kind without a known schema is dyn
    unknown = {"apiVersion": "example.com/v1", "kind": "Limits"}
    assert warning("params.anything.at.all == 1", catalogue, paramKind=unknown) == ""


def test_every_issue_of_an_expression_in_order_has_at_the_macro(catalogue: Catalogue) -> None:
    source = "has(object.spec.paused) && has(object.spec.pausd) && oldObject.metdata.name == ''"
    assert warning(source, catalogue) == (
        "apps/v1, Kind=Deployment: ERROR: <input>:1:31: undefined field 'pausd'\n"
        f" | {source}\n"
        " | ..............................^\n"
        "ERROR: <input>:1:63: undefined field 'metdata'\n"
        f" | {source}\n"
        " | ..............................................................^\n"
    )
    # the issue of a selection inside has() that is not the tested one is at its dot
    assert warning("has(object.spek.paused)", catalogue).startswith(
        "apps/v1, Kind=Deployment: ERROR: <input>:1:11: undefined field 'spek'\n"
    )


def test_lines_and_wide_characters_as_cel_go_shows_them(catalogue: Catalogue) -> None:
    assert warning("'é' == object.nme", catalogue) == (
        "apps/v1, Kind=Deployment: ERROR: <input>:1:14: undefined field 'nme'\n"
        " | 'é' == object.nme\n"
        " | .\uff0e...........^\n"
    )
    assert warning("true &&\n  object.spec.replicaz > 1", catalogue) == (
        "apps/v1, Kind=Deployment: ERROR: <input>:2:14: undefined field 'replicaz'\n"
        " |   object.spec.replicaz > 1\n"
        " | .............^\n"
    )


@pytest.mark.parametrize(
    "expression",
    [
        "object.spec.replicas <= 5 && oldObject.metadata.name == 'x'",
        "object.metadata.labels.team == 'a'",  # a map admits any key
        "object.spec.template.metadata.annotations.x.size() > 0",
        "object.metadata.namespace == 'default'",
        "has(object.spec.template.spec.nodeSelector)",
        "object.spec.replicas.foo == 1",  # a field of a scalar: another issue, not reported
        "object.spec.template.spec.containers.all(c, c.imag == 'x')",  # comprehension variable
        "object.spec.template.spec.containers[0].imag == 'x'",  # behind an index
        "object.spec.?strategy.rollingUpdat.orValue(1) == 1",  # behind an optional selection
        "object.spec.selector.matchLabels.exists(k, k == 'a')",
        "[1].all(object, object.foo == 1)",  # a macro's variable of the same name
        "cel.bind(object, 1, object.foo == 1)",
        "request.foo == 'x' && namespaceObject.metadata.labels.a == 'b'",
        "params.foo == 1",  # no paramKind: params is not declared (kubelite refuses it)
        "object.spec.foo(1)",  # an undeclared function: cel-go's issues would be others
        "variables.missing == 1",
        "object.metadata.__namespace__ == 'x'",  # an escaped name
    ],
)
def test_no_warning_for_what_checks_or_what_kubelite_cannot_type(
    expression: str, catalogue: Catalogue
) -> None:
    assert warning(expression, catalogue) == ""


def test_a_policy_without_kinds_to_check_has_no_warnings(catalogue: Catalogue) -> None:
    typo = {"expression": "object.replicaz > 1"}
    for rule in (
        {"apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["deployments"]},
        {"apiGroups": ["apps"], "apiVersions": ["v*"], "resources": ["deployments"]},
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["*", "deployments/status"]},
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["nothings"]},
    ):
        assert check_policy(policy(typo, rules=(rule,)), catalogue) == []
    assert check_policy({"spec": {"validations": [typo]}}, catalogue) == []


def test_the_kinds_to_check_as_kube_collects_them(catalogue: Catalogue) -> None:
    rules = (
        {"apiGroups": ["apps"], "apiVersions": ["v1"],
         "resources": ["deployments/scale", "deployment"]},
        {"apiGroups": ["apps", "*"], "apiVersions": ["v1"], "resources": ["replicasets"]},
        {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "*"]},
    )  # fmt: skip
    assert types_to_check(policy(rules=rules), catalogue) == [
        GroupVersionKind("", "v1", "Pod"),
        GroupVersionKind("apps", "v1", "Deployment"),
    ]
    core = [
        "services", "serviceaccounts", "secrets", "resourcequotas", "replicationcontrollers",
        "podtemplates", "pods", "persistentvolumes", "persistentvolumeclaims", "nodes",
        "namespaces", "limitranges", "events", "endpoints", "configmaps",
    ]  # fmt: skip
    # at most 10, counted in the order of the sorted resources
    many = {"apiGroups": [""], "apiVersions": ["v1"], "resources": core}
    assert [str(g) for g in types_to_check(policy(rules=(many,)), catalogue)] == [
        "/v1, Kind=ConfigMap", "/v1, Kind=Endpoints", "/v1, Kind=Event", "/v1, Kind=LimitRange",
        "/v1, Kind=Namespace", "/v1, Kind=Node", "/v1, Kind=PersistentVolume",
        "/v1, Kind=PersistentVolumeClaim", "/v1, Kind=Pod", "/v1, Kind=PodTemplate",
    ]  # fmt: skip


def widget_catalogue() -> Catalogue:
    catalogue = load_builtin_catalogue()
    catalogue.add(
        ResourceInfo(
            "example.com", "v1", "Widget", "widgets", True, builtin=False,
            schema=json.dumps(WIDGET_SCHEMA),
        )
    )  # fmt: skip
    return catalogue


def test_custom_kinds_are_typed_from_their_schema() -> None:
    catalogue = widget_catalogue()
    rule = {"apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]}
    source = "object.spec.sise > 1 && object.metadata.nam == '' && object.spec.labels.x == ''"
    assert warning(source, catalogue, rules=(rule,)) == (
        "example.com/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'sise'\n"
        f" | {source}\n"
        " | ...........^\n"
        "ERROR: <input>:1:40: undefined field 'nam'\n"
        f" | {source}\n"
        " | .......................................^\n"
    )
    # preserved unknown fields admit any name
    assert warning("object.spec.extra.anything == 1", catalogue, rules=(rule,)) == ""
    # and a custom params kind
    widget = {"apiVersion": "example.com/v1", "kind": "Widget"}
    assert warning("params.spec.size > 1", catalogue, paramKind=widget) == ""
    assert warning("params.spec.size2 > 1", catalogue, paramKind=widget).startswith(
        "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'size2'\n"
    )


async def test_the_status_controller_writes_the_warnings(store: Store) -> None:
    catalogue = widget_catalogue()
    registry = new_registry(store, catalogue)
    info = catalogue.require("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")
    body = policy({"expression": "object.spec.replicas > 1"}, failurePolicy="Fail")
    body.update(
        apiVersion="admissionregistration.k8s.io/v1",
        kind="ValidatingAdmissionPolicy",
        metadata={"name": "p"},
    )
    await registry.create(info, None, body)
    controller = PolicyStatusController(registry, catalogue)
    controller.start()
    try:
        await controller.wait_idle()
        stored = await registry.get(info, None, "p")
        assert stored["status"] == {"observedGeneration": 1, "typeChecking": {}}
        stored["spec"]["validations"] = [
            {"expression": "object.spec.replicas > 1", "messageExpression": "object.spek.x"}
        ]
        await registry.update(info, None, "p", stored)
        await controller.wait_idle()
        stored = await registry.get(info, None, "p")
        assert stored["status"] == {
            "observedGeneration": 2,
            "typeChecking": {
                "expressionWarnings": [
                    {
                        "fieldRef": "spec.validations[0].messageExpression",
                        "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: "
                        "undefined field 'spek'\n | object.spek.x\n | ......^\n",
                    }
                ]
            },
        }
    finally:
        await controller.close()
