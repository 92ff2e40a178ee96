"""The RBAC bootstrap: what kube-apiserver's post-start hook ``rbac/bootstrap-roles`` does
(pkg/registry/rbac/rest/storage_rbac.go ``EnsureRBACPolicy``, reconciling with
component-helpers' ``auth/rbac/reconciliation``), over the policy of
:mod:`kubelite.api.kinds.rbac.policy`.

:func:`ensure_bootstrap_policy` creates every bootstrap ClusterRole, ClusterRoleBinding, Role and
RoleBinding that is missing, and reconciles the ones that exist, in union mode (nothing a user
added is taken away):

- a role keeps its rules and gets, appended, every permission of the stock rules it does not
  cover, one rule per verb, group, resource and name (``Covers``' breakdown); its labels and
  annotations are the stock ones with the stored values winning; stock aggregation selectors it
  lacks are appended (and an aggregationRule the stock role has not is dropped);
- a binding gets the stock subjects it lacks, appended; a binding whose roleRef differs from
  the stock one is deleted (uid precondition) and created anew, since roleRef is immutable;
- an object annotated ``rbac.authorization.kubernetes.io/autoupdate: "false"`` is left alone.

Before that, as kube does for clusters older than aggregation and than the split of
``system:discovery``: an ``admin``/``edit``/``view`` without aggregationRule has its rules copied
to ``system:aggregate-to-*`` when that role is missing, and a ``system:discovery`` binding lends
its subjects to a missing ``system:public-info-viewer`` binding.

Writes go through the registry as the server's own (manager ``kube-apiserver``), each
conflict-checked against the object read: a 409 re-reads and tries again, and an object another
server over the same storage created first (409 AlreadyExists) is reconciled instead. As kube,
every object is tried even when one fails; the first failure is raised at the end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kubelite.api.auth.rbac import rules_of
from kubelite.api.auth.rbaccover import covers
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.kinds.core.namespaces import namespace_info
from kubelite.api.kinds.rbac.policy import (
    AUTOUPDATE,
    GROUP,
    cluster_role_bindings,
    cluster_roles,
    namespace_role_bindings,
    namespace_roles,
)
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import DeleteOptions

log = logging.getLogger(__name__)

Obj = dict[str, Any]

#: ClusterRolesToAggregate: the roles that became aggregated, and where their own rules went.
ROLES_TO_AGGREGATE = (
    ("admin", "system:aggregate-to-admin"),
    ("edit", "system:aggregate-to-edit"),
    ("view", "system:aggregate-to-view"),
)
#: ClusterRoleBindingsToSplit: a binding whose subjects seed a newer binding.
BINDINGS_TO_SPLIT = (("system:discovery", "system:public-info-viewer"),)
#: kube's retry.DefaultBackoff: four tries, 10 ms apart, the wait growing fivefold.
CONFLICT_TRIES, CONFLICT_WAIT, CONFLICT_FACTOR = 4, 0.01, 5.0


@dataclass(frozen=True)
class Reconciled:
    """What reconciling one object comes to: ``operation`` is ``none``, ``create``, ``update``
    or ``recreate``; ``obj`` is the object to write; ``protected``: autoupdate is off, so
    nothing is written."""

    operation: str
    obj: Obj
    protected: bool = False


#: reconcile_role or reconcile_binding: (existing, expected) -> what to do
Compute = Callable[[Obj, Obj], "Reconciled"]


async def ensure_bootstrap_policy(registry: Registry, catalogue: Catalogue) -> None:
    """Create or reconcile the bootstrap policy (see the module docstring)."""
    roles, bindings = (
        catalogue.require(GROUP, "v1", p) for p in ("clusterroles", "clusterrolebindings")
    )
    await _prime_aggregated_roles(registry, roles)
    await _prime_split_bindings(registry, bindings)
    work = (
        (roles, reconcile_role, cluster_roles()),
        (bindings, reconcile_binding, cluster_role_bindings()),
        (catalogue.require(GROUP, "v1", "roles"), reconcile_role, namespace_roles()),
        (
            catalogue.require(GROUP, "v1", "rolebindings"),
            reconcile_binding,
            namespace_role_bindings(),
        ),
    )
    failures: list[Exception] = []

    async def one(info: ResourceInfo, compute: Compute, expected: Obj) -> None:
        write = _Reconcile(registry, catalogue, info, expected, compute)
        try:
            done = await _on_conflict_retry(write.run)
        except Exception as exc:  # as kube: try the others, fail at the end
            log.error("rbac bootstrap: %s %s: %s", info.plural, _where(expected), exc)
            failures.append(exc)
            return
        log.debug("rbac bootstrap: %s %s: %s", info.plural, _where(expected), done)

    # the objects of one kind are independent: reconciled at once, so the store's writer
    # commits them together (a fresh server is ready sooner)
    for info, compute, objects in work:
        await asyncio.gather(*(one(info, compute, expected) for expected in objects))
    if failures:
        raise failures[0]


def _where(obj: Obj) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


async def _on_conflict_retry(attempt: Callable[[], Awaitable[str]]) -> str:
    wait = CONFLICT_WAIT
    for _ in range(CONFLICT_TRIES - 1):
        try:
            return await attempt()
        except APIError as exc:
            if exc.code not in (409, 503) or exc.reason == "AlreadyExists":
                raise
        await asyncio.sleep(wait)
        wait *= CONFLICT_FACTOR
    return await attempt()


# -- one object ----------------------------------------------------------------------------------


class _Reconcile:
    """ReconcileRoleOptions / ReconcileRoleBindingOptions ``Run`` with ``Confirm`` and in union
    mode, for one expected object."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        info: ResourceInfo,
        expected: Obj,
        compute: Compute,
    ) -> None:
        self.registry, self.catalogue, self.info = registry, catalogue, info
        self.expected, self.compute = expected, compute
        self.namespace: str | None = expected["metadata"].get("namespace")
        self.name: str = expected["metadata"]["name"]
        # kube's roles give up after three reads, its bindings after four
        self.tries = 3 if compute is reconcile_role else 4

    async def run(self) -> str:
        """The operation done (``none``, ``create``, ``update``, ``recreate``, ``protected``)."""
        for _ in range(self.tries):  # an object appearing or vanishing meanwhile: look again
            existing = await _get(self.registry, self.info, self.namespace, self.name)
            if existing is None:
                result = Reconciled("create", self.expected)
            else:
                result = self.compute(existing, self.expected)
            if result.protected:
                if result.operation != "none":
                    log.warning("rbac bootstrap: %s is reconcile-protected", self.name)
                return "protected"
            try:
                if await self._write(result, existing):
                    return result.operation
            except APIError as exc:
                creating = result.operation in ("create", "recreate")
                made_meanwhile = creating and exc.reason == "AlreadyExists"
                gone_meanwhile = not creating and exc.code == 404
                if not (made_meanwhile or gone_meanwhile):
                    raise
        raise RuntimeError(f"{self.info.plural} {self.name}: exceeded maximum attempts")

    async def _write(self, result: Reconciled, existing: Obj | None) -> bool:
        """Do ``result``; False when the object was replaced meanwhile."""
        registry, info = self.registry, self.info
        recreate = result.operation == "recreate"
        if recreate and existing is not None and not await _delete(registry, info, existing):
            return False
        if result.operation in ("create", "recreate"):
            if self.namespace:
                await _ensure_namespace(registry, self.catalogue, self.namespace)
            await registry.create(info, self.namespace, clone(result.obj))
        elif result.operation == "update":
            await registry.update(info, self.namespace, self.name, result.obj)
        return True


