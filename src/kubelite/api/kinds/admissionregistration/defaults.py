"""The admissionregistration.k8s.io kinds' defaults (kube's
pkg/apis/admissionregistration/v1/defaults.go)."""

from __future__ import annotations

from kubelite.api.kinds.core.poddefaults import (
    ensure,
    items,
    set_if_nil,
    sub,
)
from kubelite.api.kinds.rules import Obj


def _default_rules(rules: list[Obj]) -> None:
    """SetDefaults_Rule: scope ``*``."""
    for rule in rules:
        set_if_nil(rule, "scope", "*")


def _default_webhook(webhook: Obj, mutating: bool) -> None:
    """SetDefaults_{Validating,Mutating}Webhook, its rules and its service's port."""
    set_if_nil(webhook, "failurePolicy", "Fail")
    set_if_nil(webhook, "matchPolicy", "Equivalent")
    set_if_nil(webhook, "namespaceSelector", {})
    set_if_nil(webhook, "objectSelector", {})
    set_if_nil(webhook, "timeoutSeconds", 10)
    if mutating:
        set_if_nil(webhook, "reinvocationPolicy", "Never")
    _default_rules(items(webhook, "rules"))
    service = sub(sub(webhook, "clientConfig"), "service")
    if service is not None:
        set_if_nil(service, "port", 443)


def default_validating_webhooks(obj: Obj) -> None:
    for webhook in items(obj, "webhooks"):
        _default_webhook(webhook, mutating=False)


def default_mutating_webhooks(obj: Obj) -> None:
    for webhook in items(obj, "webhooks"):
        _default_webhook(webhook, mutating=True)


def _default_match_resources(match: Obj | None) -> None:
    """SetDefaults_MatchResources."""
    if match is None:
        return
    set_if_nil(match, "matchPolicy", "Equivalent")
    set_if_nil(match, "namespaceSelector", {})
    set_if_nil(match, "objectSelector", {})
    _default_rules(items(match, "resourceRules"))
    _default_rules(items(match, "excludeResourceRules"))


def default_validating_admission_policy(obj: Obj) -> None:
    """SetDefaults_ValidatingAdmissionPolicySpec and its match constraints."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    set_if_nil(spec, "failurePolicy", "Fail")
    _default_match_resources(sub(spec, "matchConstraints"))


def default_validating_admission_policy_binding(obj: Obj) -> None:
    _default_match_resources(sub(sub(obj, "spec"), "matchResources"))


def default_mutating_admission_policy(obj: Obj) -> None:
    """SetDefaults_MutatingAdmissionPolicySpec and its match constraints."""
    default_validating_admission_policy(obj)  # the same two rules
