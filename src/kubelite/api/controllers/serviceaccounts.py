"""The ServiceAccount controller: a ``default`` ServiceAccount in every Active namespace (what
kube-controller-manager's ``serviceaccount-controller`` does, pkg/controller/serviceaccount).

A namespace is looked at when it is added or changes, when its ``default`` ServiceAccount is
deleted, and every ``resync_seconds`` (:mod:`kubelite.api.controllers.namespaced`). One that
is Active and has no ``default`` ServiceAccount (as the informer holds it) gets one, by a plain
create through the registry as ``kube-controller-manager``: ``{"metadata": {"name":
"default"}}``, no secrets and no ``automountServiceAccountToken``. AlreadyExists (the informer
was behind) and a namespace being terminated (cause ``NamespaceTerminating``) are not errors.
An existing ``default`` is never modified.
"""

from __future__ import annotations

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.namespaced import NamespaceSyncController
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry

#: The manager its writes are recorded under (the controller runs in kube-controller-manager).
MANAGER = "kube-controller-manager"
DEFAULT_NAME = "default"
NAMESPACE_TERMINATING = "NamespaceTerminating"


def ignorable(exc: APIError) -> bool:
    """AlreadyExists, or a create refused because the namespace is being terminated."""
    if exc.code == 409 and exc.reason == "AlreadyExists":
        return True
    return namespace_terminating(exc)


def namespace_terminating(exc: APIError) -> bool:
    """kube's ``HasStatusCause(err, NamespaceTerminatingCause)``."""
    causes = (exc.details or {}).get("causes") or []
    return any(c.get("reason") == NAMESPACE_TERMINATING for c in causes if isinstance(c, dict))


class ServiceAccountController(NamespaceSyncController):
    name = "serviceaccount-controller"

    def __init__(
        self, registry: Registry, catalogue: Catalogue, *, resync_seconds: float = 300.0
    ) -> None:
        super().__init__(
            registry,
            catalogue,
            catalogue.require("", "v1", "serviceaccounts"),
            DEFAULT_NAME,
            resync_seconds=resync_seconds,
        )

    async def sync(self, namespace: str) -> None:
        if not self.active(namespace) or self.held(namespace) is not None:
            return
        body = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_NAME, "namespace": namespace},
        }
        try:
            await self.registry.create(self.info, namespace, body, field_manager=MANAGER)
        except APIError as exc:
            if not ignorable(exc):
                raise
