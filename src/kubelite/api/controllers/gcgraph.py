"""The garbage collector's dependency graph (kube-controller-manager's GraphBuilder,
pkg/controller/garbagecollector/graph_builder.go): every object of every kind that can be
listed, watched and deleted, keyed by uid, with edges from its ``metadata.ownerReferences`` to
its owners.

A *monitor* per kind (one served version per group and resource, as discovery prefers; events
are not monitored, as in kube) lists and watches through the registry, as any client's informer,
and turns what it sees into graph changes. One task applies the changes in order: it keeps the
nodes, creates *virtual* nodes for owners not (yet) observed, and queues the work the collector
does (:mod:`kubelite.api.controllers.garbagecollector`):

- an owner that starts deleting with the ``orphan`` finalizer goes to the orphan queue;
- one that starts deleting with ``foregroundDeletion`` goes, with each of its dependents, to the
  delete queue;
- when an object goes, its dependents go to the delete queue (their owner may be dangling now),
  and so do its owners that wait for their dependents;
- a dependent whose ``blockOwnerDeletion`` reference is removed or unblocked sends that owner
  to the delete queue;
- a virtual owner goes to the delete queue, where a live read verifies it.

Kinds come and go with CRDs: :meth:`GraphBuilder.sync_monitors` starts and stops monitors to
match the catalogue. An owner seen deleted (or confirmed absent by a read) is remembered in an
absent-owner cache of the last 500, so a dependent whose owner's kind has since gone away is
still collected.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.controllers.workqueue import WorkQueue
from kubelite.api.machinery.deletion import FOREGROUND_FINALIZER, ORPHAN_FINALIZER
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import Context, Watcher, WatchOptions

log = logging.getLogger(__name__)

Obj = dict[str, Any]

#: kinds the collector never looks at (kube's DefaultIgnoredResources)
IGNORED = frozenset({("", "events"), ("events.k8s.io", "events")})
#: how many absent owners are remembered (kube's absentOwnerCache)
ABSENT_CACHE_SIZE = 500


@dataclass(frozen=True, slots=True)
class Identity:
    """An object's coordinates (kube's objectReference)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str

    def __str__(self) -> str:
        return (
            f"[{self.api_version}/{self.kind}, namespace: {self.namespace}, "
            f"name: {self.name}, uid: {self.uid}]"
        )

    def matches(self, ref: OwnerRef) -> bool:
        """Whether an ownerReference names these coordinates (kube's
        ownerReferenceMatchesCoordinates)."""
        return (ref.uid, ref.name, ref.api_version, ref.kind) == (
            self.uid,
            self.name,
            self.api_version,
            self.kind,
        )


@dataclass(frozen=True, slots=True)
class OwnerRef:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False
    block_owner_deletion: bool = False

    @classmethod
    def of(cls, raw: Any) -> OwnerRef | None:
        if not isinstance(raw, dict) or not raw.get("uid"):
            return None
        return cls(
            str(raw.get("apiVersion") or ""),
            str(raw.get("kind") or ""),
            str(raw.get("name") or ""),
            str(raw["uid"]),
            raw.get("controller") is True,
            raw.get("blockOwnerDeletion") is True,
        )


def owner_refs(meta: Obj) -> tuple[OwnerRef, ...]:
    refs = (OwnerRef.of(r) for r in meta.get("ownerReferences") or ())
    return tuple(r for r in refs if r is not None)


class Node:
    """One object in the graph. ``observed``: seen by a monitor (else *virtual*: only named by
    a dependent's ownerReference)."""

    __slots__ = (
        "being_deleted",
        "deleting_dependents",
        "dependents",
        "identity",
        "observed",
        "orphaning",
        "owners",
    )

    def __init__(self, identity: Identity, owners: tuple[OwnerRef, ...] = ()) -> None:
        self.identity = identity
        self.owners = owners
        self.dependents: set[Node] = set()
        self.observed = False
        self.being_deleted = False
        self.deleting_dependents = False
        #: deleting with the orphan finalizer when last seen
        self.orphaning = False

    def blocking_dependents(self) -> list[Node]:
        """Dependents whose reference to this node has ``blockOwnerDeletion``."""
        uid = self.identity.uid
        return [
            d
            for d in self.dependents
            if any(r.uid == uid and r.block_owner_deletion for r in d.owners)
        ]

    def __repr__(self) -> str:
        return f"<Node {self.identity}{'' if self.observed else ' virtual'}>"


