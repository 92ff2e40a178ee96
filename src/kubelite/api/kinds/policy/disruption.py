"""What kube's component-helpers/apps/poddisruptionbudget and pkg/api/v1/pod say about
budgets and pods, shared by the eviction subresource (kinds/core/evictions.py) and the
disruption controller: the ``DisruptionAllowed`` condition, and whether a pod is ready."""

from __future__ import annotations

from typing import Any

from kubelite.api.encoding.stored import now

Obj = dict[str, Any]

CONDITION = "DisruptionAllowed"
SUFFICIENT, INSUFFICIENT, SYNC_FAILED = "SufficientPods", "InsufficientPods", "SyncFailed"


def is_pod_ready(pod: Obj) -> bool:
    """podutil.IsPodReady: the Ready condition is True."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def set_status_condition(conditions: list[Obj], condition: Obj) -> None:
    """apimachinery's meta.SetStatusCondition (lastTransitionTime moves with the status)."""
    for existing in conditions:
        if existing.get("type") == condition["type"]:
            if existing.get("status") != condition["status"]:
                existing["status"] = condition["status"]
                existing["lastTransitionTime"] = now()
            existing["reason"] = condition["reason"]
            existing["message"] = condition.get("message", "")
            if condition.get("observedGeneration"):
                existing["observedGeneration"] = condition["observedGeneration"]
            else:
                existing.pop("observedGeneration", None)
            return
    added: Obj = {"type": condition["type"], "status": condition["status"]}
    if condition.get("observedGeneration"):
        added["observedGeneration"] = condition["observedGeneration"]
    added["lastTransitionTime"] = now()
    added["reason"] = condition["reason"]
    added["message"] = condition.get("message", "")
    conditions.append(added)


def update_disruption_allowed_condition(status: Obj) -> None:
    """component-helpers' UpdateDisruptionAllowedCondition: ``DisruptionAllowed`` True
    ``SufficientPods`` while disruptions are allowed, else False ``InsufficientPods``."""
    allowed = int(status.get("disruptionsAllowed") or 0) > 0
    conditions = status.setdefault("conditions", [])
    set_status_condition(
        conditions,
        {
            "type": CONDITION,
            "status": "True" if allowed else "False",
            "observedGeneration": int(status.get("observedGeneration") or 0),
            "reason": SUFFICIENT if allowed else INSUFFICIENT,
            "message": "",
        },
    )


def conditions_are_up_to_date(pdb: Obj) -> bool:
    """component-helpers' ConditionsAreUpToDate."""
    status = pdb.get("status") or {}
    found = next((c for c in status.get("conditions") or [] if c.get("type") == CONDITION), None)
    if found is None:
        return False
    if int(status.get("observedGeneration") or 0) != int(pdb["metadata"].get("generation") or 0):
        return False
    if int(status.get("disruptionsAllowed") or 0) > 0:
        return bool(found.get("status") == "True" and found.get("reason") == SUFFICIENT)
    return bool(found.get("status") == "False" and found.get("reason") == INSUFFICIENT)
