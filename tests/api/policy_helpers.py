"""Builders the admission policy unit tests share: policies, bindings, a registry with the
ValidatingAdmissionPolicy plugin, and writes as admission sees them."""

from __future__ import annotations

from typing import Any

from kubelite.api.admission.policy import PolicySet, ValidatingPolicyAdmission, compile_policy
from kubelite.api.admission.policy.source import NamespaceMirror
from kubelite.api.auth.authorizer import Authorizer
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.kinds import new_registry
from kubelite.api.machinery.admission import CREATE, Attributes
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import Warnings
from kubelite.api.machinery.user import ADMIN, User
from kubelite.storage import Store

Obj = dict[str, Any]
GROUP = "admissionregistration.k8s.io"
DEPLOYMENTS_RULE = {
    "apiGroups": ["apps"],
    "apiVersions": ["v1"],
    "operations": ["CREATE", "UPDATE"],
    "resources": ["deployments"],
    "scope": "*",
}
EVERYTHING_RULE = {
    "apiGroups": ["*"],
    "apiVersions": ["*"],
    "operations": ["*"],
    "resources": ["*"],
    "scope": "*",
}


def match(*rules: Obj, **more: Any) -> Obj:
    """A defaulted matchConstraints / matchResources."""
    return {
        "resourceRules": list(rules),
        "namespaceSelector": {},
        "objectSelector": {},
        "matchPolicy": "Equivalent",
        **more,
    }


def policy(name: str, *validations: Obj, **spec: Any) -> Obj:
    body: Obj = {"failurePolicy": "Fail", "matchConstraints": match(DEPLOYMENTS_RULE)}
    body.update(spec)
    if validations:
        body["validations"] = list(validations)
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": body,
    }


def binding(name: str, policy_name: str, *actions: str, **spec: Any) -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy_name, "validationActions": list(actions or ["Deny"]), **spec},
    }


def deployment(name: str = "nginx", replicas: int = 1, **labels: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


class Fixture:
    """A registry with the plugin (its policy set filled by hand, no follower)."""

    def __init__(self, store: Store, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.registry: Registry = new_registry(store, catalogue)
        self.authorizer: Authorizer | None = None
        self.policies: PolicySet[Any] = PolicySet(compile_policy)
        self.plugin = ValidatingPolicyAdmission(
            self.registry,
            catalogue,
            self.policies,
            lambda: self.authorizer,
            NamespaceMirror(self.registry, catalogue.require("", "v1", "namespaces")).get,
        )
        self.registry.admission.validating.append(self.plugin)

    def info(self, group: str, version: str, plural: str) -> ResourceInfo:
        return self.catalogue.require(group, version, plural)

    def add(self, *objects: Obj) -> None:
        for obj in objects:
            if obj["kind"].endswith("Binding"):
                self.policies.put_binding(obj)
            else:
                self.policies.put_policy(obj)

    def write(
        self,
        obj: Obj | None,
        *,
        operation: str = CREATE,
        old: Obj | None = None,
        target: tuple[str, str, str] = ("apps", "v1", "deployments"),
        namespace: str | None = "default",
        user: User = ADMIN,
        subresource: str = "",
        name: str | None = None,
    ) -> Attributes:
        meta = (obj or old or {}).get("metadata") or {}
        return Attributes(
            operation,
            self.info(*target),
            namespace,
            meta.get("name", "") if name is None else name,
            obj,
            old,
            user,
            subresource,
            warnings=Warnings(),
            audit_annotations={},
        )

    async def namespace(self, name: str, **labels: str) -> None:
        body = {"metadata": {"name": name, "labels": labels}}
        await self.registry.create(self.info("", "v1", "namespaces"), None, body)
