"""The Job controller's writes to its pods (pkg/controller/controller_utils.go's
``RealPodControl`` and ``PodControllerRefManager``): create from a template with the
``SuccessfulCreate`` / ``FailedCreate`` events, delete with ``SuccessfulDelete`` /
``FailedDelete``, strategic merge patches (a finalizer removed), and claiming: an orphan that
matches the selector is adopted (its controller reference added, once a fresh read of the owner
shows it is the same object and not being deleted), an owned pod that no longer matches is
released. Every write is made as ``kube-controller-manager``; events are recorded as the
controller (``job-controller``...)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.controllers.events import NORMAL, WARNING, EventRecorder
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.selectors import LabelSelector

log = logging.getLogger(__name__)

Obj = dict[str, Any]
MANAGER = "kube-controller-manager"
STRATEGIC = "application/strategic-merge-patch+json"


def _ref(obj: Obj, kind: str, api_version: str) -> Obj:
    version = obj.get("apiVersion") or api_version
    return {**obj, "kind": obj.get("kind") or kind, "apiVersion": version}


class PodControl:
    """Pod writes on behalf of ``component``'s owners (``owner_kind`` at ``owner_version``)."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        component: str,
        owner: ResourceInfo,
    ) -> None:
        self.registry = registry
        self.pods = catalogue.require("", "v1", "pods")
        self.owner = owner
        self.owner_kind = owner.kind
        self.owner_version = f"{owner.group}/{owner.version}" if owner.group else owner.version
        self.recorder = EventRecorder(registry, catalogue, component)

    def owner_ref(self, owner: Obj) -> Obj:
        return _ref(owner, self.owner_kind, self.owner_version)

    async def create(self, owner: Obj, pod: Obj) -> Obj:
        """``CreatePods``: the pod, and the event on its owner; APIError when refused."""
        namespace = str(owner["metadata"].get("namespace") or "")
        try:
            created = await self.registry.create(self.pods, namespace, pod, field_manager=MANAGER)
        except APIError as exc:
            await self.recorder.record(
                self.owner_ref(owner), WARNING, "FailedCreate", f"Error creating: {exc.message}"
            )
            raise
        name = created["metadata"]["name"]
        await self.recorder.record(
            self.owner_ref(owner), NORMAL, "SuccessfulCreate", f"Created pod: {name}"
        )
        return created

    async def delete(self, owner: Obj, namespace: str, name: str) -> None:
        """``DeletePod``: a graceful delete; 404 is raised to the caller (who may not mind)."""
        try:
            await self.registry.delete(self.pods, namespace, name)
        except APIError as exc:
            if exc.code != 404:
                await self.recorder.record(
                    self.owner_ref(owner), WARNING, "FailedDelete", f"Error deleting: {exc.message}"
                )
            raise
        await self.recorder.record(
            self.owner_ref(owner), NORMAL, "SuccessfulDelete", f"Deleted pod: {name}"
        )

    async def patch(self, namespace: str, name: str, patch: Obj) -> Obj:
        """``PatchPod``: a strategic merge patch."""
        return await self.registry.patch(
            self.pods, namespace, name, STRATEGIC, patch, field_manager=MANAGER
        )

    async def remove_finalizer(self, pod: Obj, finalizer: str) -> None:
        """The finalizer dropped with ``$deleteFromPrimitiveList`` (no-op when absent)."""
        if finalizer not in (pod["metadata"].get("finalizers") or []):
            return
        meta = pod["metadata"]
        patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": [finalizer]}}
        await self.patch(str(meta.get("namespace") or ""), meta["name"], patch)

    async def claim(
        self,
        owner: Obj,
        selector: LabelSelector,
        pods: list[Obj],
        *,
        adopt_finalizer: str | None = None,
        fresh: Callable[[], Awaitable[Obj]] | None = None,
    ) -> list[Obj]:
        """``ClaimPods``: the pods the owner controls after adopting matching orphans and
        releasing owned pods that no longer match (a pod that is being deleted is neither
        adopted nor released)."""
        uid = owner["metadata"]["uid"]
        claimed: list[Obj] = []
        checked: bool | None = None
        for pod in pods:
            ref = next(
                (r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")),
                None,
            )
            matches = selector.matches(pod["metadata"].get("labels") or {})
            if ref is not None:
                if ref.get("uid") != uid:
                    continue
                if matches:
                    claimed.append(pod)
                elif not pod["metadata"].get("deletionTimestamp") and not owner["metadata"].get(
                    "deletionTimestamp"
                ):
                    await self._release(pod, uid)
                continue
            if not matches or pod["metadata"].get("deletionTimestamp"):
                continue
            if owner["metadata"].get("deletionTimestamp"):
                continue
            if checked is None:
                checked = await self._can_adopt(owner, fresh)
            if not checked:
                continue
            adopted = await self._adopt(owner, pod, adopt_finalizer)
            if adopted is not None:
                claimed.append(adopted)
        return claimed

    async def _can_adopt(self, owner: Obj, fresh: Callable[[], Awaitable[Obj]] | None) -> bool:
        """``RecheckDeletionTimestamp``: the owner read afresh, the same uid, not deleting."""
        if fresh is None:
            return True
        try:
            current = await fresh()
        except APIError:
            return False
        meta = current["metadata"]
        same = meta.get("uid") == owner["metadata"]["uid"]
        return bool(same and not meta.get("deletionTimestamp"))

    async def _adopt(self, owner: Obj, pod: Obj, finalizer: str | None) -> Obj | None:
        meta = pod["metadata"]
        ref = {
            "apiVersion": self.owner_version,
            "kind": self.owner_kind,
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        patch: Obj = {"metadata": {"ownerReferences": [ref], "uid": meta.get("uid")}}
        if finalizer:
            patch["metadata"]["finalizers"] = [finalizer]
        try:
            return await self.patch(str(meta.get("namespace") or ""), meta["name"], patch)
        except APIError as exc:
            log.info("adopting pod %s failed: %s", meta["name"], exc.message)
            return None

    async def _release(self, pod: Obj, uid: str) -> None:
        meta = pod["metadata"]
        patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid}],
                              "uid": meta.get("uid")}}  # fmt: skip
        try:
            await self.patch(str(meta.get("namespace") or ""), meta["name"], patch)
        except APIError as exc:
            if exc.code not in (404, 409, 422):
                raise
