"""Evictions (kube's pkg/registry/core/pod/storage/eviction.go, EvictionREST):
``POST .../pods/<name>/eviction`` with a policy/v1 (or v1beta1) Eviction deletes the pod if the
PodDisruptionBudget covering it allows a disruption.

What kube's ``EvictionREST.Create`` does, in its order:

- the body must be an Eviction named as the path (400 texts of kube's decoder and storage);
  the request's ``dryRun`` and the body's ``deleteOptions.dryRun`` must agree;
- admission sees a create of ``pods/eviction``;
- a pod that is terminal, Pending or already terminating is deleted straight away (no PDB
  read); so is one no PDB covers;
- a pod covered by more than one PDB answers kube's 500 Status;
- an unready pod is deleted without touching the budget when the PDB's
  ``unhealthyPodEvictionPolicy`` is ``AlwaysAllow``, or (``IfHealthyBudget``, the default) when
  the budget is healthy (``currentHealthy >= desiredHealthy > 0``), with a resourceVersion
  precondition so that a pod turning ready meanwhile is not evicted (a 409 then answers 429);
- otherwise the budget is checked and decremented: a PDB whose generation the disruption
  controller has not observed, or with no disruption allowed, answers 429 TooManyRequests with a
  ``DisruptionBudget`` cause; else its status is written first (``disruptionsAllowed - 1``,
  ``disruptedPods[<pod>] = now``, the ``DisruptionAllowed`` condition turned False at zero),
  re-read and retried on conflict as kube's ``retry.RetryOnConflict(EvictionsRetry)``;
- the delete adds the pod condition ``DisruptionTarget`` (``EvictionByEvictionAPI``,
  ``Eviction API: evicting``) through the pod's status, then deletes it with the Eviction's
  ``deleteOptions`` (kube's ``addConditionAndDeletePod``; neither under dry-run but the delete's
  own dry run).

The answer is the Status ``Success`` with code 201. The PDBs are read and written as the API
server's own client (kube's loopback ``podDisruptionBudgetClient``), under ``kube-apiserver``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding.stored import now
from kubelite.api.kinds.policy.disruption import is_pod_ready, update_disruption_allowed_condition
from kubelite.api.machinery import deletion, updates
from kubelite.api.machinery.admission import CREATE, Attributes
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.listing import ListOptions
from kubelite.api.machinery.reads import collect
from kubelite.api.machinery.registry import SERVER_MANAGER
from kubelite.api.machinery.rest import Context, DeleteOptions, GetOptions, WriteOptions
from kubelite.api.machinery.selectors import SelectorError, label_selector_of

Obj = dict[str, Any]
T = TypeVar("T")

#: the group-versions whose Eviction the subresource takes (kube's AcceptsGroupVersion)
ACCEPTED_VERSIONS = ("policy/v1", "policy/v1beta1")
#: kube's MaxDisruptedPodSize
MAX_DISRUPTED_POD_SIZE = 2000
#: kube's EvictionsRetry: 20 tries, 500 ms apart (jitter 0.1)
RETRY_STEPS = 20
RETRY_SECONDS = 0.5
TOO_MANY_REQUESTS = "Cannot evict pod as it would violate the pod's disruption budget."
MORE_THAN_ONE = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)
DISRUPTION_TARGET = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "EvictionByEvictionAPI",
    "message": "Eviction API: evicting",
}


def too_many_requests(cause: str, retry_after: int = 0) -> errors.APIError:
    """apimachinery's NewTooManyRequests with a ``DisruptionBudget`` cause."""
    details: Obj = {"causes": [{"reason": "DisruptionBudget", "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return errors.APIError(
        429, "TooManyRequests", TOO_MANY_REQUESTS, details, retry_after=retry_after or None
    )


def still_processing(pdb_name: str) -> errors.APIError:
    """kube's createTooManyRequestsError (Retry-After 10)."""
    return too_many_requests(
        f"The disruption budget {pdb_name} is still being processed by the server.", 10
    )


def is_conflict(exc: BaseException) -> bool:
    return isinstance(exc, errors.APIError) and exc.code == 409


async def retry_on(
    retriable: Callable[[BaseException], bool], attempt: Callable[[], Awaitable[T]]
) -> T:
    """client-go's ``retry.OnError(EvictionsRetry, ...)``: up to 20 tries while the error is
    retriable; the last error when they all fail."""
    for step in range(RETRY_STEPS):
        try:
            return await attempt()
        except errors.APIError as exc:
            if not retriable(exc) or step == RETRY_STEPS - 1:
                raise
        await asyncio.sleep(RETRY_SECONDS * (1 + random.random() * 0.1))
    raise AssertionError("unreachable")


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def can_ignore_pdb(pod: Obj) -> bool:
    """kube's canIgnorePDB: terminal, Pending or terminating pods are deleted without a PDB."""
    return _phase(pod) in ("Succeeded", "Failed", "Pending") or bool(
        pod["metadata"].get("deletionTimestamp")
    )


def should_enforce_resource_version(pod: Obj) -> bool:
    return _phase(pod) not in ("Succeeded", "Failed") and not pod["metadata"].get(
        "deletionTimestamp"
    )


def update_pod_condition(pod: Obj, condition: Obj) -> bool:
    """podutil.UpdatePodCondition: the condition set, lastTransitionTime kept while its status
    stays (PodCondition's field order; ``lastProbeTime`` is null, as Go writes a zero Time; an
    empty reason or message left out). Returns whether anything changed."""
    status = pod.setdefault("status", {})
    conditions: list[Obj] = status.setdefault("conditions", [])
    generation = int(pod["metadata"].get("generation") or 0)
    new: Obj = {"type": condition["type"]}
    if generation:  # PodObservedGenerationTracking (on since 1.34)
        new["observedGeneration"] = generation
    new["status"] = condition["status"]
    new["lastProbeTime"] = None
    new["lastTransitionTime"] = now()
    for field in ("reason", "message"):
        if condition.get(field):
            new[field] = condition[field]
    for index, old in enumerate(conditions):
        if old.get("type") == condition["type"]:
            if old.get("status") == new["status"]:
                new["lastTransitionTime"] = old.get("lastTransitionTime")
            changed = any(
                old.get(f) != new.get(f)
                for f in ("status", "reason", "message", "lastProbeTime", "lastTransitionTime")
            )
            conditions[index] = new
            return changed
    conditions.append(new)
    return True


def _decode_eviction(body: Obj) -> None:
    """What kube's decoder refuses before the storage sees the body."""
    version = str(body.get("apiVersion") or "policy/v1")
    kind = str(body.get("kind") or "Eviction")
    if kind != "Eviction" or version not in ACCEPTED_VERSIONS:
        raise errors.bad_request(
            f'no kind "{kind}" is registered for version "{version}" in scheme '
            '"pkg/api/legacyscheme/scheme.go:30"'
        )


def _go_list(values: list[str]) -> str:
    return "[" + " ".join(values) + "]"


def propagate_dry_run(body: Obj, request_dry_run: bool) -> Obj:
    """kube's propagateDryRun: the Eviction's deleteOptions, with the request's dryRun when
    they have none; a 500 when both name different ones."""
    requested = ["All"] if request_dry_run else []
    options = body.get("deleteOptions")
    if options is None:
        return {"dryRun": requested} if requested else {}
    if not isinstance(options, dict):
        raise errors.bad_request("deleteOptions must be a JSON object")
    sent = options.get("dryRun") or []
    if not sent:
        return {**options, "dryRun": requested} if requested else dict(options)
    if requested and list(sent) != requested:
        raise errors.internal(
            "Non-matching dry-run options in request and content: "
            f"{_go_list(requested)} and {_go_list([str(v) for v in sent])}"
        )
    return dict(options)


class EvictionREST:
    """``pods/<name>/eviction``: a create-only subresource answering a Status (201)."""

    object_info = None

    def __init__(
        self,
        pods: GenericStore,
        info: ResourceInfo,
        pdbs: GenericStore,
    ) -> None:
        self.pods = pods
        self.info = info
        self.pdbs = pdbs
        self._status_strategy = pods.strategy.status_strategy()

    async def create_named(self, ctx: Context, name: str, body: Obj, opts: WriteOptions) -> Obj:
        _decode_eviction(body)
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        if meta.get("namespace") and ctx.namespace and meta["namespace"] != ctx.namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        # kube's create handler: mutating admission, then the storage's checks, then
        # validating admission (its createValidation)
        attrs = Attributes(
            CREATE, self.pods.info, ctx.namespace, name, body, None, ctx.user, "eviction",
            opts.dry_run, ctx.request, opts.warnings, ctx.audit_annotations, opts.field_manager,
        )  # fmt: skip
        admission = self.pods.backing.admission
        if admission.mutating:
            await admission.admit(attrs)
        if (body.get("metadata") or {}).get("name") != name:
            raise errors.bad_request("name in URL does not match name in Eviction object")
        sent = propagate_dry_run(body, opts.dry_run)
        original = deletion.options_from(sent, {}, False)
        if admission.validating:
            await admission.validate(attrs)

        rv_unset = not original.precondition_resource_version
        holder: list[Obj] = []

        async def direct() -> bool:
            pod = await self.pods.get(ctx, name, GetOptions())
            holder[:] = [pod]
            if not can_ignore_pdb(pod):
                return False
            options = original
            if should_enforce_resource_version(pod) and rv_unset:
                options = options._replace(
                    precondition_resource_version=str(pod["metadata"]["resourceVersion"])
                )
            await self._condition_and_delete(ctx, name, options, opts)
            return True

        if await retry_on(is_conflict if rv_unset else (lambda _: False), direct):
            return _success()
        pod = holder[0]

        pdbs = await self._covering(pod)
        if len(pdbs) > 1:
            raise errors.internal(MORE_THAN_ONE)
        options = original
        enforce = False
        if pdbs:
            pdb = pdbs[0]
            if not is_pod_ready(pod) and _unhealthy_may_go(pdb):
                enforce = True
            else:
                await self._check_and_decrement(pod, pdb, original.dry_run)
        if enforce:
            options = options._replace(
                precondition_resource_version=str(pod["metadata"]["resourceVersion"])
            )
        try:
            await self._condition_and_delete(ctx, name, options, opts)
        except errors.APIError as exc:
            if exc.code == 409 and enforce and rv_unset:
                raise still_processing(pdbs[0]["metadata"]["name"]) from None
            raise
        return _success()

    # -- the budget -------------------------------------------------------------------------------

    async def _covering(self, pod: Obj) -> list[Obj]:
        """kube's getPodDisruptionBudgets: the PDBs of the pod's namespace whose selector (not
        empty, valid) matches its labels."""
        store = self.pdbs
        namespace = pod["metadata"].get("namespace")
        listing = await collect(store.list(Context(namespace), ListOptions()))
        labels = pod["metadata"].get("labels") or {}
        found = []
        for pdb in listing["items"]:
            selector = (pdb.get("spec") or {}).get("selector")
            if not isinstance(selector, dict):
                continue  # nil: matches nothing
            try:
                parsed = label_selector_of(selector)
            except SelectorError:
                continue
            if parsed.empty or not parsed.matches(labels):
                continue
            found.append(pdb)
        return found

    async def _check_and_decrement(self, pod: Obj, pdb: Obj, dry_run: bool) -> None:
        store = self.pdbs
        namespace = pod["metadata"].get("namespace")
        pdb_name = pdb["metadata"]["name"]
        pod_name = pod["metadata"]["name"]
        current = [pdb]

        async def attempt() -> None:
            try:
                await self._decrement(store, namespace, pod_name, current[0], dry_run)
            except errors.APIError as exc:
                if is_conflict(exc):  # the next try reads it again
                    current[0] = await store.get(Context(namespace), pdb_name, GetOptions())
                raise

        await retry_on(is_conflict, attempt)

    async def _decrement(
        self, store: GenericStore, namespace: str | None, pod_name: str, pdb: Obj, dry_run: bool
    ) -> None:
        """kube's checkAndDecrement."""
        name = pdb["metadata"]["name"]
        status = dict(pdb.get("status") or {})
        if int(status.get("observedGeneration") or 0) < int(pdb["metadata"].get("generation") or 0):
            raise still_processing(name)
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise errors.forbidden(
                "poddisruptionbudget", "policy", name, "pdb disruptions allowed is negative"
            )
        if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
            raise errors.forbidden(
                "poddisruptionbudget", "policy", name,
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            )  # fmt: skip
        if allowed == 0:
            raise too_many_requests(
                f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} "
                f"healthy pods and has {int(status.get('currentHealthy') or 0)} currently"
            )
        if dry_run:
            return
        updated = {**pdb, "apiVersion": "policy/v1", "kind": "PodDisruptionBudget"}
        updated["status"] = status
        status["disruptionsAllowed"] = allowed - 1
        if allowed - 1 == 0:
            status["conditions"] = [dict(c) for c in status.get("conditions") or []]
            update_disruption_allowed_condition(status)
        status["disruptedPods"] = {**(status.get("disruptedPods") or {}), pod_name: now()}
        put = updates.put(store.info, namespace, name, updated)
        await store.update(
            Context(namespace), name, put, WriteOptions(field_manager=SERVER_MANAGER),
            strategy=store.strategy.status_strategy(), subresource="status",
        )  # fmt: skip

    # -- the delete -------------------------------------------------------------------------------

    async def _condition_and_delete(
        self, ctx: Context, name: str, options: DeleteOptions, opts: WriteOptions
    ) -> None:
        """kube's addConditionAndDeletePod."""
        if not options.dry_run:

            def change(pod: Obj) -> None:
                meta = pod["metadata"]
                deletion.check_preconditions(self.pods.info, pod, options)
                update_pod_condition(pod, DISRUPTION_TARGET)
                meta.pop("resourceVersion", None)

            update = updates.mutation(self.pods.info, name, change)
            # kube updates through the store, below the handlers' field manager: the condition
            # is recorded in no managedFields entry (``apply`` is what skips the tracking here)
            untracked = WriteOptions(field_manager=opts.field_manager, apply=True)
            written, _ = await self.pods.update(
                ctx, name, update, untracked, strategy=self._status_strategy, subresource="status"
            )
            if options.precondition_resource_version:
                options = options._replace(
                    precondition_resource_version=str(written["metadata"]["resourceVersion"])
                )
        await self.pods.delete(ctx, name, options)


def _unhealthy_may_go(pdb: Obj) -> bool:
    """An unready pod evicted without spending the budget: ``AlwaysAllow``, or the default
    ``IfHealthyBudget`` while the budget is healthy."""
    spec = pdb.get("spec") or {}
    if spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = pdb.get("status") or {}
    current = int(status.get("currentHealthy") or 0)
    desired = int(status.get("desiredHealthy") or 0)
    return current >= desired and desired > 0


def _success() -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
