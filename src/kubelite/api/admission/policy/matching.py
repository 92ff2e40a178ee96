"""Which writes a policy or binding concerns: a ``matchConstraints`` or ``matchResources``
against one write (k8s.io/apiserver ``pkg/admission/plugin/policy/matching``).

In kube's order: the namespace selector, the object selector, ``excludeResourceRules``, then
``resourceRules`` (none: every resource), each rule with its ``resourceNames``; with
``matchPolicy: Equivalent`` (the default) a rule naming another version or group of the same
stored resource (``autoscaling/v1`` for a ``v2`` HPA, ``events.k8s.io`` for a core Event) matches
too, and the policy then sees the object converted to that version. A namespace that does not
exist, when a selector needs its labels, is an error only if the rules match (kube defers it).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kubelite.api import errors
from kubelite.api.admission.rules import labels_of, object_selected, rule_matches, selector_matches
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.errors import APIError
from kubelite.api.machinery.admission import NAMESPACES, Attributes
from kubelite.api.memo import IdentityMemo

Obj = dict[str, Any]

EQUIVALENT, EXACT = "Equivalent", "Exact"
NIL_SELECTOR = "a nil {} selector was passed, please ensure selectors are initialized properly"


class PolicyConfigError(Exception):
    """A policy or binding that cannot be applied (kube's configuration errors); the text is
    kube's, wrapped by the caller in ``failed to configure policy|binding: ...``."""


class Matched(NamedTuple):
    """The resource a write matched at (the request's own, or an equivalent one)."""

    info: ResourceInfo
    #: the kind the matched resource speaks (a subresource's own, e.g. autoscaling/v1 Scale)
    group: str
    version: str
    kind: str


def request_kind(info: ResourceInfo, subresource: str) -> tuple[str, str, str]:
    """(group, version, kind) of what a request to ``info``/``subresource`` carries."""
    sub = info.subresource(subresource) if subresource else None
    if sub is not None:
        return sub.group, sub.version, sub.kind
    return info.group, info.version, info.kind


class Namespaces:
    """The namespaces one write's matching reads, each read once: ``read`` answers the object
    or None when it does not exist."""

    def __init__(self, read: Any) -> None:
        self._read = read
        self._seen: dict[str, Obj | None] = {}

    async def get(self, name: str) -> Obj | None:
        if name not in self._seen:
            self._seen[name] = await self._read(name)
        return self._seen[name]


class Matcher:
    """Matches constraints against writes; knows the catalogue for equivalent resources."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self._equivalents: IdentityMemo[tuple[ResourceInfo, ...]] = IdentityMemo(4096)

    async def matches(
        self, constraints: Any, attrs: Attributes, namespaces: Namespaces
    ) -> Matched | None:
        """The resource ``attrs`` matched at, or None. Raises :class:`PolicyConfigError`."""
        if not isinstance(constraints, dict):
            raise PolicyConfigError("policy contained no match constraints, a required field")
        for which in ("namespace", "object"):
            if constraints.get(f"{which}Selector") is None:
                raise PolicyConfigError(NIL_SELECTOR.format(which))
        selected, deferred = await self._namespace_selected(
            constraints["namespaceSelector"], attrs, namespaces
        )
        if not selected and deferred is None:
            return None
        if not object_selected(constraints["objectSelector"], attrs):
            return None
        policy = constraints.get("matchPolicy")
        if self._rules_match(constraints.get("excludeResourceRules"), policy, attrs):
            return None
        rules = constraints.get("resourceRules")
        if rules:
            matched = self._rules_match(rules, policy, attrs)
        else:
            matched = self._at(attrs.info, attrs.subresource)
        if matched is None:
            return None
        if deferred is not None:
            raise PolicyConfigError(deferred.message)
        return matched

    async def _namespace_selected(
        self, selector: Any, attrs: Attributes, namespaces: Namespaces
    ) -> tuple[bool, APIError | None]:
        """kube's MatchNamespaceSelector: (selected, the error to raise if the rules match)."""
        info = attrs.info
        is_namespace = info.plural == NAMESPACES and info.group == ""
        if not attrs.namespace and not is_namespace:
            return True, None
        if not isinstance(selector, dict) or not selector:
            return True, None
        if is_namespace and not attrs.subresource and attrs.obj is not None:
            return selector_matches(selector, labels_of(attrs.obj)), None
        name = attrs.namespace or attrs.name
        found = await namespaces.get(name)
        if found is None:
            return False, errors.not_found(NAMESPACES, "", name)
        return selector_matches(selector, labels_of(found)), None

    def _at(self, info: ResourceInfo, subresource: str) -> Matched:
        return Matched(info, *request_kind(info, subresource))

    def _rules_match(self, rules: Any, policy: Any, attrs: Attributes) -> Matched | None:
        """kube's matchesResourceRules: the request's own resource, then (Equivalent) each
        equivalent one."""
        if not isinstance(rules, list) or not rules:
            return None
        for rule in rules:
            if isinstance(rule, dict) and _named_rule_matches(rule, attrs):
                return self._at(attrs.info, attrs.subresource)
        if policy == EXACT:
            return None
        for rule in rules:
            if not isinstance(rule, dict):
                continue
            for equivalent in self.equivalents(attrs.info):
                if attrs.subresource and equivalent.subresource(attrs.subresource) is None:
                    continue
                if _named_rule_matches(rule, attrs._replace(info=equivalent)):
                    return self._at(equivalent, attrs.subresource)
        return None

    def equivalents(self, info: ResourceInfo) -> tuple[ResourceInfo, ...]:
        """The other resources stored with ``info`` (other versions, other groups)."""
        cached = self._equivalents.get(info)
        if cached is not None:
            return cached
        found = tuple(
            other
            for other in self.catalogue
            if other.plural == info.plural
            and other.key_group == info.key_group
            and other.builtin == info.builtin
            and (other.group, other.version) != (info.group, info.version)
        )
        return self._equivalents.put(found, info)


def _named_rule_matches(rule: Obj, attrs: Attributes) -> bool:
    if not rule_matches(rule, attrs):
        return False
    names = rule.get("resourceNames")
    return not names or attrs.name in names
