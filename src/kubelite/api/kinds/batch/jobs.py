"""Jobs (kube's pkg/registry/batch/job)."""

from __future__ import annotations

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.kinds.batch.defaults import default_job
from kubelite.api.kinds.batch.validation import validate_job
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.machinery.strategy import ORPHAN_DEPENDENTS


class JobStrategy(BuiltinStrategy):
    """Jobs: deleting one at batch/v1 orphans its pods unless the request says otherwise."""

    defaulters = (default_job,)
    validators = (validate_job,)

    def __init__(self) -> None:
        super().__init__(tracks_generation=True)

    def default_gc_policy(self, info: ResourceInfo) -> str:
        if info.version == "v1":
            return ORPHAN_DEPENDENTS
        return super().default_gc_policy(info)


RESOURCE = Resource("batch", "jobs", JobStrategy())
