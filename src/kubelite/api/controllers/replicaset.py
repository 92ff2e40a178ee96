"""kube-controller-manager's ``replicaset-controller`` (pkg/controller/replicaset/replica_set.go,
replica_set_utils.go) and ``replicationcontroller-controller`` (pkg/controller/replication, the
same controller over core/v1 ReplicationControllers, whose selector is a plain label map):
:class:`ReplicaSetController` with a :class:`ReplicaKind`, :data:`REPLICA_SET` or
:data:`REPLICATION_CONTROLLER`.

An informer follows the owners and pods; a work queue holds owner keys (``namespace/name``),
with client-go's default controller back-off (5 ms doubling to 1000 s). An owner is queued when
it is added, changes or goes; a pod change queues the owner its controller reference names
(the old and the new one when it moved), and an orphan's change the owners whose selector
matches it (adoption). A sync (``syncReplicaSet``):

1. the namespace's pods that are active (neither Succeeded, Failed nor being deleted) are
   claimed (:class:`~kubelite.api.controllers.podcontrol.PodClaimer`): matching orphans adopted,
   owned pods that stopped matching released; never while the owner is being deleted;
2. unless creations or deletions of an earlier sync are still unseen (``Expectations``) or the
   owner is being deleted, ``manageReplicas``: too few pods, and up to 500 are created from the
   template in slow-start batches (1, 2, 4 ...; the first failing batch ends it), each with the
   Normal event ``SuccessfulCreate`` "Created pod: <pod>" or the Warning ``FailedCreate``
   "Error creating: <error>"; too many, and up to 500 are deleted in ``getPodsToDelete``'s order
   (``SuccessfulDelete`` "Deleted pod: <pod>", or ``FailedDelete`` "Error deleting: <error>");
   a pod being deleted no longer counts, so it is replaced at once;
3. the status, written through the ``status`` subresource when it changed: ``replicas`` (the
   claimed active pods), ``fullyLabeledReplicas`` (those carrying every template label),
   ``readyReplicas``, ``availableReplicas`` (Ready for ``minReadySeconds``), ReplicaSets'
   ``terminatingReplicas`` (owned pods being deleted, not yet terminal), ``observedGeneration``
   and the ``ReplicaFailure`` condition (reason ``FailedCreate`` or ``FailedDelete``, the error
   as message) while creating or deleting fails, removed once it succeeds. A pod turning ready
   under ``minReadySeconds`` queues its owner again after that long, plus a second.

Writes go through the registry as ``kube-controller-manager``; events are recorded in the legacy
style as ``replicaset-controller`` or ``replication-controller`` (kube's event sources).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.controllers.events import NORMAL, WARNING, EventRecorder
from kubelite.api.controllers.keyed import KeyedController
from kubelite.api.controllers.podcontrol import (
    BURST_REPLICAS,
    MANAGER,
    SLOW_START_INITIAL_BATCH_SIZE,
    CannotAdopt,
    Expectations,
    PodClaimer,
    controller_of,
    controller_ref,
    is_pod_active,
    is_pod_available,
    is_pod_terminating,
    pod_from_template,
    pod_key,
    pods_to_delete,
    slow_start_batch,
)
from kubelite.api.controllers.serviceaccounts import namespace_terminating
from kubelite.api.encoding.stored import clone, now
from kubelite.api.errors import APIError
from kubelite.api.kinds.policy.disruption import is_pod_ready
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.selectors import LabelSelector, SelectorError, label_selector_of

log = logging.getLogger(__name__)

Obj = dict[str, Any]
PODS = "pods"
REPLICA_FAILURE = "ReplicaFailure"


@dataclass(frozen=True, slots=True)
class ReplicaKind:
    """What differs between the ReplicaSet and the ReplicationController controllers."""

    group: str
    version: str
    plural: str
    kind: str
    #: kube-controller-manager's name of the controller (and of its tasks and logs)
    controller: str
    #: the event source's component
    component: str
    #: whether the status has ``terminatingReplicas`` (apps/v1 ReplicaSets only)
    terminating_replicas: bool
    #: whether ``spec.selector`` is a label map (ReplicationController) or a LabelSelector
    map_selector: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


REPLICA_SET = ReplicaKind(
    "apps", "v1", "replicasets", "ReplicaSet", "replicaset-controller", "replicaset-controller",
    terminating_replicas=True, map_selector=False,
)  # fmt: skip
REPLICATION_CONTROLLER = ReplicaKind(
    "", "v1", "replicationcontrollers", "ReplicationController",
    "replicationcontroller-controller", "replication-controller",
    terminating_replicas=False, map_selector=True,
)  # fmt: skip


class ManageFailed(Exception):
    """Creating or deleting pods failed; the message is kube's error text."""


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def _ns(obj: Obj) -> str:
    return str(obj["metadata"].get("namespace") or "")