async def _prime_aggregated_roles(registry: Registry, info: ResourceInfo) -> None:
    """primeAggregatedClusterRoles: a role that became aggregated (``admin``...) but is stored
    without aggregationRule has its own rules copied to its ``system:aggregate-to-*`` role,
    when that one does not exist yet."""
    for old, new in ROLES_TO_AGGREGATE:
        if await _get(registry, info, None, new) is not None:
            continue
        existing = await _get(registry, info, None, old)
        if existing is None:
            continue
        if existing.get("aggregationRule") is not None:
            return  # already migrated (kube stops looking here)
        log.info("rbac bootstrap: migrating %s to %s", old, new)
        copy = clone(existing)
        meta = copy["metadata"]
        for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
            meta.pop(key, None)
        meta["name"] = new
        await _create_unless_exists(registry, info, copy)


async def _prime_split_bindings(registry: Registry, info: ResourceInfo) -> None:
    """primeSplitClusterRoleBindings: a new stock binding missing while its source exists is
    created with the source's subjects, labels and annotations."""
    templates = {b["metadata"]["name"]: b for b in cluster_role_bindings()}
    for source_name, target_name in BINDINGS_TO_SPLIT:
        source = await _get(registry, info, None, source_name)
        if source is None or await _get(registry, info, None, target_name) is not None:
            continue
        target = clone(templates[target_name])
        meta = source.get("metadata") or {}
        target["metadata"] = {"name": target_name}
        for key in ("labels", "annotations"):
            if meta.get(key):
                target["metadata"][key] = clone(meta[key])
        target.pop("subjects", None)
        if source.get("subjects"):
            target["subjects"] = clone(source["subjects"])
        await _create_unless_exists(registry, info, target)


async def _create_unless_exists(registry: Registry, info: ResourceInfo, obj: Obj) -> None:
    try:
        await registry.create(info, None, obj)
    except APIError as exc:
        if exc.reason != "AlreadyExists":
            raise


