"""Validation: Job and CronJob (pkg/apis/batch/validation), CronJob schedule syntax.

The schedule is parsed as kube-apiserver parses it, with robfig/cron v3's ``ParseStandard``
(five fields or an ``@`` descriptor), and its error texts become the ``Invalid value`` detail.
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Any

from kubelite.api.errors import Cause, go_quote
from kubelite.api.kinds.batch import jobpolicy
from kubelite.api.kinds.core.validation import pods
from kubelite.api.kinds.validation.fields import (
    IMMUTABLE,
    Obj,
    Typed,
    as_dict,
    as_str,
    invalid,
    label_causes,
    nonnegative,
    not_supported,
    required,
    selector_causes,
    selector_matches,
    selector_mismatch,
    selector_parses,
    selector_value,
)
from kubelite.api.machinery.names import label_errors

# -- robfig/cron v3 ParseStandard -------------------------------------------------------------

_BOUNDS = {
    "minute": (0, 59, {}),
    "hour": (0, 23, {}),
    "dom": (1, 31, {}),
    "month": (
        1,
        12,
        {
            m: i + 1
            for i, m in enumerate(
                ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
            )
        },
    ),
    "dow": (0, 6, {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}),
}
_DESCRIPTORS = {"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
_INT64 = 2**63


class CronError(ValueError):
    pass


def _atoi(expr: str) -> int:
    """strconv.Atoi with its error texts."""
    if not re.fullmatch(r"[+-]?[0-9]+", expr):
        raise CronError(f"strconv.Atoi: parsing {go_quote(expr)}: invalid syntax")
    num = int(expr)
    if not -_INT64 <= num < _INT64:
        raise CronError(f"strconv.Atoi: parsing {go_quote(expr)}: value out of range")
    return num


def _must_parse_int(expr: str) -> int:
    try:
        num = _atoi(expr)
    except CronError as err:
        raise CronError(f"failed to parse int from {expr}: {err}") from None
    if num < 0:
        raise CronError(f"negative number ({num}) not allowed: {expr}")
    return num


def _int_or_name(expr: str, names: dict[str, int]) -> int:
    if expr.lower() in names:
        return names[expr.lower()]
    return _must_parse_int(expr)


def _range(expr: str, low: int, high: int, names: dict[str, int]) -> None:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single = len(low_and_high) == 1
    if low_and_high[0] in ("*", "?"):
        start, end = low, high
    else:
        start = _int_or_name(low_and_high[0], names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if single:
            end = high
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < low:
        raise CronError(f"beginning of range ({start}) below minimum ({low}): {expr}")
    if end > high:
        raise CronError(f"end of range ({end}) above maximum ({high}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")


_DURATION_UNITS = ("ns", "us", "µs", "μs", "ms", "s", "m", "h")


def _parse_duration(text: str) -> None:
    """Go's time.ParseDuration, for its errors."""
    quoted = go_quote(text)
    rest = text
    if rest[:1] in "+-" and rest:
        rest = rest[1:]
    if rest == "0":
        return
    if not rest:
        raise CronError(f"time: invalid duration {quoted}")
    while rest:
        m = re.match(r"([0-9]*)(\.[0-9]*)?", rest)
        assert m is not None
        if not m.group(1) and (not m.group(2) or m.group(2) == "."):
            raise CronError(f"time: invalid duration {quoted}")
        rest = rest[m.end() :]
        u = re.match(r"[^0-9.]*", rest)
        assert u is not None
        unit = u.group(0)
        if not unit:
            raise CronError(f"time: missing unit in duration {quoted}")
        if unit not in _DURATION_UNITS:
            raise CronError(f"time: unknown unit {go_quote(unit)} in duration {quoted}")
        rest = rest[u.end() :]


def _load_location(name: str) -> None:
    if name in ("", "UTC"):
        return
    if name == "Local":
        return
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(f"unknown time zone {name}") from None