class ReplicaSetController(KeyedController[str]):
    """One instance per kind: ``ReplicaSetController(registry, catalogue, REPLICA_SET)``."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        kind: ReplicaKind = REPLICA_SET,
        *,
        workers: int = 5,
        burst_replicas: int = BURST_REPLICAS,
    ) -> None:
        self.kind = kind
        self.name = kind.controller
        self.owner_info = catalogue.require(kind.group, kind.version, kind.plural)
        self.pods_info = catalogue.require("", "v1", PODS)
        infos: dict[str, ResourceInfo] = {kind.plural: self.owner_info, PODS: self.pods_info}
        # client-go's DefaultControllerRateLimiter: 5 ms doubling per failure, up to 1000 s
        super().__init__(
            registry, infos, workers=workers, retry_min_seconds=0.005, retry_max_seconds=1000.0
        )
        self.burst_replicas = burst_replicas
        self.recorder = EventRecorder(registry, catalogue, kind.component)
        self.expectations = Expectations()
        #: by namespace, by name: what the informer holds, indexed
        self.owners: dict[str, dict[str, Obj]] = {}
        self.pods: dict[str, dict[str, Obj]] = {}

    def reset(self) -> None:
        self.expectations.clear()
        self.owners = {}
        self.pods = {}

    # -- what the informer holds -------------------------------------------------------------------

    def selector_of(self, owner: Obj) -> LabelSelector:
        """LabelSelectorAsSelector (a ReplicaSet's; none selects nothing) or, for a
        ReplicationController, its label map as a selector."""
        selector = (owner.get("spec") or {}).get("selector")
        if self.kind.map_selector:
            return label_selector_of(
                {"matchLabels": selector if isinstance(selector, dict) else {}}
            )
        if not isinstance(selector, dict):
            raise SelectorError("no selector")
        return label_selector_of(selector)

    def _resolve(self, namespace: str, ref: Obj) -> Obj | None:
        """resolveControllerRef: the owner of that kind, name and uid the informer holds."""
        if ref.get("kind") != self.kind.kind:
            return None
        owner = self.owners.get(namespace, {}).get(str(ref.get("name") or ""))
        if owner is None or owner["metadata"].get("uid") != ref.get("uid"):
            return None
        return owner

    def _matching_owners(self, pod: Obj) -> list[Obj]:
        """getPodReplicaSets: the namespace's owners whose selector matches the pod."""
        labels = pod["metadata"].get("labels") or {}
        found = []
        for owner in self.owners.get(_ns(pod), {}).values():
            try:
                selector = self.selector_of(owner)
            except SelectorError:
                continue
            if not selector.empty and selector.matches(labels):
                found.append(owner)
        return found

    def _index(self, table: dict[str, dict[str, Obj]], old: Obj | None, new: Obj | None) -> None:
        if new is not None:
            table.setdefault(_ns(new), {})[new["metadata"]["name"]] = new
        elif old is not None:
            held = table.get(_ns(old), {})
            held.pop(old["metadata"]["name"], None)
            if not held:
                table.pop(_ns(old), None)

    # -- what a change queues ----------------------------------------------------------------------

    def enqueue(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        if plural == PODS:
            self._index(self.pods, old, new)
            if new is None:
                assert old is not None
                self._pod_deleted(old)
            elif old is None:
                self._pod_added(new)
            else:
                self._pod_updated(old, new)
            return
        self._index(self.owners, old, new)
        obj = new if new is not None else old
        assert obj is not None
        key = _key(obj)
        if new is None or (
            old is not None and old["metadata"].get("uid") != new["metadata"].get("uid")
        ):
            self.expectations.delete(key)  # a new owner of that name starts clean
        self.queue.add(key)

    def _pod_added(self, pod: Obj) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod)
            return
        ref = controller_of(pod)
        if ref is not None:
            owner = self._resolve(_ns(pod), ref)
            if owner is not None:
                key = _key(owner)
                self.expectations.creation_observed(key)
                self.queue.add(key)
            return
        for owner in self._matching_owners(pod):
            self.queue.add(_key(owner))

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        label_changed = old["metadata"].get("labels") != new["metadata"].get("labels")
        if new["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new)
            if label_changed:
                self._pod_deleted(old)
            return
        new_ref, old_ref = controller_of(new), controller_of(old)
        ref_changed = new_ref != old_ref
        if ref_changed and old_ref is not None:
            previous = self._resolve(_ns(old), old_ref)
            if previous is not None:
                self.queue.add(_key(previous))
        if new_ref is not None:
            owner = self._resolve(_ns(new), new_ref)
            if owner is None:
                return
            key = _key(owner)
            self.queue.add(key)
            min_ready = int((owner.get("spec") or {}).get("minReadySeconds") or 0)
            if not is_pod_ready(old) and is_pod_ready(new) and min_ready > 0:
                self.queue.add_after(key, min_ready + 1.0)
            return
        if label_changed or ref_changed:
            for owner in self._matching_owners(new):
                self.queue.add(_key(owner))

    def _pod_deleted(self, pod: Obj) -> None:
        ref = controller_of(pod)
        if ref is None:
            return
        owner = self._resolve(_ns(pod), ref)
        if owner is None:
            return
        key = _key(owner)
        self.expectations.deletion_observed(key, pod_key(pod))
        self.queue.add(key)

    # -- the sync ----------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        owner = self.owners.get(namespace, {}).get(name)
        if owner is None:
            self.expectations.delete(key)
            return
        owner = {**owner, "apiVersion": self.kind.api_version, "kind": self.kind.kind}
        needs_sync = self.expectations.satisfied(key)
        try:
            selector = self.selector_of(owner)
        except SelectorError as exc:
            log.info("%s: %s has an invalid selector: %s", self.name, key, exc)
            return
        all_pods = list(self.pods.get(namespace, {}).values())
        active = [p for p in all_pods if is_pod_active(p)]
        active = await self._claim(owner, selector, active)
        uid = owner["metadata"].get("uid")
        terminating = [
            p
            for p in all_pods
            if is_pod_terminating(p)
            and (controller_of(p) or {}).get("uid") == uid
            and selector.matches(p["metadata"].get("labels") or {})
        ]
        error: str | None = None
        if needs_sync and not owner["metadata"].get("deletionTimestamp"):
            try:
                await self.manage_replicas(key, owner, active)
            except ManageFailed as exc:
                error = str(exc)
        status = self.calculate_status(owner, active, terminating, error)
        updated = await self.update_status(owner, status)
        spec = updated.get("spec") or {}
        replicas = int(spec.get("replicas") or 0)
        min_ready = int(spec.get("minReadySeconds") or 0)
        written = updated.get("status") or {}
        if (
            error is None
            and min_ready > 0
            and int(written.get("readyReplicas") or 0) == replicas
            and int(written.get("availableReplicas") or 0) != replicas
        ):
            self.queue.add_after(key, float(min_ready))
        if error is not None:
            raise ManageFailed(error)

    async def _claim(self, owner: Obj, selector: LabelSelector, pods: list[Obj]) -> list[Obj]:
        meta = owner["metadata"]

        async def recheck() -> Obj:
            return await self.registry.get(self.owner_info, meta.get("namespace"), meta["name"])

        ref = controller_ref(owner, self.kind.api_version, self.kind.kind)
        claimer = PodClaimer(self.registry, self.pods_info, owner, ref, selector, recheck)
        try:
            return await claimer.claim(pods)
        except CannotAdopt as exc:
            raise ManageFailed(str(exc)) from None

    async def manage_replicas(self, key: str, owner: Obj, pods: list[Obj]) -> None:
        """manageReplicas: create or delete pods towards ``spec.replicas``."""
        diff = len(pods) - int((owner.get("spec") or {}).get("replicas") or 0)
        if diff < 0:
            count = min(-diff, self.burst_replicas)
            self.expectations.expect_creations(key, count)
            ref = controller_ref(owner, self.kind.api_version, self.kind.kind)
            successes, error = await slow_start_batch(
                count, SLOW_START_INITIAL_BATCH_SIZE, lambda: self._create_pod(owner, ref)
            )
            for _ in range(count - successes):  # never attempted or failed: never observed
                self.expectations.creation_observed(key)
            if error is not None:
                raise ManageFailed(error.message if isinstance(error, APIError) else str(error))
        elif diff > 0:
            count = min(diff, self.burst_replicas)
            doomed = pods_to_delete(pods, self._related_pods(owner), count)
            self.expectations.expect_deletions(key, [pod_key(p) for p in doomed])
            errors: list[str] = []
            for pod in doomed:
                try:
                    await self._delete_pod(owner, pod)
                except APIError as exc:
                    self.expectations.deletion_observed(key, pod_key(pod))
                    if exc.code != 404:
                        errors.append(f"unable to delete pods: {exc.message}")
            if errors:
                raise ManageFailed(errors[0])

    async def _create_pod(self, owner: Obj, ref: Obj) -> None:
        """RealPodControl.CreatePods (a namespace being terminated is no failure: every create
        would fail, and the owner goes with it)."""
        body = pod_from_template((owner.get("spec") or {}).get("template") or {}, owner, ref)
        namespace = _ns(owner)
        try:
            pod = await self.registry.create(self.pods_info, namespace, body, field_manager=MANAGER)
        except APIError as exc:
            if namespace_terminating(exc):
                return
            await self.recorder.record(
                owner, WARNING, "FailedCreate", f"Error creating: {exc.message}"
            )
            raise
        await self.recorder.record(
            owner, NORMAL, "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}"
        )

    async def _delete_pod(self, owner: Obj, pod: Obj) -> None:
        """RealPodControl.DeletePod."""
        name = pod["metadata"]["name"]
        try:
            await self.registry.delete(self.pods_info, _ns(owner), name)
        except APIError as exc:
            if exc.code != 404:
                await self.recorder.record(
                    owner, WARNING, "FailedDelete", f"Error deleting: {exc.message}"
                )
            raise
        await self.recorder.record(owner, NORMAL, "SuccessfulDelete", f"Deleted pod: {name}")

    def _related_pods(self, owner: Obj) -> list[Obj]:
        """getIndirectlyRelatedPods: the pods selected by every owner of the same controller
        (the ReplicaSets of one Deployment), each once."""
        ref = controller_of(owner)
        if ref is None:
            return []
        seen: set[str] = set()
        related: list[Obj] = []
        namespace = _ns(owner)
        for sibling in self.owners.get(namespace, {}).values():
            if (controller_of(sibling) or {}).get("uid") != ref.get("uid"):
                continue
            try:
                selector = self.selector_of(sibling)
            except SelectorError:
                continue
            for pod in self.pods.get(namespace, {}).values():
                uid = str(pod["metadata"].get("uid") or "")
                if uid not in seen and selector.matches(pod["metadata"].get("labels") or {}):
                    seen.add(uid)
                    related.append(pod)
        return related

    # -- the status --------------------------------------------------------------------------------

    def calculate_status(
        self, owner: Obj, pods: list[Obj], terminating: list[Obj], error: str | None
    ) -> Obj:
        """calculateStatus, in the Go struct's field order (zero counts omitted, as omitempty
        drops them; ``replicas`` and ``terminatingReplicas`` always written)."""
        spec = owner.get("spec") or {}
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        current = time.time()
        fully = ready = available = 0
        for pod in pods:
            labels = pod["metadata"].get("labels") or {}
            if all(labels.get(k) == v for k, v in template_labels.items()):
                fully += 1
            if is_pod_ready(pod):
                ready += 1
                if is_pod_available(pod, min_ready, current):
                    available += 1
        old = owner.get("status") or {}
        conditions = [dict(c) for c in old.get("conditions") or []]
        failure = next((c for c in conditions if c.get("type") == REPLICA_FAILURE), None)
        if error is not None and failure is None:
            diff = len(pods) - int(spec.get("replicas") or 0)
            reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
            conditions.append({
                "type": REPLICA_FAILURE, "status": "True", "lastTransitionTime": now(),
                "reason": reason, "message": error,
            })  # fmt: skip
        elif error is None and failure is not None:
            conditions = [c for c in conditions if c.get("type") != REPLICA_FAILURE]
        status: Obj = {"replicas": len(pods)}
        for field, value in (
            ("fullyLabeledReplicas", fully), ("readyReplicas", ready),
            ("availableReplicas", available),
        ):  # fmt: skip
            if value:
                status[field] = value
        if self.kind.terminating_replicas:
            status["terminatingReplicas"] = len(terminating)
        generation = int(owner["metadata"].get("generation") or 0)
        if generation:
            status["observedGeneration"] = generation
        if conditions:
            status["conditions"] = conditions
        return status

    async def update_status(self, owner: Obj, status: Obj) -> Obj:
        """updateReplicaSetStatus: written when anything changed or the generation is not yet
        observed; a conflict is tried once more over the owner read afresh."""
        old = owner.get("status") or {}
        generation = int(owner["metadata"].get("generation") or 0)
        fields = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
        if (
            all(int(old.get(f) or 0) == int(status.get(f) or 0) for f in fields)
            and old.get("terminatingReplicas") == status.get("terminatingReplicas")
            and int(old.get("observedGeneration") or 0) == generation
            and (old.get("conditions") or []) == (status.get("conditions") or [])
        ):
            return owner
        meta = owner["metadata"]
        body = clone(owner)
        for attempt in range(2):
            body["status"] = status
            try:
                written, _ = await self.registry.update(
                    self.owner_info, meta.get("namespace"), meta["name"], body,
                    subresource="status", field_manager=MANAGER,
                )  # fmt: skip
                return written
            except APIError as exc:
                if exc.code != 409 or attempt:
                    raise
            fresh = await self.registry.get(self.owner_info, meta.get("namespace"), meta["name"])
            if fresh["metadata"].get("uid") != meta.get("uid"):
                return owner
            body = {**fresh, "apiVersion": self.kind.api_version, "kind": self.kind.kind}
        return owner
