"""Namespace lifecycle: the namespace DELETE verb, ``PUT …/namespaces/<n>/finalize`` and the
namespace controller that empties a terminating namespace and then purges it.

How a namespace goes (shared/spec/api-semantics.md §9, kube-apiserver's namespace REST storage
and kube-controller-manager's namespace controller):

1. Create: :func:`prepare_create` gives the object ``spec.finalizers`` containing
   ``"kubernetes"`` and ``status.phase: "Active"``.
2. DELETE (:meth:`NamespaceLifecycle.delete`): the first one sets ``metadata.deletionTimestamp``
   and ``status.phase: "Terminating"`` and answers 200 with the object. From then on
   ``Registry.create`` refuses new content in it (403). Another DELETE while ``spec.finalizers``
   is non-empty answers 409; ``default``, ``kube-system`` and ``kube-public`` answer 403.
3. The controller (:meth:`NamespaceLifecycle.start`) deletes every object of every namespaced
   kind in the catalogue stored under the namespace, through ``Registry.delete``, so objects with
   ``metadata.finalizers`` are only marked and are waited for. Once nothing is left it removes
   ``"kubernetes"`` from ``spec.finalizers`` (what kube's controller does through ``finalize``);
   the write that leaves both finalizer lists empty deletes the namespace from storage.

All state lives in storage (the namespace's ``deletionTimestamp`` and finalizers), so the
controller is crash-safe: on start it scans for terminating namespaces and resumes. It is woken
by :meth:`NamespaceLifecycle.delete` and :meth:`NamespaceLifecycle.finalize`, re-checks
namespaces held by finalizers with exponential back-off, and rescans every ``resync_seconds``.
Work is done in pages of ``page_size`` keys, yielding the event loop between pages.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Callable
from typing import Any

import orjson

# ``registry`` as a module, not names from it, so that registry.py may in turn do
# ``from kubelite.api import namespaces`` and call the helpers below (no import cycle).
from kubelite.api import errors, stored
from kubelite.api import registry as reg
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.errors import APIError, Cause

log = logging.getLogger(__name__)

Obj = dict[str, Any]

#: The finalizer the namespace controller owns (``spec.finalizers``, not metadata's).
KUBERNETES_FINALIZER = "kubernetes"
#: Namespaces that may never be deleted (kube's NamespaceLifecycle admission plugin).
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
TERMINATING_CONFLICT = (
    "The system is ensuring all content is removed from this namespace.  Upon completion, this "
    "namespace will automatically be purged by the system."
)


# -- pure helpers the registry calls for the Namespace kind --------------------------------------


def prepare_create(obj: Obj) -> Obj:
    """A new Namespace as stored: ``status`` is ``{"phase": "Active"}`` whatever was sent, and
    ``spec.finalizers`` includes ``"kubernetes"`` (appended if others were given). Mutates and
    returns ``obj``."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    finalizers = spec.get("finalizers")
    if not isinstance(finalizers, list):
        finalizers = []
    if KUBERNETES_FINALIZER not in finalizers:
        finalizers = [*finalizers, KUBERNETES_FINALIZER]
    spec["finalizers"] = finalizers
    obj["status"] = {"phase": "Active"}
    return obj


def prepare_update(current: Obj, new: Obj) -> Obj:
    """A PUT/PATCH of the Namespace itself: ``spec.finalizers`` and ``status`` stay as stored
    (only ``finalize`` and ``status`` change them). Mutates and returns ``new``."""
    finalizers = (current.get("spec") or {}).get("finalizers")
    spec = new.get("spec")
    if not isinstance(spec, dict):
        spec = new["spec"] = {}
    if finalizers:
        spec["finalizers"] = copy.deepcopy(finalizers)
    else:
        spec.pop("finalizers", None)
    if "status" in current:
        new["status"] = copy.deepcopy(current["status"])
    else:
        new.pop("status", None)
    return new


