"""Whether a request matches a FlowSchema, and its flow distinguisher: kube-apiserver's
``pkg/util/flowcontrol/match.go`` and ``computeFlowDistinguisher`` (``apf_controller.go``).

A schema matches when one of its rules does: one of the rule's subjects is the user (a User by
name or ``*``, a Group the user is in or ``*``, a ServiceAccount by namespace and name, ``*`` for
any in the namespace), and, for a resource request, one of its resource rules (verb, API group,
``resource`` or ``resource/subresource``, a namespace listed or ``*``, or ``clusterScope`` for a
request without a namespace); for any other request one of its non-resource rules (verb, and a
URL equal to the path or a ``prefix/*`` over it). ``*`` counts only as the list's one member.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User

Obj = dict[str, Any]
Matcher = Callable[[User, RequestInfo], bool]
SA_PREFIX = "system:serviceaccount:"


def _wild(values: Any, wildcard: str = "*") -> frozenset[str] | None:
    """containsString's list: None when it is only the wildcard (matches anything)."""
    values = [str(v) for v in values or ()]
    if values == [wildcard]:
        return None
    return frozenset(values)


def _subjects(subjects: list[Obj]) -> Callable[[User], bool]:
    names: set[str] = set()
    groups: set[str] = set()
    prefixes: list[str] = []
    anyone = False
    for subject in subjects:
        kind = subject.get("kind")
        if kind == "User":
            name = (subject.get("user") or {}).get("name")
            if name == "*":
                anyone = True
            elif name:
                names.add(str(name))
        elif kind == "Group":
            if "group" not in subject or subject["group"] is None:
                continue
            name = str(subject["group"].get("name") or "")
            if name == "*":
                anyone = True
            else:
                groups.add(name)
        elif kind == "ServiceAccount":
            account = subject.get("serviceAccount")
            if not account:
                continue
            namespace, name = str(account.get("namespace") or ""), str(account.get("name") or "")
            if name == "*":
                prefixes.append(f"{SA_PREFIX}{namespace}:")
            else:
                names.add(f"{SA_PREFIX}{namespace}:{name}")
    if anyone:
        return lambda user: True
    frozen_groups = frozenset(groups)
    frozen_names = frozenset(names)
    prefix_tuple = tuple(prefixes)

    def matches(user: User) -> bool:
        if user.name in frozen_names:
            return True
        if not frozen_groups.isdisjoint(user.groups):
            return True
        return bool(prefix_tuple) and user.name.startswith(prefix_tuple)

    return matches


RuleMatcher = Callable[[RequestInfo], bool]


def _resource_rule(rule: Obj) -> RuleMatcher | None:
    """A resource rule's matcher; None when it matches every resource request."""
    verbs = _wild(rule.get("verbs"))
    groups = _wild(rule.get("apiGroups"))
    resources = _wild(rule.get("resources"))
    namespaces = _wild(rule.get("namespaces"))
    cluster = bool(rule.get("clusterScope"))
    if verbs is None and groups is None and resources is None and namespaces is None and cluster:
        return None

    def matches(info: RequestInfo) -> bool:
        if verbs is not None and info.verb not in verbs:
            return False
        if resources is not None:
            seek = f"{info.resource}/{info.subresource}" if info.subresource else info.resource
            if seek not in resources:
                return False
        if groups is not None and info.api_group not in groups:
            return False
        if not info.namespace:
            return cluster
        return namespaces is None or info.namespace in namespaces

    return matches


def _url_matches(urls: list[str], path: str) -> bool:
    for url in urls:
        if url == "*" or url == path:
            return True
        prefix = url.removesuffix("*")
        if not prefix.endswith("/"):
            prefix += "/"
        if path.startswith(prefix):
            return True
    return False


def _non_resource_rule(rule: Obj) -> RuleMatcher | None:
    """A non-resource rule's matcher; None when it matches every other request."""
    verbs = _wild(rule.get("verbs"))
    urls = [str(u) for u in rule.get("nonResourceURLs") or ()]
    if verbs is None and "*" in urls:
        return None

    def matches(info: RequestInfo) -> bool:
        if verbs is not None and info.verb not in verbs:
            return False
        return _url_matches(urls, info.path)

    return matches


def _rules(matchers: list[RuleMatcher | None]) -> RuleMatcher | bool:
    """Rules as one matcher: True when one of them matches everything, False when none is."""
    if any(m is None for m in matchers):
        return True
    if not matchers:
        return False
    found = [m for m in matchers if m is not None]
    return lambda info: any(m(info) for m in found)


def compile_schema(spec: Obj) -> Matcher:
    """A matcher for the FlowSchema ``spec``'s rules."""
    rules: list[tuple[Callable[[User], bool], RuleMatcher | bool, RuleMatcher | bool]] = []
    for rule in spec.get("rules") or ():
        resource = _rules([_resource_rule(r) for r in rule.get("resourceRules") or ()])
        non_resource = _rules([_non_resource_rule(r) for r in rule.get("nonResourceRules") or ()])
        rules.append((_subjects(rule.get("subjects") or []), resource, non_resource))

    def matches(user: User, info: RequestInfo) -> bool:
        for subjects, resource, non_resource in rules:
            if subjects(user):
                check = resource if info.is_resource_request else non_resource
                if check is True or (check is not False and check(info)):
                    return True
        return False

    return matches


def groups_only(spec: Obj) -> frozenset[str] | None:
    """The groups of a schema whose every rule names only groups (no ``*``) and matches every
    request (resource and not), else None: matching it is then one set intersection."""
    groups: set[str] = set()
    rules = spec.get("rules") or ()
    for rule in rules:
        subjects = rule.get("subjects") or ()
        if not subjects or any(s.get("kind") != "Group" or not s.get("group") for s in subjects):
            return None
        names = {str(s["group"].get("name") or "") for s in subjects}
        resource = _rules([_resource_rule(r) for r in rule.get("resourceRules") or ()])
        non_resource = _rules([_non_resource_rule(r) for r in rule.get("nonResourceRules") or ()])
        if "*" in names or resource is not True or non_resource is not True:
            return None
        groups |= names
    return frozenset(groups) if rules else None


def distinguisher(method: str, user: User, info: RequestInfo) -> str:
    """computeFlowDistinguisher: the user's name (``ByUser``), the request's namespace
    (``ByNamespace``), or nothing."""
    if method == "ByUser":
        return user.name
    if method == "ByNamespace":
        return info.namespace
    return ""
