"""DELETE's rules, the same for every kind (kube-apiserver's ``rest.BeforeDelete`` and the
generic store's ``Delete``): DeleteOptions validated, preconditions checked with kube's texts,
the propagation policy turned into the ``orphan`` or ``foregroundDeletion`` finalizer, an object
marked as deleting, and the Status a removed object answers with.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding.stored import clone, now
from kubelite.api.errors import Cause
from kubelite.api.machinery.rest import FOREGROUND, ORPHAN, PROPAGATION_POLICIES, DeleteOptions
from kubelite.api.machinery.strategy import ORPHAN_DEPENDENTS, UNSUPPORTED

Obj = dict[str, Any]

#: The garbage collector's finalizers (metav1.FinalizerOrphanDependents, FinalizerDeleteDependents)
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
_GC_FINALIZERS = (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)


def options_from(body: Any, query: dict[str, str], dry_run: bool) -> DeleteOptions:
    """DeleteOptions from a request's body (JSON, may be empty) and query, validated as
    ValidateDeleteOptions does (422 ``DeleteOptions.meta.k8s.io "" is invalid``)."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise errors.bad_request("DeleteOptions must be a JSON object")
    policy = body.get("propagationPolicy", query.get("propagationPolicy"))
    orphan = body.get("orphanDependents")
    if orphan is None and "orphanDependents" in query:
        orphan = query["orphanDependents"].lower() in ("1", "t", "true")
    causes: list[Cause] = []
    if orphan is not None and policy is not None:
        causes.append(
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{policy}": orphanDependents and deletionPropagation cannot be '
                "both set",
                "propagationPolicy",
            )
        )
    if policy is not None and policy not in PROPAGATION_POLICIES:
        supported = ", ".join(f'"{p}"' for p in (*PROPAGATION_POLICIES, "nil"))
        causes.append(
            Cause(
                "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: {supported}',
                "propagationPolicy",
            )
        )
    if causes:
        raise errors.invalid("DeleteOptions", "meta.k8s.io", "", causes)
    pre = body.get("preconditions") or {}
    if not isinstance(pre, dict):
        raise errors.bad_request("DeleteOptions.preconditions must be a JSON object")
    body_dry_run = body.get("dryRun") or []
    options = DeleteOptions(
        dry_run=dry_run or "All" in body_dry_run,
        precondition_uid=str(pre.get("uid") or ""),
        precondition_resource_version=str(pre.get("resourceVersion") or ""),
        propagation_policy=policy,
        orphan_dependents=bool(orphan) if orphan is not None else None,
    )
    sent = _sent(options, body.get("gracePeriodSeconds", query.get("gracePeriodSeconds")))
    return options._replace(sent=sent, grace_period_seconds=sent.get("gracePeriodSeconds"))


def _sent(options: DeleteOptions, grace: Any) -> Obj:
    """The DeleteOptions' fields as the client set them (meta.k8s.io/v1, Go's field order), what
    kube's delete handler passes to admission."""
    sent: Obj = {}
    try:
        if grace is not None and not isinstance(grace, bool):
            sent["gracePeriodSeconds"] = int(grace)
    except ValueError:
        pass
    preconditions = {
        key: value
        for key, value in (
            ("uid", options.precondition_uid),
            ("resourceVersion", options.precondition_resource_version),
        )
        if value
    }
    if preconditions:
        sent["preconditions"] = preconditions
    if options.orphan_dependents is not None:
        sent["orphanDependents"] = options.orphan_dependents
    if options.propagation_policy is not None:
        sent["propagationPolicy"] = options.propagation_policy
    if options.dry_run:
        sent["dryRun"] = ["All"]
    return sent


def check_preconditions(info: ResourceInfo, obj: Obj, opts: DeleteOptions) -> None:
    """409 when the stored object is not the one the preconditions name (kube's texts, with the
    Kind, not the resource, as they do)."""
    meta = obj["metadata"]
    name = meta.get("name", "")
    uid = opts.precondition_uid
    if uid and uid != meta.get("uid"):
        raise errors.conflict(
            info.kind,
            info.group,
            name,
            f"the UID in the precondition ({uid}) does not match the UID in record "
            f"({meta.get('uid')}). The object might have been deleted and then recreated",
        )
    version = opts.precondition_resource_version
    if version and version != meta.get("resourceVersion"):
        raise errors.conflict(
            info.kind,
            info.group,
            name,
            f"the ResourceVersion in the precondition ({version}) does not match the "
            f"ResourceVersion in record ({meta.get('resourceVersion')}). The object might have "
            "been modified",
        )