def deletion_held(obj: Obj) -> bool:
    """Whether a Namespace with ``deletionTimestamp`` must stay stored: ``spec.finalizers`` is
    non-empty. (``metadata.finalizers`` hold it too, as for every kind.)"""
    return bool((obj.get("spec") or {}).get("finalizers"))


def _purgeable(obj: Obj) -> bool:
    meta = obj.get("metadata") or {}
    return (
        bool(meta.get("deletionTimestamp"))
        and not meta.get("finalizers")
        and not deletion_held(obj)
    )


class NamespaceLifecycle:
    """The namespace DELETE and finalize verbs, and the namespace controller.

    ``start()`` runs the controller as a task on the running loop; ``close()`` stops it.
    ``wait_idle()`` (for tests) returns once a pass that began after the call found nothing it
    could do (every terminating namespace gone or waiting on finalizers).
    """

    def __init__(
        self,
        registry: reg.Registry,
        catalogue: Catalogue,
        *,
        page_size: int = 256,
        retry_min_seconds: float = 0.05,
        retry_max_seconds: float = 2.0,
        resync_seconds: float = 60.0,
    ) -> None:
        info = catalogue.lookup("", "v1", "namespaces")
        if info is None:
            raise ValueError("the catalogue does not serve namespaces")
        self.registry = registry
        self.catalogue = catalogue
        self.info: ResourceInfo = info
        self.page_size = page_size
        self.retry_min_seconds = retry_min_seconds
        self.retry_max_seconds = retry_max_seconds
        self.resync_seconds = resync_seconds
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._idle = asyncio.Condition()
        self._pass_seq = 0
        self._idle_seq = 0

    # -- verbs ---------------------------------------------------------------------------

    async def delete(
        self,
        name: str,
        *,
        precondition_uid: str = "",
        precondition_rv: str = "",
        dry_run: bool = False,
    ) -> Obj:
        """DELETE /api/v1/namespaces/<name>: 200 with the returned object (always the object)."""
        if name in IMMORTAL_NAMESPACES:
            raise errors.forbidden("namespaces", "", name, "this namespace may not be deleted")
        current = await self.registry.get(self.info, None, name)
        _check_preconditions(current, precondition_uid, precondition_rv)
        meta = current["metadata"]
        if not meta.get("deletionTimestamp"):

            async def mark(obj: Obj) -> Obj:
                _check_preconditions(obj, precondition_uid, precondition_rv)
                obj_meta = obj["metadata"]
                if not obj_meta.get("deletionTimestamp"):
                    obj_meta["deletionTimestamp"] = stored.now()
                status = obj.get("status")
                if not isinstance(status, dict):
                    status = obj["status"] = {}
                status["phase"] = "Terminating"
                return obj

            if dry_run:
                return await mark(copy.deepcopy(current))
            obj, _ = await self.registry.guaranteed_update(self.info, None, name, mark)
            self._wake.set()
            return obj
        if deletion_held(current):
            raise errors.conflict("namespaces", "", name, TERMINATING_CONFLICT)
        obj, _ = await self.registry.delete(
            self.info,
            None,
            name,
            precondition_uid=precondition_uid,
            precondition_rv=precondition_rv,
            dry_run=dry_run,
        )
        return obj

    async def finalize(self, name: str, body: Obj, *, dry_run: bool = False) -> Obj:
        """PUT /api/v1/namespaces/<name>/finalize: replaces ``spec.finalizers`` with the body's,
        nothing else. A terminating namespace left with no finalizers is deleted by this write
        (the answer is the submitted state, 200)."""
        _check_body(body, name)
        meta = body.get("metadata") or {}
        requested = str(meta.get("resourceVersion") or "")
        raw = (body.get("spec") or {}).get("finalizers") or []
        if not isinstance(raw, list):
            raise errors.bad_request("spec.finalizers must be a list")
        finalizers = _validate_finalizers(name, raw)

        def apply(obj: Obj) -> Obj:
            if requested and requested != obj["metadata"].get("resourceVersion"):
                raise errors.conflict("namespaces", "", name)
            spec = obj.get("spec")
            if not isinstance(spec, dict):
                spec = obj["spec"] = {}
            if finalizers:
                spec["finalizers"] = list(finalizers)
            else:
                spec.pop("finalizers", None)
            return obj

        if dry_run:
            return apply(await self.registry.get(self.info, None, name))
        obj, _ = await self._write(name, apply)
        self._wake.set()
        return obj

    async def _write(self, name: str, apply: Callable[[Obj], Obj]) -> tuple[Obj, bool]:
        """``apply`` through guaranteed_update; a result that is purgeable is deleted instead
        (kube's ShouldDeleteNamespaceDuringUpdate). Returns (the new state, stamped; written)."""
        written: list[Obj] = []

        async def fn(obj: Obj) -> Obj | None:
            new = apply(obj)
            written[:] = [new]
            return None if _purgeable(new) else new

        obj, changed = await self.registry.guaranteed_update(self.info, None, name, fn)
        if _purgeable(written[0]):
            new = written[0]
            new["metadata"]["resourceVersion"] = obj["metadata"]["resourceVersion"]
            return new, changed
        return obj, changed

    # -- the controller ------------------------------------------------------------------

    def start(self) -> None:
        """Run the controller on the running event loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="kubelite-namespace-controller"
            )

    async def close(self) -> None:
        """Stop the controller and wait for it to end; what it did so far is in storage."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        async with self._idle:
            self._idle.notify_all()

    async def wait_idle(self) -> None:
        """Wait for a controller pass begun after this call that had nothing left to do."""
        if self._task is None:
            raise RuntimeError("the namespace controller is not running")
        want = self._pass_seq + 1
        self._wake.set()
        async with self._idle:
            await self._idle.wait_for(lambda: self._idle_seq >= want or self._task is None)

    async def _run(self) -> None:
        delay = self.retry_min_seconds
        while True:
            self._wake.clear()
            self._pass_seq += 1
            seq = self._pass_seq
            try:
                progressed, pending = await self._pass()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("namespace controller pass failed; retrying")
                progressed, pending = False, True
            if progressed:
                delay = self.retry_min_seconds
                await asyncio.sleep(0)
                continue
            async with self._idle:
                self._idle_seq = seq
                self._idle.notify_all()
            timeout = delay if pending else self.resync_seconds
            if pending:
                delay = min(delay * 2, self.retry_max_seconds)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _pass(self) -> tuple[bool, bool]:
        """One look at every terminating namespace: (wrote anything, some are still waiting)."""
        progressed = pending = False
        for ns in await self._terminating():
            wrote, done = await self._sync(ns)
            progressed |= wrote
            pending |= not done
        return progressed, pending

    async def _terminating(self) -> list[Obj]:
        found: list[Obj] = []
        start_after: str | None = None
        while True:
            page = await self.registry.store.list(
                stored.NAMESPACE_KEY_PREFIX, None, self.page_size, start_after
            )
            for kv in page.items:
                obj: Obj = orjson.loads(kv.value)
                if (obj.get("metadata") or {}).get("deletionTimestamp"):
                    found.append(obj)
            if not page.more or not page.items:
                return found
            start_after = page.items[-1].key
            await asyncio.sleep(0)

    async def _sync(self, ns: Obj) -> tuple[bool, bool]:
        """Advance one terminating namespace: (wrote anything, finished with it)."""
        name = ns["metadata"]["name"]
        finalizers = (ns.get("spec") or {}).get("finalizers") or []
        if finalizers and KUBERNETES_FINALIZER not in finalizers:
            return False, True  # finalized by us already; other finalizers' owners act next
        wrote, remaining = await self._delete_content(name)
        if remaining:
            return wrote, False
        uid = ns["metadata"].get("uid")

        def drop_ours(obj: Obj) -> Obj:
            if uid and obj["metadata"].get("uid") != uid:
                raise errors.conflict("namespaces", "", name)  # a new namespace: not ours
            spec = obj.get("spec")
            if isinstance(spec, dict) and isinstance(spec.get("finalizers"), list):
                rest = [f for f in spec["finalizers"] if f != KUBERNETES_FINALIZER]
                if rest:
                    spec["finalizers"] = rest
                else:
                    spec.pop("finalizers")
            return obj

        try:
            _, changed = await self._write(name, drop_ours)
        except APIError as exc:
            if exc.code in (404, 409):
                return wrote, True
            raise
        return wrote or changed, True

    def _content_prefixes(self, namespace: str) -> dict[str, ResourceInfo]:
        """One kind per storage prefix (HPA v1 and v2 share one). Each prefix ends in "/", so
        namespace "ns" never matches keys of "ns2"."""
        out: dict[str, ResourceInfo] = {}
        for info in self.catalogue:
            if info.namespaced:
                out.setdefault(stored.storage_prefix(info, namespace), info)
        return out

    async def _delete_content(self, namespace: str) -> tuple[bool, int]:
        """Delete (or mark, when finalizers hold them) everything stored in ``namespace``:
        (wrote anything, objects still present)."""
        wrote = False
        remaining = 0
        for prefix, info in self._content_prefixes(namespace).items():
            start_after: str | None = None
            while True:
                page = await self.registry.store.list(prefix, None, self.page_size, start_after)
                for kv in page.items:
                    meta = orjson.loads(kv.value).get("metadata") or {}
                    if meta.get("deletionTimestamp") and meta.get("finalizers"):
                        remaining += 1
                        continue
                    try:
                        _, gone = await self.registry.delete(
                            info,
                            namespace,
                            kv.key[len(prefix) :],
                            precondition_uid=str(meta.get("uid") or ""),
                        )
                    except APIError as exc:
                        if exc.code == 404:
                            continue
                        if exc.code == 409:  # replaced meanwhile: look again next pass
                            remaining += 1
                            continue
                        raise
                    wrote = True
                    if not gone:
                        remaining += 1
                if not page.more or not page.items:
                    break
                start_after = page.items[-1].key
                await asyncio.sleep(0)
        return wrote, remaining


