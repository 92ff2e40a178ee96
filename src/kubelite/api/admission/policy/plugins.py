"""The admission policy plugins of one server, built together: the policy sets, the follower that
keeps them current, the namespaces they read, and the validating (and mutating) plugin. The server's
assembly adds the plugins to its admission chain, sets the kind table's ``policy_settled`` hook
to :meth:`PolicyFollower.settled`, and starts and closes the follower with the server."""

from __future__ import annotations

from typing import Any

from kubelite.api.admission.policy.activation import AuthorizerSource
from kubelite.api.admission.policy.mutating import MutatingPolicyAdmission
from kubelite.api.admission.policy.mutations import compile_mutating_policy
from kubelite.api.admission.policy.source import NamespaceMirror, PolicyFollower, PolicySet
from kubelite.api.admission.policy.validating import ValidatingPolicyAdmission
from kubelite.api.admission.policy.validator import compile_policy
from kubelite.api.catalogue import Catalogue
from kubelite.api.machinery.registry import Registry


class AdmissionPolicies:
    """``validating`` and ``mutating``: the ValidatingAdmissionPolicy and
    MutatingAdmissionPolicy plugins; ``follower``: what keeps them current. ``authorizer``
    answers the server's authorizer (None: allow every check)."""

    def __init__(
        self, registry: Registry, catalogue: Catalogue, authorizer: AuthorizerSource
    ) -> None:
        self.namespaces = NamespaceMirror(registry, catalogue.require("", "v1", "namespaces"))
        self.validating_set: PolicySet[Any] = PolicySet(compile_policy)
        self.mutating_set: PolicySet[Any] = PolicySet(compile_mutating_policy)
        self.validating = ValidatingPolicyAdmission(
            registry, catalogue, self.validating_set, authorizer, self.namespaces.get
        )
        self.mutating = MutatingPolicyAdmission(
            registry, catalogue, self.mutating_set, authorizer, self.namespaces.get
        )
        self.follower = PolicyFollower(registry, catalogue, self.validating_set, self.mutating_set)

    async def start(self) -> None:
        await self.namespaces.mirror.start()
        await self.follower.start()

    async def close(self) -> None:
        await self.follower.close()
        await self.namespaces.mirror.close()
