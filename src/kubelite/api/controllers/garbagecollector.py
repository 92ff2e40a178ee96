"""The garbage collector (kube-controller-manager's, pkg/controller/garbagecollector): deletes
objects whose owners are gone, and carries out the ``orphan`` and ``foregroundDeletion``
finalizers a DELETE's propagation policy sets (:mod:`kubelite.api.machinery.deletion`).

The graph of owners and dependents is :mod:`kubelite.api.controllers.gcgraph`'s. Two work
queues, each served by several workers, act on it:

- *attempt to delete* (kube's attemptToDeleteItem): read the item live; if it is gone, so is its
  node (a virtual delete). An item deleting in the foreground loses its ``foregroundDeletion``
  finalizer once no dependent blocks it (``blockOwnerDeletion``), and sends the blocking ones to
  be deleted. Otherwise each ownerReference is read live and classified: *dangling* (404 or
  another uid: the owner is gone), *waiting* (deleting in the foreground) or *solid*. An item
  with a solid owner loses only its dangling and waiting references; one whose owners are all
  waiting and which has dependents itself is deleted in the foreground (its own references
  unblocked first when a dependent also waits, so two cannot wait for each other); any other is
  deleted with the policy its finalizers ask for (Orphan, Foreground, else Background).
- *attempt to orphan*: every dependent of an owner deleting with the ``orphan`` finalizer loses
  its reference to it, then the owner loses the finalizer.

Every write is a conflict-checked write through the registry: deletes carry the uid and
resourceVersion the item was read at as preconditions, reference and finalizer removals run in
the store's optimistic loop against the object's current version (kube's patches), and a
failed item returns to its queue after a per-item back-off. A cluster-scoped dependent cannot
name a namespaced owner: such a reference is never resolved (the dependent is never
collected), and a namespaced owner observed in another namespace than its dependent gets kube's
``OwnerRefInvalidNamespace`` Warning event on the dependent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from enum import Enum
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.controllers.gcgraph import GraphBuilder, Identity, Node, OwnerRef, owner_refs
from kubelite.api.controllers.workqueue import WorkQueue
from kubelite.api.encoding.stored import now
from kubelite.api.errors import APIError
from kubelite.api.machinery.deletion import FOREGROUND_FINALIZER, ORPHAN_FINALIZER
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import BACKGROUND, FOREGROUND, ORPHAN, DeleteOptions

log = logging.getLogger(__name__)

Obj = dict[str, Any]

#: the field manager of its writes, and the source of its events
MANAGER = "kube-controller-manager"
COMPONENT = "garbage-collector-controller"
#: how long the workers wait for the monitors' first lists
SYNC_TIMEOUT = 30.0


class _Action(Enum):
    FORGET = 0
    REQUEUE = 1


class _VirtualDelete(Exception):
    """The item is gone; a virtual delete event is queued for the graph."""


class _NamespacedOwnerOfClusterScoped(Exception):
    """A cluster-scoped item names a namespaced owner: retrying cannot resolve it."""


class _NoMapping(Exception):
    """An ownerReference's apiVersion and kind are not served (now)."""


