"""A Job's ``podFailurePolicy`` applied to a failed pod (pkg/controller/job/pod_failure_policy.go's
``matchPodFailurePolicy``): the first rule that matches says what the failure does.

A rule matches on ``onExitCodes`` (a container, or init container, that terminated with a
non-zero exit code ``In`` / ``NotIn`` the values, of the named container if one is named) or on
``onPodConditions`` (a pod condition of that type and status). Its action:

- ``FailJob``: the Job fails (``FailureTarget`` then ``Failed``, reason ``PodFailurePolicy``)
  with kube's message, ``Container <c> for pod <ns>/<pod> failed with exit code <n> matching
  FailJob rule at index <i>`` or ``Pod <ns>/<pod> has condition <type> matching FailJob rule at
  index <i>``;
- ``Ignore``: the failure does not count towards ``backoffLimit``;
- ``Count`` (or no rule matching): it counts, as without a policy;
- ``FailIndex`` needs ``backoffLimitPerIndex``, which this controller does not act on: it
  counts.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
FAIL_JOB, IGNORE, COUNT, FAIL_INDEX = "FailJob", "Ignore", "Count", "FailIndex"


def _matching_container(statuses: list[Obj], requirement: Obj) -> Obj | None:
    """``getMatchingContainerFromList``."""
    name = requirement.get("containerName")
    values = {int(v) for v in requirement.get("values") or []}
    for status in statuses:
        terminated = (status.get("state") or {}).get("terminated")
        if not terminated:
            continue
        code = int(terminated.get("exitCode") or 0)
        if code == 0 or (name is not None and name != status.get("name")):
            continue
        if (code in values) == (requirement.get("operator") == "In"):
            return status
    return None


def _matching_condition(pod: Obj, patterns: list[Obj]) -> Obj | None:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        for pattern in patterns:
            if condition.get("type") == pattern.get("type") and condition.get(
                "status"
            ) == pattern.get("status", "True"):
                return dict(condition)
    return None


def match(policy: Obj | None, pod: Obj) -> tuple[str | None, bool, str | None]:
    """``matchPodFailurePolicy``: (the Job's failure message, whether the failure counts, the
    action of the rule that matched)."""
    if not policy:
        return None, True, None
    status = pod.get("status") or {}
    meta = pod["metadata"]
    where = f"{meta.get('namespace', '')}/{meta['name']}"
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        if rule.get("onExitCodes") is not None:
            found = _matching_container(
                list(status.get("containerStatuses") or []), rule["onExitCodes"]
            ) or _matching_container(
                list(status.get("initContainerStatuses") or []), rule["onExitCodes"]
            )
            if found is None:
                continue
            code = found["state"]["terminated"].get("exitCode")
            message = (
                f"Container {found.get('name')} for pod {where} failed with exit code {code} "
                f"matching {action} rule at index {index}"
            )
        elif rule.get("onPodConditions") is not None:
            condition = _matching_condition(pod, list(rule["onPodConditions"]))
            if condition is None:
                continue
            message = (
                f"Pod {where} has condition {condition.get('type')} matching {action} rule at "
                f"index {index}"
            )
        else:
            continue
        if action == IGNORE:
            return None, False, IGNORE
        if action == COUNT:
            return None, True, COUNT
        if action == FAIL_JOB:
            return message, True, FAIL_JOB
        if action == FAIL_INDEX:
            return None, True, FAIL_INDEX
    return None, True, None
