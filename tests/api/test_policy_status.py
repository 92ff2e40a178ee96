"""The ValidatingAdmissionPolicy status controller: every policy's status comes to say which
generation was observed, with kube's (warning-free) typeChecking, again after each spec change,
written by the controller's field manager."""

from __future__ import annotations

from typing import Any

from kubelite.api.catalogue import load_builtin_catalogue
from kubelite.api.controllers.policystatus import MANAGER, PolicyStatusController
from kubelite.api.kinds import new_registry
from kubelite.storage import Store

POLICY: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "p"},
    "spec": {
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                 "resources": ["configmaps"]}
            ]
        },
        "validations": [{"expression": "true"}],
    },
}  # fmt: skip


async def test_a_policy_gets_its_observed_generation_after_each_change(store: Store) -> None:
    catalogue = load_builtin_catalogue()
    registry = new_registry(store, catalogue)
    info = catalogue.require("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")
    await registry.create(info, None, POLICY)
    controller = PolicyStatusController(registry, catalogue)
    controller.start()
    try:
        await controller.wait_idle()
        policy = await registry.get(info, None, "p")
        assert policy["status"] == {"observedGeneration": 1, "typeChecking": {}}
        assert MANAGER in [m["manager"] for m in policy["metadata"]["managedFields"]]
        policy["spec"]["validations"] = [{"expression": "1 < 2"}]
        await registry.update(info, None, "p", policy)
        await controller.wait_idle()
        policy = await registry.get(info, None, "p")
        assert policy["metadata"]["generation"] == 2
        assert policy["status"]["observedGeneration"] == 2
        revision = policy["metadata"]["resourceVersion"]
        await controller.wait_idle()  # nothing left to write: the status stays as it is
        assert (await registry.get(info, None, "p"))["metadata"]["resourceVersion"] == revision
    finally:
        await controller.close()
