"""A test double of an authorizer for the tests of what asks one (access reviews, the RBAC
kinds' escalation checks): fixed rules per user, matched by RBAC's own rule matching."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubelite.api.auth.authorizer import Decision
from kubelite.api.auth.rbac import rule_allows
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User

Obj = dict[str, Any]


@dataclass
class RulesAuthorizer:
    """Each user's rules, cluster-wide ("") and per namespace, as RBAC's RulesFor would find
    them; ``errors`` as resolution errors; answers with ``decision`` when set; remembers each
    (user, attributes) it was asked."""

    rules: dict[str, dict[str, list[Obj]]]
    errors: list[str] = field(default_factory=list)
    decision: Decision | None = None
    asked: list[tuple[User, RequestInfo]] = field(default_factory=list)

    def authorize(self, user: User, attrs: RequestInfo) -> Decision:
        self.asked.append((user, attrs))
        if self.decision is not None:
            return self.decision
        held, _ = self.rules_for(user, attrs.namespace)
        return Decision(any(rule_allows(attrs, r) for r in held))

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
        mine = self.rules.get(user.name, {})
        held = list(mine.get("", []))
        if namespace:
            held += mine.get(namespace, [])
        return held, list(self.errors)