def parse_schedule(spec: str) -> None:
    """cron.ParseStandard (through kube's ParseCronScheduleWithPanicRecovery): raises
    :class:`CronError` with the text kube reports."""
    if not spec:
        raise CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        i, eq = spec.find(" "), spec.find("=")
        if i < 0:
            raise CronError(
                f"invalid schedule format: runtime error: slice bounds out of range [:{i}]"
            )
        if i < eq + 1:
            raise CronError(
                f"invalid schedule format: runtime error: slice bounds out of range [{eq + 1}:{i}]"
            )
        name = spec[eq + 1 : i]
        try:
            _load_location(name)
        except CronError as err:
            raise CronError(f"provided bad location {name}: {err}") from None
        spec = spec[i:].strip()
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return
        if spec.startswith("@every "):
            try:
                _parse_duration(spec[len("@every ") :])
            except CronError as err:
                raise CronError(f"failed to parse duration {spec}: {err}") from None
            return
        raise CronError(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for text, (low, high, names) in zip(fields, _BOUNDS.values(), strict=True):
        for expr in [e for e in text.split(",") if e]:
            _range(expr, low, high, names)


_TZ_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def _time_zone_causes(tz: Any, path: str) -> list[Cause]:
    """validateTimeZone."""
    if not isinstance(tz, str):
        return []
    if not tz:
        return [invalid(path, tz, "timeZone must be nil or non-empty string")]
    for part in tz.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_PART.fullmatch(part):
            return [invalid(path, tz, f"unknown time zone {tz}")]
    causes: list[Cause] = []
    if tz.lower() == "local":
        causes.append(
            invalid(
                path,
                tz,
                "timeZone must be an explicit time zone as defined in "
                "https://www.iana.org/time-zones",
            )
        )
    try:
        _load_location(tz)
    except CronError as err:
        causes.append(invalid(path, tz, str(err)))
    return causes


# -- Job --------------------------------------------------------------------------------------

_INDEXED, _NON_INDEXED = "Indexed", "NonIndexed"


def _job_spec_causes(spec: Obj, path: str) -> list[Cause]:
    """validateJobSpec: counts, completion mode, the pod template, restartPolicy."""
    causes: list[Cause] = []
    for name in (
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ):
        causes += nonnegative(spec.get(name), f"{path}.{name}")
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        causes.append(
            required(f"{path}.backoffLimitPerIndex", "when maxFailedIndexes is specified")
        )
    causes += jobpolicy.managed_by_causes(spec, path)
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in (_NON_INDEXED, _INDEXED):
            causes.append(
                not_supported(
                    f"{path}.completionMode", Typed(as_str(mode)), [_NON_INDEXED, _INDEXED]
                )
            )
        if mode == _INDEXED and spec.get("completions") is None:
            causes.append(required(f"{path}.completions", "when completion mode is Indexed"))
        if mode == _INDEXED:
            causes += jobpolicy.indexed_limit_causes(spec, path)
    if mode in (None, _NON_INDEXED):
        for name in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(name) is not None:
                causes.append(
                    invalid(f"{path}.{name}", spec[name], "requires indexed completion mode")
                )
    causes += jobpolicy.policy_causes(spec, path, mode == _INDEXED)
    template = as_dict(spec.get("template"))
    meta = as_dict(template.get("metadata"))
    causes += label_causes(meta.get("labels"), f"{path}.template.labels")
    causes += pods.pod_spec_causes(template.get("spec") or {}, f"{path}.template.spec")
    policy = as_str(as_dict(template.get("spec")).get("restartPolicy"))
    at = f"{path}.template.spec.restartPolicy"
    if policy in ("", "Always"):
        causes.append(required(at, 'valid values: "OnFailure", "Never"'))
    elif policy not in ("OnFailure", "Never"):
        causes.append(not_supported(at, Typed(policy), ["OnFailure", "Never"]))
    elif spec.get("podFailurePolicy") is not None and policy != "Never":
        causes.append(
            invalid(
                at, Typed(policy), 'only "Never" is supported when podFailurePolicy is specified'
            )
        )
    return causes


_LEGACY_UID, _LEGACY_NAME = "controller-uid", "job-name"
_UID_LABEL, _NAME_LABEL = "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"


def _generated_selector_causes(job: Obj) -> list[Cause]:
    """validateGeneratedSelector (RequirePrefixedLabels, as kube 1.27+)."""
    spec = as_dict(job.get("spec"))
    if spec.get("manualSelector") is True or not isinstance(spec.get("selector"), dict):
        return []
    meta = as_dict(job.get("metadata"))
    uid, name = as_str(meta.get("uid")), as_str(meta.get("name"))
    causes: list[Cause] = []
    if not uid:
        causes.append(required("metadata.uid"))
    labels = as_dict(as_dict(as_dict(spec.get("template")).get("metadata")).get("labels"))
    expected = {_LEGACY_UID: uid, _LEGACY_NAME: name, _UID_LABEL: uid, _NAME_LABEL: name}
    for key in (_LEGACY_UID, _LEGACY_NAME, _UID_LABEL, _NAME_LABEL):
        at = f"spec.template.metadata.labels[{key}]"
        if key not in labels:
            causes.append(required(at, f"must be '{expected[key]}'"))
        elif labels[key] != expected[key]:
            causes.append(invalid(at, labels, f"must be '{expected[key]}'"))
    selector = spec["selector"]
    if selector_parses(selector) and not selector_matches(selector, expected):
        causes.append(
            invalid("spec.selector", selector_value(selector), "`selector` not auto-generated")
        )
    return causes


def _job_selector_causes(spec: Obj) -> list[Cause]:
    """ValidateJobSpec beyond validateJobSpec: the selector and the template's labels."""
    selector = spec.get("selector")
    labels = as_dict(as_dict(spec.get("template")).get("metadata")).get("labels")
    if not isinstance(selector, dict):
        causes = [required("spec.selector")]
    else:
        causes = selector_causes(selector, "spec.selector")
    if not isinstance(selector, dict) or (
        selector_parses(selector) and not selector_matches(selector, labels)
    ):
        causes.append(selector_mismatch(labels))
    return causes


_SCHEDULING_FIELDS = ("nodeSelector", "tolerations", "affinity", "schedulingGates")


def _template_for_compare(template: Any, *, scheduling: bool) -> Any:
    if not scheduling or not isinstance(template, dict):
        return template
    out = dict(template)
    meta = dict(as_dict(out.get("metadata")))
    meta.pop("labels", None)
    meta.pop("annotations", None)
    out["metadata"] = meta
    pod = dict(as_dict(out.get("spec")))
    for name in _SCHEDULING_FIELDS:
        pod.pop(name, None)
    out["spec"] = pod
    return out


def _job_update_causes(new: Obj, old: Obj) -> list[Cause]:
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    causes: list[Cause] = []
    if spec.get("completionMode") != _INDEXED:
        if spec.get("completions") != old_spec.get("completions"):
            causes.append(invalid("spec.completions", spec.get("completions"), IMMUTABLE))
    elif (
        spec.get("completions") != old_spec.get("completions")
        and spec.get("completions") is not None
    ) and spec.get("completions") != spec.get("parallelism"):
        causes.append(
            invalid(
                "spec.completions",
                spec["completions"],
                "can only be modified in tandem with spec.parallelism",
            )
        )
    if selector_value(spec.get("selector")) != selector_value(old_spec.get("selector")):
        causes.append(invalid("spec.selector", _maybe_selector(spec.get("selector")), IMMUTABLE))
    # a suspended Job that never started may change its scheduling directives
    # (AllowMutableSchedulingDirectives); otherwise the template is immutable
    scheduling = bool(old_spec.get("suspend")) and not as_dict(old.get("status")).get("startTime")
    a = _template_for_compare(spec.get("template"), scheduling=scheduling)
    b = _template_for_compare(old_spec.get("template"), scheduling=scheduling)
    if a != b:
        causes.append(invalid("spec.template", spec.get("template"), IMMUTABLE))
    for name in (
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ):
        if spec.get(name) != old_spec.get(name):
            value = spec.get(name)
            causes.append(
                invalid(
                    f"spec.{name}", Typed(value) if isinstance(value, str) else value, IMMUTABLE
                )
            )
    return causes


def _maybe_selector(selector: Any) -> Any:
    return selector_value(selector) if isinstance(selector, dict) else None


def validate_job(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    causes = _generated_selector_causes(obj) if old is None else []
    causes += _job_spec_causes(spec, "spec")
    causes += _job_selector_causes(spec)
    if old is None:
        completions = spec.get("completions")
        if (
            spec.get("completionMode") == _INDEXED
            and isinstance(completions, int)
            and completions > 0
        ):
            name = as_str(as_dict(obj.get("metadata")).get("name"))
            hostname = f"{name}-{completions - 1}"
            if label_errors(hostname):
                causes.append(
                    invalid(
                        "metadata.name",
                        name,
                        f"will not able to create pod with invalid DNS label: {hostname}",
                    )
                )
    else:
        causes += _job_update_causes(obj, old)
    return causes


# -- CronJob ----------------------------------------------------------------------------------


def _schedule_causes(schedule: str, allow_tz: bool, tz: Any) -> list[Cause]:
    path = "spec.schedule"
    causes: list[Cause] = []
    try:
        parse_schedule(schedule)
    except CronError as err:
        causes.append(invalid(path, schedule, str(err)))
    if allow_tz and "TZ" in schedule and tz is not None:
        causes.append(
            invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule")
        )
    elif not allow_tz and "TZ" in schedule:
        causes.append(
            invalid(
                path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            )
        )
    return causes


_CRONJOB_NAME_MAX = 63 - 11


def validate_cronjob(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = as_dict(obj.get("spec"))
    old_spec = as_dict(old.get("spec")) if old is not None else None
    causes: list[Cause] = []
    schedule = as_str(spec.get("schedule"))
    if not schedule:
        causes.append(required("spec.schedule"))
    else:
        allow_tz = old_spec is not None and "TZ" in as_str(old_spec.get("schedule"))
        causes += _schedule_causes(schedule, allow_tz, spec.get("timeZone"))
    causes += nonnegative(spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds")
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        causes += _time_zone_causes(spec.get("timeZone"), "spec.timeZone")
    policy = as_str(spec.get("concurrencyPolicy")) or "Allow"
    if policy not in ("Allow", "Forbid", "Replace"):
        causes.append(
            not_supported("spec.concurrencyPolicy", Typed(policy), ["Allow", "Forbid", "Replace"])
        )
    job_spec = as_dict(as_dict(spec.get("jobTemplate")).get("spec"))
    causes += _job_spec_causes(job_spec, "spec.jobTemplate.spec")
    if isinstance(job_spec.get("selector"), dict):
        causes.append(
            invalid(
                "spec.jobTemplate.spec.selector",
                selector_value(job_spec["selector"]),
                "`selector` will be auto-generated",
            )
        )
    if job_spec.get("manualSelector") is True:
        causes.append(not_supported("spec.jobTemplate.spec.manualSelector", True, ["nil", "false"]))
    for name in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        causes += nonnegative(spec.get(name), f"spec.{name}")
    if old is None:
        name = as_str(as_dict(obj.get("metadata")).get("name"))
        if len(name) > _CRONJOB_NAME_MAX:
            causes.append(
                invalid(
                    "metadata.name", name, f"must be no more than {_CRONJOB_NAME_MAX} characters"
                )
            )
    return causes
