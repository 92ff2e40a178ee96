"""The root CA publisher: a ConfigMap ``kube-root-ca.crt`` in every namespace, holding the CA
that signs the API server's serving certificate (what kube-controller-manager's
``root-ca-certificate-publisher-controller`` does, pkg/controller/certificates/rootcacertpublisher).
Pods read it to verify the API server.

A namespace is looked at when it is added or changes while Active, when its
``kube-root-ca.crt`` changes or goes, and every ``resync_seconds``
(:mod:`kubelite.api.controllers.namespaced`):

- no ConfigMap (as the informer holds it): create one with ``data: {"ca.crt": <PEM>}`` and
  kube's ``kubernetes.io/description`` annotation; a namespace that is gone (404) or being
  terminated (cause ``NamespaceTerminating``) is not an error;
- ``data`` differs or the annotation is empty: a conflict-checked update (the resourceVersion
  the informer holds) that sets ``data`` to exactly ``{"ca.crt": <PEM>}`` and the annotation,
  keeping every other label and annotation; a 409 is retried once the informer caught up.

Writes are recorded under ``kube-controller-manager``. The PEM comes from whoever builds the
server (the server layer owns the CA files); a server without one does not run this controller.
"""

from __future__ import annotations

from kubelite.api.catalogue import Catalogue
from kubelite.api.controllers.namespaced import NamespaceSyncController
from kubelite.api.controllers.serviceaccounts import namespace_terminating
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry

MANAGER = "kube-controller-manager"
CONFIGMAP_NAME = "kube-root-ca.crt"
DATA_KEY = "ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


class RootCAPublisher(NamespaceSyncController):
    name = "root-ca-certificate-publisher-controller"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        ca_pem: str,
        *,
        resync_seconds: float = 300.0,
    ) -> None:
        super().__init__(
            registry,
            catalogue,
            catalogue.require("", "v1", "configmaps"),
            CONFIGMAP_NAME,
            resync_seconds=resync_seconds,
        )
        self.data = {DATA_KEY: ca_pem}

    async def sync(self, namespace: str) -> None:
        if not self.active(namespace):
            return
        current = self.held(namespace)
        if current is None:
            await self._create(namespace)
            return
        annotations = current["metadata"].get("annotations") or {}
        if current.get("data") == self.data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        body = clone(current)
        body["data"] = dict(self.data)
        body["metadata"]["annotations"] = {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}
        await self.registry.update(
            self.info, namespace, CONFIGMAP_NAME, body, field_manager=MANAGER
        )

    async def _create(self, namespace: str) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": CONFIGMAP_NAME,
                "namespace": namespace,
                "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
            },
            "data": dict(self.data),
        }
        try:
            await self.registry.create(self.info, namespace, body, field_manager=MANAGER)
        except APIError as exc:
            if exc.code == 404 or namespace_terminating(exc):
                return
            raise