class GarbageCollector:
    """``start()`` runs the collector on the running loop; ``close()`` stops it.
    ``workers`` per queue (kube runs 20); ``resync_seconds``: how often the served kinds are
    compared with the monitors (kube asks discovery every 30 s; the catalogue is local)."""

    name = "garbage collector"

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        *,
        workers: int = 8,
        resync_seconds: float = 1.0,
    ) -> None:
        self.registry = registry
        self.catalogue = catalogue
        self.workers = workers
        self.resync_seconds = resync_seconds
        self.attempt_to_delete: WorkQueue[Node] = WorkQueue(retry_min_seconds=0.005)
        self.attempt_to_orphan: WorkQueue[Node] = WorkQueue(retry_min_seconds=0.005)
        self.graph = self._graph()
        self._tasks: list[asyncio.Task[None]] = []
        self._recording: set[asyncio.Task[None]] = set()

    def _graph(self) -> GraphBuilder:
        queues = (self.attempt_to_delete, self.attempt_to_orphan)
        return GraphBuilder(self.registry, self.catalogue, *queues, self._report_invalid)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Build the graph afresh (a leader that lost the Lease and leads again starts over,
        as kube-controller-manager does) and run the collector."""
        if self._tasks:
            return
        self.attempt_to_delete = WorkQueue(retry_min_seconds=0.005)
        self.attempt_to_orphan = WorkQueue(retry_min_seconds=0.005)
        self.graph = self._graph()
        self.graph.start()
        self._tasks = [asyncio.get_running_loop().create_task(self._run(), name="kubelite-gc")]

    async def close(self) -> None:
        self.attempt_to_delete.shut_down()
        self.attempt_to_orphan.shut_down()
        tasks = [*self._tasks, *self._recording]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks = []
        await self.graph.close()

    def queue_depth(self) -> int:
        """What waits in its queues: graph changes, items to delete and owners to orphan."""
        changes = self.graph.changes.qsize()
        return changes + len(self.attempt_to_delete) + len(self.attempt_to_orphan)

    async def _run(self) -> None:
        # the workers start once the monitors have listed their kinds, or (a kind that cannot
        # be listed, say its conversion webhook is down) after SYNC_TIMEOUT, as kube's do
        try:
            await asyncio.wait_for(self.graph.wait_synced(), SYNC_TIMEOUT)
        except TimeoutError:
            log.warning("garbage collector: not every kind could be listed; collecting anyway")
        loop = asyncio.get_running_loop()
        for i in range(self.workers):
            deleting = self._worker(self.attempt_to_delete, self._attempt_to_delete_worker)
            orphaning = self._worker(self.attempt_to_orphan, self._orphan)
            self._tasks.append(loop.create_task(deleting, name=f"kubelite-gc-delete-{i}"))
            self._tasks.append(loop.create_task(orphaning, name=f"kubelite-gc-orphan-{i}"))
        log.debug("garbage collector: %d kinds monitored", self.graph.monitor_count)
        while True:
            await asyncio.sleep(self.resync_seconds)
            self.graph.sync_monitors()

    # -- attempt to delete -----------------------------------------------------------------------

    async def _worker(
        self, queue: WorkQueue[Node], attempt: Callable[[Node], Awaitable[_Action]]
    ) -> None:
        """Work off ``queue`` until it is shut down; an item that fails comes back after its
        back-off (client-go's processNextWorkItem)."""
        while (item := await queue.get()) is not None:
            action = _Action.REQUEUE
            try:
                action = await attempt(item)
            except asyncio.CancelledError:
                raise
            except (APIError, _NoMapping) as exc:
                log.debug("garbage collector: %s: %s; retrying", item.identity, exc)
            except Exception:
                log.exception("garbage collector: error syncing %s", item.identity)
            finally:
                queue.done(item)
            if action is _Action.FORGET:
                queue.forget(item)
            else:
                queue.add_rate_limited(item)

    async def _attempt_to_delete_worker(self, item: Node) -> _Action:
        if self.graph.uid_to_node.get(item.identity.uid) is not item:
            return _Action.FORGET  # replaced or removed since it was queued
        try:
            await self._attempt_to_delete_item(item)
        except (_VirtualDelete, _NamespacedOwnerOfClusterScoped):
            return _Action.FORGET
        # a virtual node is looked at again until a monitor observes it (kube issue 56121)
        return _Action.FORGET if item.observed else _Action.REQUEUE

    async def _attempt_to_delete_item(self, item: Node) -> None:
        if item.being_deleted and not item.deleting_dependents:
            return  # on its way out: its dependents are looked at once it is gone
        latest = await self._read(item.identity)
        if item.deleting_dependents:
            await self._process_deleting_dependents(item)
            return
        refs = owner_refs(latest["metadata"])
        if not refs:
            return
        solid, dangling, waiting = await self._classify(item, refs)
        if solid:
            if dangling or waiting:
                await self._remove_references(item, {r.uid for r in (*dangling, *waiting)})
            return
        if waiting and item.dependents:
            if any(d.deleting_dependents for d in item.dependents):
                await self._unblock_references(item)
            await self._delete(item, latest, FOREGROUND)
            return
        finalizers = latest["metadata"].get("finalizers") or ()
        if ORPHAN_FINALIZER in finalizers:
            policy = ORPHAN
        elif FOREGROUND_FINALIZER in finalizers:
            policy = FOREGROUND
        else:
            policy = BACKGROUND
        await self._delete(item, latest, policy)

    async def _process_deleting_dependents(self, item: Node) -> None:
        blocking = item.blocking_dependents()
        if not blocking:
            await self._remove_finalizer(item, FOREGROUND_FINALIZER)
            return
        for dependent in blocking:
            if not dependent.deleting_dependents:
                self.attempt_to_delete.add(dependent)

    async def _classify(
        self, item: Node, refs: tuple[OwnerRef, ...]
    ) -> tuple[list[OwnerRef], list[OwnerRef], list[OwnerRef]]:
        """(solid, dangling, waiting-for-dependents) references."""
        solid: list[OwnerRef] = []
        dangling: list[OwnerRef] = []
        waiting: list[OwnerRef] = []
        for ref in refs:
            owner = await self._owner(ref, item)
            if owner is None:
                dangling.append(ref)
                continue
            meta = owner["metadata"]
            if meta.get("deletionTimestamp") and FOREGROUND_FINALIZER in (
                meta.get("finalizers") or ()
            ):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def _owner(self, ref: OwnerRef, item: Node) -> Obj | None:
        """The owner a reference names, read live; None when it is dangling (kube's
        isDangling, with its absent-owner cache)."""
        cluster_key = Identity(ref.api_version, ref.kind, "", ref.name, ref.uid)
        namespaced_key = replace(cluster_key, namespace=item.identity.namespace)
        if cluster_key in self.graph.absent or namespaced_key in self.graph.absent:
            return None
        info = self._info(ref.api_version, ref.kind)
        if info.namespaced and not item.identity.namespace:
            raise _NamespacedOwnerOfClusterScoped
        key = namespaced_key if info.namespaced else cluster_key
        namespace = item.identity.namespace if info.namespaced else None
        try:
            owner = await self.registry.get(info, namespace, ref.name)
        except APIError as exc:
            if exc.code != 404:
                raise
            self.graph.absent.add(key)
            return None
        if owner["metadata"].get("uid") != ref.uid:
            self.graph.absent.add(key)
            return None
        return owner

    # -- attempt to orphan -----------------------------------------------------------------------

    async def _orphan(self, owner: Node) -> _Action:
        uid = owner.identity.uid

        async def orphan(dependent: Node) -> None:
            with contextlib.suppress(_VirtualDelete):
                await self._remove_references(dependent, {uid})

        await asyncio.gather(*(orphan(d) for d in list(owner.dependents)))
        await self._remove_finalizer(owner, ORPHAN_FINALIZER)
        return _Action.FORGET

    # -- reads and writes ------------------------------------------------------------------------

    def _info(self, api_version: str, kind: str) -> ResourceInfo:
        info = self.catalogue.lookup_api_version(api_version, kind)
        if info is None:
            raise _NoMapping(f"no kind {kind!r} is served at {api_version!r}")
        return info

    def _namespace(self, info: ResourceInfo, identity: Identity) -> str | None:
        return identity.namespace if info.namespaced else None

    async def _read(self, identity: Identity) -> Obj:
        """The item, live; a virtual delete (and :class:`_VirtualDelete`) when it is gone."""
        info = self._info(identity.api_version, identity.kind)
        if info.namespaced and not identity.namespace:
            # a namespaced owner named by a cluster-scoped dependent: it has no coordinates
            raise _NamespacedOwnerOfClusterScoped
        try:
            obj = await self.registry.get(info, self._namespace(info, identity), identity.name)
        except APIError as exc:
            if exc.code != 404:
                raise
            obj = None
        if obj is None or obj["metadata"].get("uid") != identity.uid:
            self.graph.enqueue_virtual_delete(identity)
            raise _VirtualDelete
        return obj

    async def _delete(self, item: Node, latest: Obj, policy: str) -> None:
        """DELETE with the item's uid and the resourceVersion it was read at as preconditions;
        on a conflict where only the version moved (the references are the same), again
        without the version (kube's deleteObject)."""
        identity = item.identity
        info = self._info(identity.api_version, identity.kind)
        namespace = self._namespace(info, identity)
        meta = latest["metadata"]
        options = DeleteOptions(
            precondition_uid=identity.uid,
            precondition_resource_version=str(meta.get("resourceVersion") or ""),
            propagation_policy=policy,
        )
        try:
            await self.registry.delete(info, namespace, identity.name, options)
        except APIError as exc:
            if exc.code == 404:
                self.graph.enqueue_virtual_delete(identity)
                raise _VirtualDelete from exc
            if exc.code != 409:
                raise
            live = await self._read(identity)
            if live["metadata"].get("ownerReferences") != meta.get("ownerReferences"):
                raise
            options = options._replace(precondition_resource_version="")
            await self.registry.delete(info, namespace, identity.name, options)

    async def _update(self, item: Node, change: Any) -> None:
        """Apply ``change`` (the item's metadata, changed in place; left alone when there is
        nothing to do) in the store's optimistic loop, as a patch would; the item gone is a
        :class:`_VirtualDelete`, another object of its name a 409 (kube's uid precondition).

        The change only ever answers with an object or an APIError: the store may first run it
        on the object this server last wrote, and it reads the key again before it lets an
        error or a no-op computed from that guess stand."""
        identity = item.identity
        info = self._info(identity.api_version, identity.kind)

        def changed(obj: Obj) -> None:
            uid = obj["metadata"].get("uid")
            if uid != identity.uid:
                raise errors.conflict(
                    info.kind,
                    info.group,
                    identity.name,
                    f"the UID in the precondition ({identity.uid}) does not match the UID in "
                    f"record ({uid}). The object might have been deleted and then recreated",
                )
            change(obj["metadata"])

        namespace = self._namespace(info, identity)
        try:
            await self.registry.mutate(
                info, namespace, identity.name, changed, field_manager=MANAGER
            )
        except APIError as exc:
            if exc.code != 404:
                raise
            self.graph.enqueue_virtual_delete(identity)
            raise _VirtualDelete from exc

    async def _remove_references(self, item: Node, uids: set[str]) -> None:
        def remove(meta: Obj) -> None:
            refs = meta.get("ownerReferences") or []
            kept = [r for r in refs if not (isinstance(r, dict) and r.get("uid") in uids)]
            if len(kept) == len(refs):
                return
            if kept:
                meta["ownerReferences"] = kept
            else:
                meta.pop("ownerReferences", None)

        await self._update(item, remove)

    async def _unblock_references(self, item: Node) -> None:
        def unblock(meta: Obj) -> None:
            refs = meta.get("ownerReferences") or []
            blocked = [r for r in refs if isinstance(r, dict) and r.get("blockOwnerDeletion")]
            for ref in blocked:
                ref["blockOwnerDeletion"] = False

        await self._update(item, unblock)

    async def _remove_finalizer(self, item: Node, finalizer: str) -> None:
        def remove(meta: Obj) -> None:
            finalizers = meta.get("finalizers") or []
            if finalizer not in finalizers:
                return
            kept = [f for f in finalizers if f != finalizer]
            if kept:
                meta["finalizers"] = kept
            else:
                meta.pop("finalizers", None)

        with contextlib.suppress(_VirtualDelete):  # gone already: nothing to release
            await self._update(item, remove)

    # -- events ----------------------------------------------------------------------------------

    def _report_invalid(self, node: Node, owner_uid: str) -> None:
        """kube's OwnerRefInvalidNamespace Warning event on ``node``, for its reference to
        ``owner_uid``."""
        ref = next((r for r in node.owners if r.uid == owner_uid), None)
        if ref is None:
            return
        identity = node.identity
        invalid = Identity(ref.api_version, ref.kind, identity.namespace, ref.name, ref.uid)
        message = f'ownerRef {invalid} does not exist in namespace "{identity.namespace}"'
        task = asyncio.get_running_loop().create_task(
            self._record(identity, "OwnerRefInvalidNamespace", message)
        )
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)

    async def _record(self, about: Identity, reason: str, message: str) -> None:
        info = self.catalogue.lookup("", "v1", "events")
        if info is None:
            return
        stamp = now()
        involved = {"kind": about.kind, "name": about.name, "uid": about.uid}
        if about.namespace:
            involved["namespace"] = about.namespace
        involved["apiVersion"] = about.api_version
        namespace = about.namespace or "default"
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{about.name}.{time.time_ns():x}", "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "source": {"component": COMPONENT},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": "Warning",
            "eventTime": None,
            "reportingComponent": COMPONENT,
            "reportingInstance": "",
        }
        try:
            await self.registry.create(info, namespace, event, field_manager=MANAGER)
        except APIError as exc:
            log.debug("garbage collector: event not recorded: %s", exc)
