"""The garbage collector's work queue and dependency graph, without a server: what each change
does to the graph and which work it queues (kube's graph_builder.go processGraphChanges)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from kubelite.api.catalogue import load_builtin_catalogue
from kubelite.api.controllers.gcgraph import Change, GraphBuilder, Identity, Node
from kubelite.api.controllers.workqueue import WorkQueue
from kubelite.api.machinery.registry import Registry

Obj = dict[str, Any]


# -- the work queue ------------------------------------------------------------------------------


async def test_an_item_is_queued_once_and_never_held_by_two_workers() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    held = await queue.get()
    assert held == "a"
    queue.add("a")  # while held: queued again only once it is done
    assert len(queue) == 1
    assert await queue.get() == "b"
    queue.done("a")
    assert len(queue) == 1
    assert await queue.get() == "a"


async def test_rate_limited_items_come_back_after_a_growing_back_off() -> None:
    queue: WorkQueue[str] = WorkQueue(retry_min_seconds=0.01, retry_max_seconds=1.0)
    queue.add_rate_limited("a")
    assert len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 5) == "a"
    queue.done("a")
    queue.add_rate_limited("a")
    queue.add_rate_limited("a")
    assert queue._failures["a"] == 3
    queue.forget("a")
    assert "a" not in queue._failures
    queue.shut_down()
    assert await queue.get() is None  # a stopped controller's workers end


# -- the graph -----------------------------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.delete: WorkQueue[Node] = WorkQueue()
        self.orphan: WorkQueue[Node] = WorkQueue()
        self.reported: list[tuple[str, str]] = []
        self.graph = GraphBuilder(
            cast(Registry, None),
            load_builtin_catalogue(),
            self.delete,
            self.orphan,
            lambda node, uid: self.reported.append((node.identity.name, uid)),
        )

    def queued(self, queue: WorkQueue[Node]) -> set[str]:
        names = {n.identity.name for n in queue._queue}
        queue._queue.clear()
        queue._dirty.clear()
        return names

    def see(self, meta: Obj, *, deleted: bool = False, kind: str = "ConfigMap") -> None:
        self.graph.apply(Change("v1", kind, meta, deleted=deleted))


def meta(name: str, *owners: str, ns: str = "ns", block: bool = False, **more: Any) -> Obj:
    refs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": o, "uid": o, "blockOwnerDeletion": block}
        for o in owners
    ]
    out: Obj = {"name": name, "namespace": ns, "uid": name, **more}
    if refs:
        out["ownerReferences"] = refs
    return out


async def test_an_unseen_owner_is_a_virtual_node_to_verify() -> None:
    r = Recorder()
    r.see(meta("dep", "owner"))
    owner = r.graph.uid_to_node["owner"]
    assert not owner.observed
    assert owner.identity == Identity("v1", "ConfigMap", "ns", "owner", "owner")
    assert r.queued(r.delete) == {"owner"}
    r.see(meta("owner"))  # observed: no longer virtual, same node
    assert r.graph.uid_to_node["owner"] is owner
    assert owner.observed
    assert owner.dependents == {r.graph.uid_to_node["dep"]}


async def test_an_owner_gone_queues_its_dependents_and_is_remembered_absent() -> None:
    r = Recorder()
    r.see(meta("owner"))
    r.see(meta("dep", "owner"))
    r.queued(r.delete)
    r.see(meta("owner"), deleted=True)
    assert "owner" not in r.graph.uid_to_node
    assert r.queued(r.delete) == {"dep"}
    assert Identity("v1", "ConfigMap", "ns", "owner", "owner") in r.graph.absent


async def test_deletion_with_a_finalizer_queues_the_collectors_work_once() -> None:
    r = Recorder()
    r.see(meta("owner"))
    r.see(meta("dep", "owner"))
    r.queued(r.delete)
    deleting = {"deletionTimestamp": "2026-01-01T00:00:00Z"}
    r.see(meta("owner", finalizers=["foregroundDeletion"], **deleting))
    assert r.queued(r.delete) == {"owner", "dep"}
    assert r.graph.uid_to_node["owner"].deleting_dependents
    r.see(meta("owner", finalizers=["foregroundDeletion"], **deleting))  # no new transition
    assert r.queued(r.delete) == set()
    r.see(meta("o2"))
    r.see(meta("o2", finalizers=["orphan"], **deleting))
    assert r.queued(r.orphan) == {"o2"}


async def test_a_blocking_reference_dropped_lets_the_owner_be_looked_at_again() -> None:
    r = Recorder()
    r.see(meta("owner"))
    r.see(meta("dep", "owner", block=True))
    owner = r.graph.uid_to_node["owner"]
    assert [d.identity.name for d in owner.blocking_dependents()] == ["dep"]
    r.queued(r.delete)
    r.see(meta("dep", "owner", block=False))
    assert r.queued(r.delete) == {"owner"}
    assert owner.blocking_dependents() == []
    r.see(meta("dep"))  # reference removed: no longer a dependent
    assert owner.dependents == set()


async def test_a_namespaced_owner_seen_in_another_namespace_is_reported() -> None:
    r = Recorder()
    r.see(meta("dep", "owner", ns="a"))
    r.queued(r.delete)
    r.see(meta("owner", ns="b"))
    assert r.reported == [("dep", "owner")]
    assert r.queued(r.delete) == {"dep"}  # to find its reference dangling
    r.see(meta("dep2", "owner", ns="c"))  # the owner already observed: reported at once
    assert ("dep2", "owner") in r.reported
