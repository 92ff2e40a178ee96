"""The ValidatingAdmissionPolicy status controller (kube-controller-manager's
``validatingadmissionpolicy-status-controller``, pkg/controller/validatingadmissionpolicystatus):
a policy whose ``metadata.generation`` it has not observed gets ``status.observedGeneration``
and ``status.typeChecking``, so clients can wait until a policy change is in force.

kube type-checks each expression against the schema of the kinds the policy matches and lists
what does not check as ``typeChecking.expressionWarnings``. kubelite's check
(:mod:`kubelite.api.admission.policy.typechecking`) finds the undefined field references among
those, in kube's texts, against the kinds of the catalogue this controller shares with the CRD
controller (so custom kinds are typed from their CRD's schema once it is served); a policy without
any gets ``typeChecking: {}``, as kube writes it. Like kube's, the check runs when the controller
observes a new generation, not again when the schemas change.
The write is a conflict-checked update of the ``status`` subresource by this controller's field
manager (kube applies the status with server-side apply; the result is the same status).
"""

from __future__ import annotations

from typing import Any

from kubelite.api.admission.policy.typechecking import check_policy
from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.passes import PassController
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry

Obj = dict[str, Any]

GROUP = "admissionregistration.k8s.io"
MANAGER = "validatingadmissionpolicy-status-controller"


class PolicyStatusController(PassController):
    name = "validatingadmissionpolicy status controller"

    def __init__(self, registry: Registry, catalogue: Catalogue) -> None:
        super().__init__(registry, catalogue.require(GROUP, "v1", "validatingadmissionpolicies"))
        #: the kinds served, custom ones included (the CRD controller adds them to it)
        self.catalogue = catalogue

    async def run_pass(self) -> tuple[bool, bool]:
        listing = await self.registry.list(self.info, None)
        wrote = waiting = False
        for policy in listing["items"]:
            if not stale(policy):
                continue
            try:
                await self._observe(policy["metadata"]["name"])
            except APIError as exc:
                if exc.code not in (404, 409):
                    raise
                waiting = exc.code == 409
                continue
            wrote = True
        return wrote, waiting

    async def _observe(self, name: str) -> None:
        catalogue = self.catalogue

        def observed(policy: Obj) -> None:
            status = policy.get("status")
            status = dict(status) if isinstance(status, dict) else {}
            status["observedGeneration"] = policy["metadata"].get("generation", 0)
            warnings = check_policy(policy, catalogue)
            status["typeChecking"] = {"expressionWarnings": warnings} if warnings else {}
            policy["status"] = status

        await self.registry.mutate(
            self.info, None, name, observed, subresource="status", field_manager=MANAGER
        )


def stale(policy: Obj) -> bool:
    """The policy's generation is not the one its status says was observed."""
    status = policy.get("status")
    observed = status.get("observedGeneration") if isinstance(status, dict) else None
    return bool(observed != policy["metadata"].get("generation", 0))