def _should_orphan(default_policy: str, opts: DeleteOptions, finalizers: list[str]) -> bool:
    if opts.orphan_dependents is not None:
        return opts.orphan_dependents
    if opts.propagation_policy is not None:
        return opts.propagation_policy == ORPHAN
    for finalizer in finalizers:
        if finalizer in _GC_FINALIZERS:
            return finalizer == ORPHAN_FINALIZER
    return default_policy == ORPHAN_DEPENDENTS


def _should_delete_in_foreground(opts: DeleteOptions, finalizers: list[str]) -> bool:
    if opts.orphan_dependents is not None:
        return False
    if opts.propagation_policy is not None:
        return opts.propagation_policy == FOREGROUND
    for finalizer in finalizers:
        if finalizer in _GC_FINALIZERS:
            return finalizer == FOREGROUND_FINALIZER
    return False


def gc_finalizers(default_policy: str, opts: DeleteOptions, finalizers: list[str]) -> list[str]:
    """The object's finalizers once a DELETE's propagation policy is applied (kube's
    deletionFinalizersForGarbageCollection): both garbage-collector finalizers removed, the one
    the policy asks for appended (none for a kind whose policy is Unsupported); the list
    unchanged when it holds the same set."""
    kept = [f for f in finalizers if f not in _GC_FINALIZERS]
    if default_policy != UNSUPPORTED:  # a kind the collector ignores gets neither
        if _should_orphan(default_policy, opts, finalizers):
            kept.append(ORPHAN_FINALIZER)
        if _should_delete_in_foreground(opts, finalizers):
            kept.append(FOREGROUND_FINALIZER)
    return finalizers if set(kept) == set(finalizers) else kept


def mark_deleting(obj: Obj) -> None:
    """An object kept by finalizers, marked as being deleted (kube's markAsDeleting with a grace
    period of 0): deletionTimestamp now, and generation moved once when it is tracked."""
    meta = obj["metadata"]
    if meta.get("deletionTimestamp"):
        return
    meta["deletionTimestamp"] = now()
    meta["deletionGracePeriodSeconds"] = 0
    if int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1


def graceful_deletion(obj: Obj, opts: DeleteOptions, period: int | None) -> Obj | None:
    """What a graceful DELETE makes of ``obj`` (kube's ``rest.BeforeDelete``,
    k8s.io/apiserver pkg/registry/rest/delete.go) for a kind whose strategy deletes gracefully
    and chose ``period`` (its CheckGracefulDelete; None: not graceful). Returns the object marked
    (``deletionTimestamp`` now + period, ``deletionGracePeriodSeconds``, generation moved once),
    ``obj`` itself when a graceful deletion is pending and the request does not shorten it
    (nothing to write), or None when the deletion is not graceful (delete now, or mark for the
    finalizers). A deletion already marked with grace 0 (or none) is not graceful."""
    meta = obj["metadata"]
    requested = opts.grace_period_seconds
    if requested is not None and requested < 0:
        requested = 1
    if meta.get("deletionTimestamp"):
        current = meta.get("deletionGracePeriodSeconds")
        if current is not None and current < 0:
            current = 1
        if not current:
            return None
        if requested is None or requested >= current:
            return obj
        marked = clone(obj)
        began = parse_time(meta["deletionTimestamp"]) - timedelta(seconds=current)
        marked["metadata"]["deletionTimestamp"] = format_time(began + timedelta(seconds=requested))
        marked["metadata"]["deletionGracePeriodSeconds"] = requested
        return marked
    if period is None:
        return None
    marked = clone(obj)
    mmeta = marked["metadata"]
    stamp = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=period)
    mmeta["deletionTimestamp"] = format_time(stamp)
    mmeta["deletionGracePeriodSeconds"] = period
    if int(mmeta.get("generation") or 0) > 0:
        mmeta["generation"] = int(mmeta["generation"]) + 1
    return marked


def parse_time(text: str) -> datetime:
    """An RFC 3339 timestamp (``2026-01-02T03:04:05Z``) as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def format_time(when: datetime) -> str:
    """``when`` as Kubernetes writes a metav1.Time (RFC 3339, seconds, UTC)."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def success_status(info: ResourceInfo, obj: Obj) -> Obj:
    """The Status a DELETE answers once the object is gone (details name the resource)."""
    meta = obj["metadata"]
    details: dict[str, Any] = {"name": meta.get("name", "")}
    if info.group:
        details["group"] = info.group
    details["kind"] = info.plural
    details["uid"] = meta.get("uid", "")
    return errors.success_body(details=details)