@dataclass(slots=True)
class Change:
    """An add/update (``deleted`` False) or delete of ``meta``'s object, seen by the monitor of
    ``api_version``/``kind``; ``virtual``: a delete the collector concluded from a read."""

    api_version: str
    kind: str
    meta: Obj
    deleted: bool = False
    virtual: bool = False


class AbsentOwners:
    """The last :data:`ABSENT_CACHE_SIZE` owners known not to exist (LRU)."""

    def __init__(self, size: int = ABSENT_CACHE_SIZE) -> None:
        self.size = size
        self._keys: OrderedDict[Identity, None] = OrderedDict()

    def add(self, identity: Identity) -> None:
        self._keys[identity] = None
        self._keys.move_to_end(identity)
        while len(self._keys) > self.size:
            self._keys.popitem(last=False)

    def __contains__(self, identity: object) -> bool:
        return identity in self._keys


def identity_of(api_version: str, kind: str, meta: Obj) -> Identity:
    return Identity(
        api_version,
        kind,
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
        str(meta.get("uid") or ""),
    )


def monitored(catalogue: Catalogue) -> dict[tuple[str, str], ResourceInfo]:
    """The kinds to monitor: every resource that can be listed, watched and deleted, at its
    group's preferred version (where it is served there), keyed by (group, plural)."""
    chosen: dict[tuple[str, str], ResourceInfo] = {}
    for info in catalogue:  # discovery order: each group's preferred version first
        key = (info.group, info.plural)
        if key in chosen or key in IGNORED:
            continue
        if not {"list", "watch", "delete"} <= set(info.verbs):
            continue
        chosen[key] = info
    return chosen


