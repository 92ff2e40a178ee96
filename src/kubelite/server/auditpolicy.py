"""The audit policy (``--audit-policy-file``): kube's ``audit.k8s.io/v1`` ``Policy``, read as
k8s.io/apiserver ``pkg/audit/policy/reader.go`` reads it and evaluated as ``checker.go`` does:
the first rule that matches decides the level (None when none matches), and the stages left
out are the policy's ``omitStages`` with the rule's.

A rule matches when each of its non-empty lists does: ``users``, ``userGroups`` (any of the
user's groups), ``verbs``; then ``namespaces``/``resources`` (resource requests only: group,
``resource``, ``resource/subresource``, ``*``, ``*/subresource``, ``resource/*``, and
``resourceNames``) or else ``nonResourceURLs`` (non-resource requests only: exact, ``*``, or a
prefix ending in ``*``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubelite.api.encoding import yamlbody
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
API_VERSIONS = ("audit.k8s.io/v1",)


class PolicyError(ValueError):
    """The policy file cannot be used; the message says why, in one line."""


@dataclass(frozen=True)
class GroupResources:
    group: str = ""
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    level: str
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool | None = None

    def matches(self, user: User, info: RequestInfo) -> bool:
        """kube's ``ruleMatches``."""
        if self.users and user.name not in self.users:
            return False
        if self.user_groups and not any(g in self.user_groups for g in user.groups):
            return False
        if self.verbs and info.verb not in self.verbs:
            return False
        if self.namespaces or self.resources:
            return self._matches_resource(info)
        if self.non_resource_urls:
            return not info.is_resource_request and any(
                _path_matches(info.path, spec) for spec in self.non_resource_urls
            )
        return True

    def _matches_resource(self, info: RequestInfo) -> bool:
        if not info.is_resource_request:
            return False
        if self.namespaces and info.namespace not in self.namespaces:
            return False
        if not self.resources:
            return True
        resource, sub = info.resource, info.subresource
        combined = f"{resource}/{sub}" if sub else resource
        for gr in self.resources:
            if gr.group != info.api_group:  # kube's ruleMatchesResource: no wildcard group
                continue
            if not gr.resources:
                return True
            if gr.resource_names and info.name not in gr.resource_names:
                continue
            for res in gr.resources:
                if res in (combined, "*"):
                    return True
                if sub and res.startswith("*/") and res[2:] == sub:
                    return True
                if res.endswith("/*") and res[:-2] == resource:
                    return True
        return False


def _path_matches(path: str, spec: str) -> bool:
    if spec in ("*", path):
        return True
    return spec.endswith("*") and path.startswith(spec.rstrip("*"))


@dataclass(frozen=True)
class RequestAuditConfig:
    """What the policy says of one request (kube's ``RequestAuditConfig``)."""

    level: str
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


NOT_AUDITED = RequestAuditConfig("None")


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...] = ()
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False

    def evaluate(self, user: User, info: RequestInfo) -> RequestAuditConfig:
        """kube's ``EvaluatePolicyAndCreateAuditEvent``: the first matching rule's level."""
        for rule in self.rules:
            if rule.matches(user, info):
                omit_managed = (
                    self.omit_managed_fields
                    if rule.omit_managed_fields is None
                    else rule.omit_managed_fields
                )
                return RequestAuditConfig(
                    rule.level, self.omit_stages | rule.omit_stages, omit_managed
                )
        return NOT_AUDITED


def load_policy(path: str | Path) -> Policy:
    """The policy in ``path`` (YAML or JSON); :class:`PolicyError` for one kube refuses."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise PolicyError(f"failed to read audit policy file {path}: {exc.strerror}") from None
    try:
        doc = yamlbody.load(raw)
    except yamlbody.YAMLError as exc:
        raise PolicyError(f"failed decoding audit policy file {path}: {exc}") from None
    return parse_policy(doc, str(path))


def parse_policy(doc: Any, name: str = "policy") -> Policy:
    if not isinstance(doc, dict):
        raise PolicyError(f"failed decoding audit policy file {name}: not an object")
    if doc.get("kind") != "Policy" or doc.get("apiVersion") not in API_VERSIONS:
        raise PolicyError(
            f"failed decoding audit policy file {name}: expected kind Policy in "
            f"{', '.join(API_VERSIONS)}, got {doc.get('apiVersion')!r} {doc.get('kind')!r}"
        )
    rules = tuple(_rule(r, i, name) for i, r in enumerate(doc.get("rules") or ()))
    if not rules:
        raise PolicyError(f"loaded illegal policy with 0 rules from file {name}")
    return Policy(
        rules,
        _stages(doc.get("omitStages"), "omitStages", name),
        bool(doc.get("omitManagedFields", False)),
    )


def _rule(raw: Any, index: int, name: str) -> Rule:
    where = f"rules[{index}]"
    if not isinstance(raw, dict):
        raise PolicyError(f"invalid audit policy {name}: {where}: not an object")
    level = raw.get("level")
    if level not in LEVELS:
        raise PolicyError(
            f"invalid audit policy {name}: {where}.level: Unsupported value: {level!r}: "
            f"supported values: {', '.join(LEVELS)}"
        )
    urls = _strings(raw.get("nonResourceURLs"))
    resources = tuple(
        GroupResources(
            str(gr.get("group", "")),
            _strings(gr.get("resources")),
            _strings(gr.get("resourceNames")),
        )
        for gr in raw.get("resources") or ()
        if isinstance(gr, dict)
    )
    namespaces = _strings(raw.get("namespaces"))
    if urls and (resources or namespaces):
        raise PolicyError(
            f"invalid audit policy {name}: {where}.nonResourceURLs: Invalid value: "
            "rules cannot apply to both regular resources and non-resource URLs"
        )
    managed = raw.get("omitManagedFields")
    return Rule(
        level,
        _strings(raw.get("users")),
        _strings(raw.get("userGroups")),
        _strings(raw.get("verbs")),
        resources,
        namespaces,
        urls,
        _stages(raw.get("omitStages"), f"{where}.omitStages", name),
        None if managed is None else bool(managed),
    )


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value or ())


def _stages(value: Any, where: str, name: str) -> frozenset[str]:
    stages = _strings(value)
    for stage in stages:
        if stage not in STAGES:
            raise PolicyError(
                f"invalid audit policy {name}: {where}: Unsupported value: {stage!r}: "
                f"supported values: {', '.join(STAGES)}"
            )
    return frozenset(stages)
