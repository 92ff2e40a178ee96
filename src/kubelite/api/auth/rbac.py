"""RBAC's evaluation, as pure functions over a request's attributes and the stored objects:
whether a rule allows a request, whether a binding's subject is the user, and the 403 Status
kube-apiserver answers when nothing allows it. Not yet in the request path (issue 14 wires an
authorizer over these).

Sources: kubernetes ``pkg/apis/rbac/v1/evaluation_helpers.go`` (``VerbMatches``,
``APIGroupMatches``, ``ResourceMatches``, ``ResourceNameMatches``, ``NonResourceURLMatches``),
``pkg/registry/rbac/validation/rule.go`` (``appliesToUser``) and apiserver
``pkg/endpoints/handlers/responsewriters/errors.go`` (``forbiddenMessage``).
"""

from __future__ import annotations

import html
from typing import Any

from kubelite.api.errors import APIError, go_quote, qualified
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User

Obj = dict[str, Any]

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


def strings(rule: Obj, key: str) -> list[str]:
    """A rule's string list under ``key`` (what is not a list of strings counts as empty)."""
    values = rule.get(key)
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def rules_of(role: Obj) -> list[Obj]:
    """A Role's or ClusterRole's rules (what is not a list of objects counts as none)."""
    rules = role.get("rules")
    return [rule for rule in rules if isinstance(rule, dict)] if isinstance(rules, list) else []


def rule_allows(info: RequestInfo, rule: Obj) -> bool:
    """``RuleAllows``: the rule's verbs, and its API groups, resources and resource names (a
    resource request) or its non-resource URLs (any other)."""
    verbs = strings(rule, "verbs")
    if "*" not in verbs and info.verb not in verbs:
        return False
    if not info.is_resource_request:
        return _url_matches(info.path, strings(rule, "nonResourceURLs"))
    groups = strings(rule, "apiGroups")
    if "*" not in groups and info.api_group not in groups:
        return False
    if not _resource_matches(info, strings(rule, "resources")):
        return False
    names = strings(rule, "resourceNames")
    return not names or info.name in names


def _resource_matches(info: RequestInfo, resources: list[str]) -> bool:
    """``resource``, ``resource/subresource``, ``*``, or ``*/subresource`` for a request of
    that subresource; ``pods`` is not ``pods/status``, and ``pods/*`` is no wildcard."""
    if "*" in resources:
        return True
    if not info.subresource:
        return info.resource in resources
    return f"{info.resource}/{info.subresource}" in resources or (
        f"*/{info.subresource}" in resources
    )


def _url_matches(path: str, urls: list[str]) -> bool:
    for url in urls:
        if url == "*" or url == path:
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):  # TrimRight: every *
            return True
    return False


def subject_matches(subject: Obj, user: User, binding_namespace: str) -> bool:
    """``appliesToUser``: a User by name, a Group by any of the user's groups, a
    ServiceAccount by its user name (its namespace defaults to the RoleBinding's; a
    ClusterRoleBinding's ServiceAccount without one matches nothing)."""
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(name) and user.name == name
    if kind == "Group":
        return bool(name) and name in user.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        if not namespace or not name:
            return False
        return user.name == f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"
    return False


def forbidden(user: User, info: RequestInfo, reason: str = "") -> APIError:
    """The 403 kube answers a request nothing allowed (``ForbiddenStatusError``): the message
    names the user, the verb and what it was done to; ``reason`` (an authorizer's) follows."""
    who = f"User {go_quote(user.name)} cannot {info.verb}"
    if not info.is_resource_request:
        message = f"forbidden: {html.escape(f'{who} path {go_quote(info.path)}', quote=False)}"
        return APIError(403, "Forbidden", _with_reason(message, reason), {})
    resource = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
    where = (
        f"in the namespace {go_quote(info.namespace)}" if info.namespace else "at the cluster scope"
    )
    text = f"{who} resource {go_quote(resource)} in API group {go_quote(info.api_group)} {where}"
    target = qualified(info.resource, info.api_group)
    head = f"{target} {go_quote(info.name)}" if info.name else target
    message = f"{head} is forbidden: {html.escape(text, quote=False)}"
    details: Obj = {}
    if info.name:
        details["name"] = info.name
    if info.api_group:
        details["group"] = info.api_group
    details["kind"] = info.resource
    return APIError(403, "Forbidden", _with_reason(message, reason), details)


def _with_reason(message: str, reason: str) -> str:
    return f"{message}: {reason}" if reason else message