async def _get(
    registry: Registry, info: ResourceInfo, namespace: str | None, name: str
) -> Obj | None:
    try:
        return await registry.get(info, namespace, name)
    except APIError as exc:
        if exc.code == 404:
            return None
        raise


async def _delete(registry: Registry, info: ResourceInfo, existing: Obj) -> bool:
    """Delete ``existing`` if it is still that object: False when another took its place."""
    meta = existing["metadata"]
    options = DeleteOptions(precondition_uid=str(meta.get("uid") or ""))
    try:
        await registry.delete(info, meta.get("namespace"), meta["name"], options)
    except APIError as exc:
        if exc.code == 404:
            return True
        if exc.code == 409:
            return False
        raise
    return True


async def _ensure_namespace(registry: Registry, catalogue: Catalogue, namespace: str) -> None:
    """tryEnsureNamespace: create the namespace of a bootstrap Role if it is missing."""
    info = namespace_info(catalogue)
    if await _get(registry, info, None, namespace) is not None:
        return
    try:
        await registry.create(info, None, {"metadata": {"name": namespace}})
    except APIError as exc:
        if exc.reason not in ("AlreadyExists", "Forbidden"):
            raise


# -- what changes --------------------------------------------------------------------------------


def reconcile_role(existing: Obj, expected: Obj) -> Reconciled:
    """computeReconciledRole in union mode: the existing role with the expected labels,
    annotations, permissions and aggregation selectors it lacks added."""
    result = clone(existing)
    changed = _merge_metadata(result, expected)
    _, missing = covers(rules_of(existing), rules_of(expected))
    if missing:
        result["rules"] = [*rules_of(existing), *missing]
        changed = True
    have, want = existing.get("aggregationRule"), expected.get("aggregationRule")
    if want is None and have is not None:
        result.pop("aggregationRule", None)
        changed = True
    elif want is not None:
        selectors = _selectors(have)
        lacking = [s for s in _selectors(want) if not any(_same(s, h) for h in selectors)]
        if lacking:
            result["aggregationRule"] = {"clusterRoleSelectors": [*selectors, *lacking]}
            changed = True
    return Reconciled("update" if changed else "none", result, _protected(existing))


def reconcile_binding(existing: Obj, expected: Obj) -> Reconciled:
    """computeReconciledRoleBinding in union mode: recreated when its roleRef differs, else the
    existing binding with the expected labels, annotations and subjects it lacks added."""
    protected = _protected(existing)
    if _role_ref(existing) != _role_ref(expected):
        return Reconciled("recreate", expected, protected)
    result = clone(existing)
    changed = _merge_metadata(result, expected)
    have = _subjects(existing)
    lacking: list[Obj] = []
    for subject in _subjects(expected):
        key = _subject_key(subject)
        if all(_subject_key(s) != key for s in [*have, *lacking]):
            lacking.append(subject)
    if lacking:
        result["subjects"] = [*have, *lacking]
        changed = True
    return Reconciled("update" if changed else "none", result, protected)


def _protected(existing: Obj) -> bool:
    annotations = (existing.get("metadata") or {}).get("annotations")
    return isinstance(annotations, dict) and annotations.get(AUTOUPDATE) == "false"


def _merge_metadata(result: Obj, expected: Obj) -> bool:
    """Expected labels and annotations under the stored ones (stored values win)."""
    meta, want = result.setdefault("metadata", {}), expected["metadata"]
    changed = False
    for key in ("annotations", "labels"):
        have = meta.get(key)
        have = have if isinstance(have, dict) else {}  # stored before validation: anything
        merged = {**(want.get(key) or {}), **have}
        if merged != have:
            meta[key] = merged
            changed = True
    return changed


def _selectors(rule: Any) -> list[Obj]:
    selectors = rule.get("clusterRoleSelectors") if isinstance(rule, dict) else None
    return [s for s in selectors if isinstance(s, dict)] if isinstance(selectors, list) else []


def _same(a: Obj, b: Obj) -> bool:
    """Semantic equality of two label selectors (an empty map or list is an absent one)."""
    return {k: v for k, v in a.items() if v} == {k: v for k, v in b.items() if v}


def _role_ref(binding: Obj) -> tuple[str, str, str]:
    ref = binding.get("roleRef")
    ref = ref if isinstance(ref, dict) else {}  # stored before validation: anything
    return (ref.get("apiGroup") or "", ref.get("kind") or "", ref.get("name") or "")


def _subjects(binding: Obj) -> list[Obj]:
    subjects = binding.get("subjects")
    return [s for s in subjects if isinstance(s, dict)] if isinstance(subjects, list) else []


def _subject_key(subject: Obj) -> tuple[str, ...]:
    return tuple(subject.get(k) or "" for k in ("kind", "apiGroup", "name", "namespace"))


# -- Covers (component-helpers auth/rbac/validation/policy_comparator.go) -----------------------
