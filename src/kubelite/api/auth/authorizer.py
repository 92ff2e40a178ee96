"""Authorization decisions: what the request path, the access reviews and the RBAC storages'
escalation checks ask, and the authorizers kube-apiserver chains to answer.

An :class:`Authorizer` decides on a request's attributes (:class:`RequestInfo`, the same tuple
the request-info filter makes) for a :class:`User`, in memory and without awaiting: kubelite's
authorizers read what watches keep current. The chain kube-apiserver builds is
:class:`PrivilegedGroups` (``system:masters`` may do anything) in front of the configured mode:
:class:`AlwaysAllow`, or RBAC (:class:`kubelite.api.auth.rbacindex.RBACAuthorizer`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User

Obj = dict[str, Any]

MASTERS = "system:masters"


class Decision(NamedTuple):
    """An authorizer's answer: ``allowed``; ``denied`` an explicit deny (never from RBAC);
    neither is no opinion. ``reason`` says why (the allow reason is for audit), ``error`` what
    went wrong evaluating (a SubjectAccessReview's ``evaluationError``)."""

    allowed: bool
    reason: str = ""
    denied: bool = False
    error: str = ""


NO_OPINION = Decision(False)


class Authorizer(Protocol):
    def authorize(self, user: User, attrs: RequestInfo) -> Decision:
        """The decision on ``user`` doing what ``attrs`` asks."""
        ...

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
        """Every rule (PolicyRule objects) granted to ``user`` by the cluster role bindings
        and, when ``namespace`` is not empty, by that namespace's role bindings, in kube's
        visit order; and the errors met resolving them (``RulesFor``)."""
        ...


#: The server's authorizer now, for parts built before it (None: nothing is checked).
AuthorizerHook = Callable[[], Authorizer | None]


class AlwaysAllow:
    """``--authorization-mode AlwaysAllow``: every request is allowed."""

    def authorize(self, user: User, attrs: RequestInfo) -> Decision:
        return Decision(True)

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
        return (
            [
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                {"verbs": ["*"], "nonResourceURLs": ["*"]},
            ],
            [],
        )


class PrivilegedGroups:
    """kube-apiserver's first authorizer: members of ``system:masters`` may do anything, with or
    without RBAC objects; everyone else is decided by ``inner``."""

    def __init__(self, inner: Authorizer) -> None:
        self.inner = inner

    def authorize(self, user: User, attrs: RequestInfo) -> Decision:
        if MASTERS in user.groups:
            return Decision(True)
        return self.inner.authorize(user, attrs)

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
        return self.inner.rules_for(user, namespace)
