"""Defaults: batch/v1: Job, CronJob (pkg/apis/batch/v1/defaults.go), plus the selector and
pod labels the Job strategy generates (pkg/registry/batch/job/strategy.go, generateSelector);
pod templates through :mod:`kubelite.api.kinds.core.poddefaults`."""

from __future__ import annotations

import copy

from kubelite.api.kinds.core.poddefaults import (
    default_template,
    ensure,
    items,
    set_if_empty,
    set_if_nil,
    sub,
)
from kubelite.api.kinds.rules import Obj

MAX_INT32 = 2**31 - 1
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
SELECTOR_LABEL = "batch.kubernetes.io/controller-uid"


def _default_pod_failure_policy(spec: Obj) -> None:
    """SetDefaults_PodFailurePolicyOnPodConditionsPattern: a pattern's status is True."""
    for rule in items(sub(spec, "podFailurePolicy"), "rules"):
        for pattern in items(rule, "onPodConditions"):
            set_if_empty(pattern, "status", "True")


def default_job_spec_nested(spec: Obj) -> None:
    """What a JobSpec gets wherever it is (a Job, a CronJob's job template)."""
    _default_pod_failure_policy(spec)
    default_template(sub(spec, "template"))


def default_job(obj: Obj) -> None:
    """SetDefaults_Job, then the Job strategy's generated selector and labels (when
    ``manualSelector`` is not true), then (as a read of the stored Job shows) the Job's labels
    from its template's when it has none."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = spec["parallelism"] = 1
    set_if_nil(spec, "parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    set_if_nil(spec, "completionMode", "NonIndexed")
    set_if_nil(spec, "suspend", False)
    if spec.get("podReplacementPolicy") is None:
        failure_policy = spec.get("podFailurePolicy") is not None
        spec["podReplacementPolicy"] = "Failed" if failure_policy else "TerminatingOrFailed"
    set_if_nil(spec, "manualSelector", False)
    default_job_spec_nested(spec)
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    if spec["manualSelector"] is not True:
        _generate_selector(meta, spec)
    labels = (sub(sub(spec, "template"), "metadata") or {}).get("labels")
    if isinstance(labels, dict) and not meta.get("labels"):
        meta["labels"] = copy.deepcopy(labels)


def _generate_selector(meta: Obj, spec: Obj) -> None:
    """generateSelector: the template labeled with the Job's name and uid (labels already there
    are kept, validation judges them), the selector matching the uid."""
    uid, name = meta.get("uid"), meta.get("name")
    if not isinstance(uid, str) or not uid:
        return
    template_meta = ensure(ensure(spec, "template"), "metadata")
    labels = ensure(template_meta, "labels")
    selector = ensure(spec, "selector")
    match = ensure(selector, "matchLabels")
    if labels is None or match is None:
        return
    if isinstance(name, str) and name:
        for key in JOB_NAME_LABELS:
            labels.setdefault(key, name)
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, uid)
    match.setdefault(SELECTOR_LABEL, uid)


def default_cron_job(obj: Obj) -> None:
    """SetDefaults_CronJob, and the job template's pod failure policy and pod template (a job
    template's spec gets no SetDefaults_Job: that takes a Job)."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    set_if_empty(spec, "concurrencyPolicy", "Allow")
    set_if_nil(spec, "suspend", False)
    set_if_nil(spec, "successfulJobsHistoryLimit", 3)
    set_if_nil(spec, "failedJobsHistoryLimit", 1)
    job_spec = sub(sub(spec, "jobTemplate"), "spec")
    if job_spec is not None:
        default_job_spec_nested(job_spec)