def _check_preconditions(obj: Obj, uid: str, resource_version: str) -> None:
    """kube's namespace DELETE preconditions, with its own texts."""
    meta = obj["metadata"]
    name = meta.get("name", "")
    if uid and uid != meta.get("uid"):
        raise errors.conflict(
            "namespaces",
            "",
            name,
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            f"{meta.get('uid')}",
        )
    if resource_version and resource_version != meta.get("resourceVersion"):
        raise errors.conflict(
            "namespaces",
            "",
            name,
            f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
            f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
        )


def _check_body(body: Obj, name: str) -> None:
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if api_version and api_version != "v1":
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            "version (v1)"
        )
    if kind and kind != "Namespace":
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind (Namespace)"
        )
    meta = body.get("metadata") or {}
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    if meta.get("name", name) != name:
        raise errors.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({name})"
        )


def _validate_finalizers(name: str, raw: list[Any]) -> list[str]:
    """kube's validateFinalizerName: "kubernetes", or a qualified name with a "/"."""
    causes = [
        Cause(
            "FieldValueInvalid",
            f'Invalid value: "{value}": name is neither a standard finalizer name nor is it '
            "fully qualified",
            f"spec.finalizers[{i}]",
        )
        for i, value in enumerate(raw)
        if not isinstance(value, str) or (value != KUBERNETES_FINALIZER and "/" not in value)
    ]
    if causes:
        raise errors.invalid("Namespace", "", name, causes)
    return [str(v) for v in raw]
