"""The batch group (kube's ``pkg/registry/batch``): Jobs (:mod:`.jobs`) and CronJobs, with the
group's defaults (:mod:`.defaults`), validation (:mod:`.validation`) and the Job's pod failure
and success policies (:mod:`.jobpolicy`)."""

from __future__ import annotations

from kubelite.api.kinds.batch import jobs
from kubelite.api.kinds.batch.defaults import default_cron_job
from kubelite.api.kinds.batch.validation import validate_cronjob
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy

RESOURCES: tuple[Resource, ...] = (
    jobs.RESOURCE,
    Resource(
        "batch",
        "cronjobs",
        BuiltinStrategy(
            defaulters=(default_cron_job,), validators=(validate_cronjob,), tracks_generation=True
        ),
    ),
)