class GraphBuilder:
    """Keeps the graph from the monitors' changes. ``report_invalid`` records the Warning event
    kube records for an ownerReference to a namespaced owner in another namespace."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        attempt_to_delete: WorkQueue[Node],
        attempt_to_orphan: WorkQueue[Node],
        report_invalid: Callable[[Node, str], None],
        *,
        retry_seconds: float = 0.5,
    ) -> None:
        self.registry = registry
        self.catalogue = catalogue
        self.attempt_to_delete = attempt_to_delete
        self.attempt_to_orphan = attempt_to_orphan
        self.report_invalid = report_invalid
        self.retry_seconds = retry_seconds
        self.uid_to_node: dict[str, Node] = {}
        self.absent = AbsentOwners()
        self.changes: asyncio.Queue[Change] = asyncio.Queue()
        self._monitors: dict[tuple[str, str], tuple[ResourceInfo, asyncio.Task[None]]] = {}
        self._synced: dict[tuple[str, str], asyncio.Event] = {}
        self._processor: asyncio.Task[None] | None = None

    # -- monitors ------------------------------------------------------------------------------

    def sync_monitors(self) -> bool:
        """Start a monitor for each kind newly served and stop those of kinds gone (or served at
        another version now). Returns whether anything changed."""
        wanted = monitored(self.catalogue)
        changed = False
        for key, (info, task) in list(self._monitors.items()):
            if wanted.get(key) != info:
                task.cancel()
                del self._monitors[key]
                self._synced.pop(key, None)
                changed = True
        loop = asyncio.get_running_loop()
        for key, info in wanted.items():
            if key not in self._monitors:
                self._synced[key] = asyncio.Event()
                task = loop.create_task(
                    self._monitor(info, self._synced[key]),
                    name=f"kubelite-gc-monitor-{info.plural}.{info.group}",
                )
                self._monitors[key] = (info, task)
                changed = True
        return changed

    async def wait_synced(self) -> None:
        """Until every monitor has listed its kind once and the graph holds what they listed."""
        for event in list(self._synced.values()):
            await event.wait()
        await self.changes.join()

    def start(self) -> None:
        self._processor = asyncio.get_running_loop().create_task(
            self._process(), name="kubelite-gc-graph"
        )
        self.sync_monitors()

    async def close(self) -> None:
        tasks = [task for _, task in self._monitors.values()]
        if self._processor is not None:
            tasks.append(self._processor)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._monitors.clear()
        self._processor = None

    @property
    def monitor_count(self) -> int:
        return len(self._monitors)

    async def _monitor(self, info: ResourceInfo, synced: asyncio.Event) -> None:
        """List, then watch from the list's revision; list again when the watch ends. A relist
        reports as deleted whatever the last one had and this one has not."""
        api_version, kind = info.api_version, info.kind
        known: set[str] = set()
        watcher = self.registry.storage(info)
        assert isinstance(watcher, Watcher)
        while True:
            try:
                listing = await self.registry.list(info, None, ListOptions())
                revision = str(listing["metadata"]["resourceVersion"])
                seen: dict[str, Obj] = {}
                for obj in listing["items"]:
                    meta = obj["metadata"]
                    seen[str(meta.get("uid"))] = meta
                    self.changes.put_nowait(Change(api_version, kind, meta))
                for uid in known - seen.keys():
                    node = self.uid_to_node.get(uid)
                    if node is not None:
                        gone = {"uid": uid, "name": node.identity.name}
                        gone["namespace"] = node.identity.namespace
                        self.changes.put_nowait(Change(api_version, kind, gone, deleted=True))
                known = set(seen)
                synced.set()
                events = watcher.watch(Context(), WatchOptions(resource_version=revision))
                async with contextlib.aclosing(events):
                    async for event in events:
                        meta = event.object.get("metadata") or {}
                        uid = str(meta.get("uid"))
                        if event.type == "DELETED":
                            known.discard(uid)
                            self.changes.put_nowait(Change(api_version, kind, meta, deleted=True))
                        elif event.type in ("ADDED", "MODIFIED"):
                            known.add(uid)
                            self.changes.put_nowait(Change(api_version, kind, meta))
            except asyncio.CancelledError:
                raise
            except Exception:
                log.debug("garbage collector: the watch of %s ended", info.plural, exc_info=True)
            await asyncio.sleep(self.retry_seconds)

    # -- graph changes -------------------------------------------------------------------------

    def enqueue_virtual_delete(self, identity: Identity) -> None:
        meta = {"uid": identity.uid, "name": identity.name, "namespace": identity.namespace}
        self.changes.put_nowait(
            Change(identity.api_version, identity.kind, meta, deleted=True, virtual=True)
        )

    async def _process(self) -> None:
        while True:
            change = await self.changes.get()
            try:
                self.apply(change)
            except Exception:  # one bad object must not stop the graph
                log.exception("garbage collector: could not apply a graph change")
            finally:
                self.changes.task_done()

    def apply(self, change: Change) -> None:
        meta = change.meta
        identity = identity_of(change.api_version, change.kind, meta)
        node = self.uid_to_node.get(identity.uid)
        if node is not None and not change.virtual and not node.observed:
            self._observe_virtual(node, identity)
        if change.deleted:
            if node is not None:
                self._delete(node, identity, change.virtual)
            return
        being_deleted = bool(meta.get("deletionTimestamp"))
        finalizers = meta.get("finalizers") or ()
        if node is None:
            node = Node(identity, owner_refs(meta))
            node.observed = True
            node.being_deleted = being_deleted
            node.deleting_dependents = being_deleted and FOREGROUND_FINALIZER in finalizers
            self.uid_to_node[identity.uid] = node
            self._add_dependent_to_owners(node, node.owners)
            self._transitions(node, being_deleted, finalizers, False, False)
            return
        was_fg = node.being_deleted and node.deleting_dependents
        if not change.virtual and (
            node.identity.api_version != identity.api_version or node.identity.kind != identity.kind
        ):
            node.identity = identity
        owners = owner_refs(meta)
        if owners != node.owners:
            added, removed, changed = _diff(node.owners, owners)
            self._enqueue_unblocked(removed, changed)
            node.owners = owners
            self._add_dependent_to_owners(node, added)
            for ref in removed:
                owner = self.uid_to_node.get(ref.uid)
                if owner is not None:
                    owner.dependents.discard(node)
        if being_deleted:
            node.being_deleted = True
        self._transitions(node, being_deleted, finalizers, node.orphaning, was_fg)

    def _transitions(
        self,
        node: Node,
        being_deleted: bool,
        finalizers: Any,
        was_orphaning: bool,
        was_fg: bool,
    ) -> None:
        orphaning = being_deleted and ORPHAN_FINALIZER in finalizers
        node.orphaning = orphaning
        if orphaning and not was_orphaning:
            self.attempt_to_orphan.add(node)
            return
        if being_deleted and FOREGROUND_FINALIZER in finalizers and not was_fg:
            node.deleting_dependents = True
            for dependent in node.dependents:
                self.attempt_to_delete.add(dependent)
            self.attempt_to_delete.add(node)

    def _observe_virtual(self, node: Node, observed: Identity) -> None:
        """A virtual node's object is seen: dependents that name it by other coordinates (a
        namespaced owner in another namespace, above all) may have dangling references."""
        if observed != node.identity:
            for dependent in _partition(node.dependents, observed)[1]:
                if observed.namespace and dependent.identity.namespace != observed.namespace:
                    self.report_invalid(dependent, observed.uid)
                self.attempt_to_delete.add(dependent)
            node.identity = observed
        node.observed = True

    def _add_dependent_to_owners(self, node: Node, owners: tuple[OwnerRef, ...]) -> None:
        suspicious = False
        for ref in owners:
            owner = self.uid_to_node.get(ref.uid)
            if owner is None:
                identity = Identity(
                    ref.api_version, ref.kind, node.identity.namespace, ref.name, ref.uid
                )
                owner = Node(identity)
                self.uid_to_node[ref.uid] = owner
                owner.dependents.add(node)
                self.attempt_to_delete.add(owner)  # a read verifies it
                continue
            owner.dependents.add(node)
            if suspicious:
                continue
            namespaced = bool(owner.identity.namespace)
            if namespaced and owner.identity.namespace != node.identity.namespace:
                if owner.observed:
                    self.report_invalid(node, ref.uid)
                suspicious = True
            elif not owner.identity.matches(ref) or (
                not namespaced
                and owner.identity.namespace != node.identity.namespace
                and not owner.observed
            ):
                suspicious = True
        if suspicious:
            self.attempt_to_delete.add(node)

    def _enqueue_unblocked(
        self, removed: list[OwnerRef], changed: list[tuple[OwnerRef, OwnerRef]]
    ) -> None:
        """Owners waiting on their dependents may go once a blocking reference is removed or
        unblocked (kube's addUnblockedOwnersToDeleteQueue)."""
        uids = [r.uid for r in removed if r.block_owner_deletion]
        uids += [n.uid for o, n in changed if o.block_owner_deletion and not n.block_owner_deletion]
        for uid in uids:
            owner = self.uid_to_node.get(uid)
            if owner is not None:
                self.attempt_to_delete.add(owner)

    def _delete(self, node: Node, deleted: Identity, virtual: bool) -> None:
        if virtual:
            matching, nonmatching = _partition(node.dependents, deleted)
            if (not node.observed and nonmatching) or (node.observed and node.identity != deleted):
                # the dependents disagree on the owner's coordinates: only those that named
                # the absent ones lose it
                if matching:
                    self.absent.add(deleted)
                    for dependent in matching:
                        self.attempt_to_delete.add(dependent)
                return
        self.uid_to_node.pop(node.identity.uid, None)
        for ref in node.owners:
            owner = self.uid_to_node.get(ref.uid)
            if owner is not None:
                owner.dependents.discard(node)
        if node.dependents:
            self.absent.add(deleted)
        for dependent in node.dependents:
            self.attempt_to_delete.add(dependent)
        for ref in node.owners:
            owner = self.uid_to_node.get(ref.uid)
            if owner is not None and owner.deleting_dependents:
                self.attempt_to_delete.add(owner)


def _diff(
    old: tuple[OwnerRef, ...], new: tuple[OwnerRef, ...]
) -> tuple[tuple[OwnerRef, ...], list[OwnerRef], list[tuple[OwnerRef, OwnerRef]]]:
    """(added, removed, changed) references, by uid (kube's referencesDiffs)."""
    before = {r.uid: r for r in old}
    added: list[OwnerRef] = []
    changed: list[tuple[OwnerRef, OwnerRef]] = []
    for ref in new:
        prior = before.pop(ref.uid, None)
        if prior is None:
            added.append(ref)
        elif prior != ref:
            changed.append((prior, ref))
    return tuple(added), list(before.values()), changed


def _partition(dependents: set[Node], owner: Identity) -> tuple[list[Node], list[Node]]:
    """Dependents whose reference to ``owner.uid`` matches its coordinates, and those with one
    that does not (a dependent may be in both); a namespaced owner matches only dependents in
    its namespace (kube's partitionDependents)."""
    matching: list[Node] = []
    nonmatching: list[Node] = []
    for dependent in dependents:
        match = mismatch = False
        if owner.namespace and owner.namespace != dependent.identity.namespace:
            mismatch = True
        else:
            for ref in dependent.owners:
                if ref.uid == owner.uid:
                    if owner.matches(ref):
                        match = True
                    else:
                        mismatch = True
        if match:
            matching.append(dependent)
        if mismatch:
            nonmatching.append(dependent)
    return matching, nonmatching
