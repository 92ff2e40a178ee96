"""Defaults: apps/v1: Deployment, ReplicaSet, StatefulSet, DaemonSet
(pkg/apis/apps/v1/defaults.go), and the core ReplicationController
(SetDefaults_ReplicationController and its ``+default=1`` replicas); every pod template through
:mod:`kubelite.api.kinds.core.poddefaults`."""

from __future__ import annotations

import copy

from kubelite.api.kinds.core.poddefaults import (
    default_claim_spec,
    default_template,
    ensure,
    items,
    set_if_empty,
    set_if_nil,
    sub,
)
from kubelite.api.kinds.rules import Obj


def default_deployment(obj: Obj) -> None:
    """SetDefaults_Deployment."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    set_if_nil(spec, "replicas", 1)
    strategy = ensure(spec, "strategy")
    if strategy is not None:
        set_if_empty(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = ensure(strategy, "rollingUpdate")
            if rolling is not None:
                set_if_nil(rolling, "maxUnavailable", "25%")
                set_if_nil(rolling, "maxSurge", "25%")
    set_if_nil(spec, "revisionHistoryLimit", 10)
    set_if_nil(spec, "progressDeadlineSeconds", 600)
    default_template(sub(spec, "template"))


def default_replica_set(obj: Obj) -> None:
    """SetDefaults_ReplicaSet."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    set_if_nil(spec, "replicas", 1)
    default_template(sub(spec, "template"))


def default_daemon_set(obj: Obj) -> None:
    """SetDefaults_DaemonSet."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    strategy = ensure(spec, "updateStrategy")
    if strategy is not None:
        set_if_empty(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = ensure(strategy, "rollingUpdate")
            if rolling is not None:
                set_if_nil(rolling, "maxUnavailable", 1)
                set_if_nil(rolling, "maxSurge", 0)
    set_if_nil(spec, "revisionHistoryLimit", 10)
    default_template(sub(spec, "template"))


def default_stateful_set(obj: Obj) -> None:
    """SetDefaults_StatefulSet (StatefulSetAutoDeletePVC is GA: the retention policy), and the
    volume claim templates as PersistentVolumeClaims (spec and status)."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    set_if_empty(spec, "podManagementPolicy", "OrderedReady")
    strategy = ensure(spec, "updateStrategy")
    if strategy is not None:
        if strategy.get("type") in (None, ""):
            strategy["type"] = "RollingUpdate"
            set_if_nil(strategy, "rollingUpdate", {})
        rolling = sub(strategy, "rollingUpdate")
        if strategy["type"] == "RollingUpdate" and rolling is not None:
            set_if_nil(rolling, "partition", 0)
    retention = ensure(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        set_if_empty(retention, "whenDeleted", "Retain")
        set_if_empty(retention, "whenScaled", "Retain")
    set_if_nil(spec, "replicas", 1)
    set_if_nil(spec, "revisionHistoryLimit", 10)
    default_template(sub(spec, "template"))
    for claim in items(spec, "volumeClaimTemplates"):
        default_claim_spec(ensure(claim, "spec"))
        status = ensure(claim, "status")
        if status is not None:
            set_if_empty(status, "phase", "Pending")


def default_replication_controller(obj: Obj) -> None:
    """SetDefaults_ReplicationController: selector and labels from the template's labels when
    empty, replicas 1 (declarative), the template's pod spec."""
    spec = ensure(obj, "spec")
    if spec is None:
        return
    template = sub(spec, "template")
    labels = (sub(template, "metadata") or {}).get("labels")
    if isinstance(labels, dict):
        if not spec.get("selector"):
            spec["selector"] = copy.deepcopy(labels)
        meta = obj.get("metadata")
        if isinstance(meta, dict) and not meta.get("labels"):
            meta["labels"] = copy.deepcopy(labels)
    set_if_nil(spec, "replicas", 1)
    default_template(template)
