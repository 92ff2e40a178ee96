"""The apps group (kube's ``pkg/registry/apps``): Deployments (:mod:`.deployments`), and
ReplicaSets, StatefulSets and DaemonSets, which differ from the default strategy only in
tracking a generation and in their rules; defaults (:mod:`.defaults`: pkg/apis/apps/v1) and
validation (:mod:`.validation`: pkg/apis/apps/validation) for all of them, and for the core
group's ReplicationController."""

from __future__ import annotations

from kubelite.api.kinds.apps import deployments
from kubelite.api.kinds.apps.defaults import (
    default_daemon_set,
    default_replica_set,
    default_stateful_set,
)
from kubelite.api.kinds.apps.validation import (
    validate_daemonset,
    validate_replicaset,
    validate_statefulset,
)
from kubelite.api.kinds.resource import Resource
from kubelite.api.kinds.rules import BuiltinStrategy, Defaulter, Validator


def _workload(plural: str, defaulter: Defaulter, validator: Validator) -> Resource:
    return Resource(
        "apps",
        plural,
        BuiltinStrategy(
            defaulters=(defaulter,),
            validators=(validator,),
            tracks_generation=True,
        ),
    )


RESOURCES: tuple[Resource, ...] = (
    deployments.RESOURCE,
    _workload("replicasets", default_replica_set, validate_replicaset),
    _workload("statefulsets", default_stateful_set, validate_statefulset),
    _workload("daemonsets", default_daemon_set, validate_daemonset),
)
