"""A Job's policies, as pkg/apis/batch/validation/validation.go checks them in validateJobSpec:
``managedBy`` (IsDomainPrefixedPath, at most 63 bytes), the Indexed limits on parallelism and
``maxFailedIndexes``, ``podFailurePolicy`` (validatePodFailurePolicy and its rules),
``successPolicy`` (validateSuccessPolicy, Indexed Jobs only) and ``podReplacementPolicy``
(validatePodReplacementPolicy). Their immutability on update is batch.py's."""

from __future__ import annotations

import re
from typing import Any

from kubelite.api.errors import Cause, go_quote
from kubelite.api.kinds.validation.fields import (
    Obj,
    Struct,
    Typed,
    as_dict,
    as_list,
    as_str,
    invalid,
    nonnegative,
    not_supported,
    required,
    too_many,
)
from kubelite.api.machinery.metavalidation import (
    qualified_name_errors,
    regex_error,
    subdomain_errors,
)

__all__ = ["indexed_limit_causes", "managed_by_causes", "policy_causes"]

_MAX_PARALLELISM_INDEXED = 100_000
_MAX_FAILED_INDEXES = 100_000
_COMPLETIONS_SOFT_LIMIT = 100_000
_PARALLELISM_HIGH_COMPLETIONS = 10_000
_MAX_FAILED_HIGH_COMPLETIONS = 10_000
_MAX_RULES = 20
_MAX_EXIT_CODES = 255
_MAX_CONDITION_PATTERNS = 20
_MAX_MANAGED_BY = 63
_MAX_SUCCEEDED_INDEXES = 64 * 1024
_MAX_SUCCESS_RULES = 20

_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]
_OPERATORS = ["In", "NotIn"]
_STATUSES = ["False", "True", "Unknown"]
_REPLACEMENT = ["Failed", "TerminatingOrFailed"]

_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_HTTP_PATH = re.compile(_HTTP_PATH_FMT)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _valid_values(values: list[str]) -> str:
    """``fmt.Sprintf("valid values: %q", values)`` for a Go slice of strings."""
    return "valid values: [" + " ".join(go_quote(v) for v in values) + "]"


def _omit(path: str, detail: str) -> Cause:
    """field.Invalid with ``field.OmitValueType{}``: no value printed."""
    return Cause("FieldValueInvalid", f"Invalid value: {detail}", path)


def managed_by_causes(spec: Obj, path: str) -> list[Cause]:
    """``spec.managedBy``: IsDomainPrefixedPath, then at most 63 bytes."""
    value = spec.get("managedBy")
    if not isinstance(value, str):
        return []
    at = f"{path}.managedBy"
    causes: list[Cause] = []
    host, slash, rest = value.partition("/")
    if not value:
        causes.append(required(at))
    elif not slash or not host or not rest:
        causes.append(invalid(at, value, 'must be a domain-prefixed path (such as "acme.io/foo")'))
    else:
        causes += [invalid(at, host, message) for message in subdomain_errors(host)]
        if not _HTTP_PATH.fullmatch(rest):
            causes.append(invalid(at, rest, regex_error("Invalid path", _HTTP_PATH_FMT)))
    if len(value.encode()) > _MAX_MANAGED_BY:
        causes.append(
            Cause(
                "FieldValueTooLong", f"Too long: may not be more than {_MAX_MANAGED_BY} bytes", at
            )
        )
    return causes


def indexed_limit_causes(spec: Obj, path: str) -> list[Cause]:
    """An Indexed Job's limits on parallelism and maxFailedIndexes (validateJobSpec)."""
    causes: list[Cause] = []
    parallelism, completions = _int(spec.get("parallelism")), _int(spec.get("completions"))
    max_failed = _int(spec.get("maxFailedIndexes"))
    if parallelism is not None and parallelism > _MAX_PARALLELISM_INDEXED:
        causes.append(
            invalid(
                f"{path}.parallelism",
                parallelism,
                f"must be less than or equal to {_MAX_PARALLELISM_INDEXED} when completion mode "
                "is Indexed",
            )
        )
    if completions is not None and max_failed is not None and max_failed > completions:
        causes.append(
            invalid(
                f"{path}.maxFailedIndexes", max_failed, "must be less than or equal to completions"
            )
        )
    if max_failed is not None and max_failed > _MAX_FAILED_INDEXES:
        causes.append(
            invalid(
                f"{path}.maxFailedIndexes",
                max_failed,
                f"must be less than or equal to {_MAX_FAILED_INDEXES}",
            )
        )
    if (
        completions is not None
        and completions > _COMPLETIONS_SOFT_LIMIT
        and spec.get("backoffLimitPerIndex") is not None
    ):
        high = (
            f"when completions are above {_COMPLETIONS_SOFT_LIMIT} and used with backoff limit "
            "per index"
        )
        if spec.get("maxFailedIndexes") is None:
            causes.append(
                required(
                    f"{path}.maxFailedIndexes",
                    f"must be specified when completions is above {_COMPLETIONS_SOFT_LIMIT}",
                )
            )
        if parallelism is not None and parallelism > _PARALLELISM_HIGH_COMPLETIONS:
            causes.append(
                invalid(
                    f"{path}.parallelism",
                    parallelism,
                    f"must be less than or equal to {_PARALLELISM_HIGH_COMPLETIONS} {high}",
                )
            )
        if max_failed is not None and max_failed > _MAX_FAILED_HIGH_COMPLETIONS:
            causes.append(
                invalid(
                    f"{path}.maxFailedIndexes",
                    max_failed,
                    f"must be less than or equal to {_MAX_FAILED_HIGH_COMPLETIONS} {high}",
                )
            )
    return causes


def policy_causes(spec: Obj, path: str, indexed: bool) -> list[Cause]:
    """podFailurePolicy, successPolicy and podReplacementPolicy, in validateJobSpec's order."""
    causes: list[Cause] = []
    failure = spec.get("podFailurePolicy")
    if isinstance(failure, dict):
        causes += _pod_failure_policy(spec, failure, f"{path}.podFailurePolicy")
    success = spec.get("successPolicy")
    if isinstance(success, dict):
        if not indexed:
            causes.append(
                invalid(
                    f"{path}.successPolicy",
                    _success_value(success),
                    "requires indexed completion mode",
                )
            )
        else:
            causes += _success_policy(spec, success, f"{path}.successPolicy")
    replacement = spec.get("podReplacementPolicy")
    if isinstance(replacement, str):
        at = f"{path}.podReplacementPolicy"
        if failure is not None:
            if replacement != "Failed":
                causes.append(not_supported(at, Typed(replacement), ["Failed"]))
        elif replacement not in _REPLACEMENT:
            causes.append(not_supported(at, Typed(replacement), _REPLACEMENT))
    return causes


def _success_value(policy: Obj) -> Struct:
    """A SuccessPolicy as Go marshals it: rules' succeededIndexes before succeededCount."""
    rules = []
    for item in as_list(policy.get("rules")):
        rule = as_dict(item)
        rules.append(
            Struct({k: rule[k] for k in ("succeededIndexes", "succeededCount") if k in rule})
        )
    return Struct({"rules": rules})


def _pod_failure_policy(spec: Obj, policy: Obj, path: str) -> list[Cause]:
    rules = as_list(policy.get("rules"))
    causes: list[Cause] = []
    if len(rules) > _MAX_RULES:
        causes.append(too_many(f"{path}.rules", len(rules), _MAX_RULES))
    pod = as_dict(as_dict(spec.get("template")).get("spec"))
    names = {
        as_str(as_dict(c).get("name"))
        for key in ("containers", "initContainers")
        for c in as_list(pod.get(key))
    }
    for index, rule in enumerate(rules):
        causes += _failure_rule(spec, as_dict(rule), f"{path}.rules[{index}]", names)
    return causes


def _failure_rule(spec: Obj, rule: Obj, path: str, names: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    action = as_str(rule.get("action"))
    at = f"{path}.action"
    if not action:
        causes.append(required(at, _valid_values(_ACTIONS)))
    elif action == "FailIndex":
        if spec.get("backoffLimitPerIndex") is None:
            causes.append(invalid(at, Typed(action), "requires the backoffLimitPerIndex to be set"))
    elif action not in _ACTIONS:
        causes.append(not_supported(at, Typed(action), _ACTIONS))
    exit_codes = rule.get("onExitCodes")
    conditions = as_list(rule.get("onPodConditions"))
    if isinstance(exit_codes, dict):
        causes += _on_exit_codes(exit_codes, f"{path}.onExitCodes", names)
    if conditions:
        causes += _on_pod_conditions(conditions, f"{path}.onPodConditions")
    if isinstance(exit_codes, dict) and conditions:
        causes.append(
            _omit(path, "specifying both OnExitCodes and OnPodConditions is not supported")
        )
    if not isinstance(exit_codes, dict) and not conditions:
        causes.append(_omit(path, "specifying one of OnExitCodes and OnPodConditions is required"))
    return causes


def _on_pod_conditions(patterns: list[Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    if len(patterns) > _MAX_CONDITION_PATTERNS:
        causes.append(too_many(path, len(patterns), _MAX_CONDITION_PATTERNS))
    for index, item in enumerate(patterns):
        pattern = as_dict(item)
        at = f"{path}[{index}]"
        kind = as_str(pattern.get("type"))
        causes += [invalid(f"{at}.type", kind, m) for m in qualified_name_errors(kind)]
        status = as_str(pattern.get("status"))
        if not status:
            causes.append(required(f"{at}.status", _valid_values(_STATUSES)))
        elif status not in _STATUSES:
            causes.append(not_supported(f"{at}.status", Typed(status), _STATUSES))
    return causes


def _on_exit_codes(requirement: Obj, path: str, names: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    operator = as_str(requirement.get("operator"))
    if not operator:
        causes.append(required(f"{path}.operator", _valid_values(_OPERATORS)))
    elif operator not in _OPERATORS:
        causes.append(not_supported(f"{path}.operator", Typed(operator), _OPERATORS))
    container = requirement.get("containerName")
    if isinstance(container, str) and container not in names:
        causes.append(
            invalid(
                f"{path}.containerName",
                container,
                "must be one of the container or initContainer names in the pod template",
            )
        )
    raw = requirement.get("values")
    values = [v for v in as_list(raw) if _int(v) is not None]
    at = f"{path}.values"
    if not values:
        causes.append(
            invalid(at, raw if isinstance(raw, list) else None, "at least one value is required")
        )
    elif len(values) > _MAX_EXIT_CODES:
        causes.append(too_many(at, len(values), _MAX_EXIT_CODES))
    seen: set[int] = set()
    ordered = True
    for index, value in enumerate(values):
        if operator == "In" and value == 0:
            causes.append(invalid(f"{at}[{index}]", value, "must not be 0 for the In operator"))
        if value in seen:
            causes.append(
                Cause("FieldValueDuplicate", f"Duplicate value: {value}", f"{at}[{index}]")
            )
        seen.add(value)
        if index and values[index - 1] > value:
            ordered = False
    if not ordered:
        causes.append(invalid(at, values, "must be ordered"))
    return causes


def _success_policy(spec: Obj, policy: Obj, path: str) -> list[Cause]:
    rules = as_list(policy.get("rules"))
    causes: list[Cause] = []
    if not rules:
        causes.append(
            required(
                f"{path}.rules",
                "at least one rules must be specified when the successPolicy is specified",
            )
        )
    if len(rules) > _MAX_SUCCESS_RULES:
        causes.append(too_many(f"{path}.rules", len(rules), _MAX_SUCCESS_RULES))
    completions = _int(spec.get("completions")) or 0
    for index, rule in enumerate(rules):
        causes += _success_rule(as_dict(rule), f"{path}.rules[{index}]", completions)
    return causes


def _success_rule(rule: Obj, path: str, completions: int) -> list[Cause]:
    causes: list[Cause] = []
    count, indexes = _int(rule.get("succeededCount")), rule.get("succeededIndexes")
    if count is None and indexes is None:
        causes.append(
            required(path, "at least one of succeededCount or succeededIndexes must be specified")
        )
    total = 0
    if isinstance(indexes, str):
        at = f"{path}.succeededIndexes"
        if len(indexes.encode()) > _MAX_SUCCEEDED_INDEXES:
            causes.append(
                Cause(
                    "FieldValueTooLong",
                    f"Too long: may not be more than {_MAX_SUCCEEDED_INDEXES} bytes",
                    at,
                )
            )
        try:
            total = indexes_total(indexes, completions)
        except ValueError as exc:
            causes.append(invalid(at, indexes, f"error parsing succeededIndexes: {exc}"))
    if count is not None:
        at = f"{path}.succeededCount"
        causes += nonnegative(count, at)
        if count > completions:
            causes.append(
                invalid(
                    at,
                    count,
                    f"must be less than or equal to {completions} (the number of specified "
                    "completions)",
                )
            )
        if indexes is not None and count > total:
            causes.append(
                invalid(
                    at,
                    count,
                    f"must be less than or equal to {total} (the number of indexes in the "
                    "specified succeededIndexes field)",
                )
            )
    return causes


def indexes_total(text: str, completions: int) -> int:
    """validateIndexesFormat: how many indexes ``"1,3-5,7"`` names; ValueError with kube's
    text for a bad one."""
    if not text:
        return 0
    last: int | None = None
    total = 0
    for interval in text.split(","):
        low, high = _interval(interval, completions)
        if last is not None and last >= low:
            raise ValueError(f"non-increasing order, previous: {last}, current: {low}")
        total += high - low + 1
        last = high
    return total


_ATOI = re.compile(r"[+-]?[0-9]+")


def _atoi(text: str) -> int:
    """strconv.Atoi's accepted forms; ValueError with kube's text otherwise."""
    if not _ATOI.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
        raise ValueError(f"cannot convert string to integer for index: {go_quote(text)}")
    return int(text)


def _interval(text: str, completions: int) -> tuple[int, int]:
    """parseIndexInterval."""
    limits = text.split("-")
    if len(limits) > 2:
        raise ValueError(
            f"the fragment {go_quote(text)} violates the requirement that an index interval can "
            "have at most two parts separated by '-'"
        )
    low = _atoi(limits[0])
    if low >= completions:
        raise ValueError(f"too large index: {go_quote(limits[0])}")
    if len(limits) == 1:
        return low, low
    high = _atoi(limits[1])
    if high >= completions:
        raise ValueError(f"too large index: {go_quote(limits[1])}")
    if low >= high:
        raise ValueError(f"non-increasing order, previous: {low}, current: {high}")
    return low, high
