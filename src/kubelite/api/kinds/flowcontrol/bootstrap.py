"""API Priority and Fairness's configuration objects as every cluster has them, and kube-apiserver's
``priority-and-fairness-config-producer`` post-start hook that keeps them
(pkg/registry/flowcontrol/rest/storage_flowcontrol.go, pkg/registry/flowcontrol/ensurer).

The bootstrap configuration is k8s.io/apiserver's ``apis/flowcontrol/bootstrap`` collection that
kube 1.34+ uses by default (``bootstrap-v134``): the mandatory PriorityLevelConfigurations
``exempt`` and ``catch-all`` and FlowSchemas ``exempt`` (``system:masters``) and ``catch-all``;
the suggested levels ``system``, ``node-high``, ``leader-election``, ``workload-high``,
``event``, ``workload-low``, ``global-default`` and their twelve schemas. Each is annotated
``apf.kubernetes.io/autoupdate-spec: "true"``.

:func:`ensure_flowcontrol_bootstrap` runs at start and every minute after, as the hook does:
suggested objects first, then the mandatory ones, then the removal of unwanted ones.

- A missing object is created (mandatory or suggested).
- A mandatory object's spec is always put back to the bootstrap one; a suggested object's only
  while its annotation says ``true`` (or, without a boolean there, while its generation is 1:
  nobody changed it). The annotation is set to the value that applied.
- An object annotated ``true`` whose name is no longer a bootstrap one is deleted.

Writes are the server's own (manager ``api-priority-and-fairness-config-producer-v1``); an
update that meets a conflict is left for the next round, as kube does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError
from kubelite.api.kinds.flowcontrol.defaults import default_flow_schema, default_priority_level
from kubelite.api.machinery.registry import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]

GROUP = "flowcontrol.apiserver.k8s.io"
API_VERSION = f"{GROUP}/v1"
AUTOUPDATE = "apf.kubernetes.io/autoupdate-spec"
PRODUCER = "api-priority-and-fairness-config-producer-v1"
EVERY = ["*"]


def flow_schema_info(catalogue: Catalogue) -> ResourceInfo:
    return catalogue.require(GROUP, "v1", "flowschemas")


def priority_level_info(catalogue: Catalogue) -> ResourceInfo:
    return catalogue.require(GROUP, "v1", "prioritylevelconfigurations")


# -- the bootstrap objects -----------------------------------------------------------------------


def _meta(name: str) -> Obj:
    return {"name": name, "annotations": {AUTOUPDATE: "true"}}


def _level(name: str, shares: int, lendable: int, queuing: tuple[int, int] | None,
           borrowing: int | None = None) -> Obj:  # fmt: skip
    """A Limited level; ``queuing``: (queues, handSize), each with queueLengthLimit 50."""
    limited: Obj = {"nominalConcurrencyShares": shares, "lendablePercent": lendable}
    if borrowing is not None:
        limited["borrowingLimitPercent"] = borrowing
    if queuing is None:
        limited["limitResponse"] = {"type": "Reject"}
    else:
        queues, hand = queuing
        limited["limitResponse"] = {
            "type": "Queue",
            "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": 50},
        }
    return {
        "apiVersion": API_VERSION,
        "kind": "PriorityLevelConfiguration",
        "metadata": _meta(name),
        "spec": {"type": "Limited", "limited": limited},
    }


def _groups(*names: str) -> list[Obj]:
    return [{"kind": "Group", "group": {"name": n}} for n in names]


def _users(*names: str) -> list[Obj]:
    return [{"kind": "User", "user": {"name": n}} for n in names]


def _kube_system_accounts(*names: str) -> list[Obj]:
    return [
        {"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": n}}
        for n in names
    ]


def _resources(verbs: list[str], groups: list[str], resources: list[str],
               namespaces: list[str], cluster: bool) -> Obj:  # fmt: skip
    rule: Obj = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if cluster:
        rule["clusterScope"] = True
    rule["namespaces"] = namespaces
    return rule


def _urls(verbs: list[str], urls: list[str]) -> Obj:
    return {"verbs": verbs, "nonResourceURLs": urls}


#: every resource and every URL: the rules of most schemas
_ALL = {
    "resourceRules": [_resources(EVERY, EVERY, EVERY, EVERY, True)],
    "nonResourceRules": [_urls(EVERY, EVERY)],
}
_GET_CREATE_UPDATE = ["get", "create", "update"]


def _schema(name: str, level: str, precedence: int, method: str | None,
            subjects: list[Obj], rules: Obj) -> Obj:  # fmt: skip
    spec: Obj = {"priorityLevelConfiguration": {"name": level}, "matchingPrecedence": precedence}
    if method is not None:
        spec["distinguisherMethod"] = {"type": method}
    spec["rules"] = [{"subjects": subjects, **rules}]
    return {"apiVersion": API_VERSION, "kind": "FlowSchema", "metadata": _meta(name), "spec": spec}


def mandatory_levels() -> list[Obj]:
    exempt = {
        "apiVersion": API_VERSION,
        "kind": "PriorityLevelConfiguration",
        "metadata": _meta("exempt"),
        "spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}},
    }
    return [_level("catch-all", 5, 0, None), exempt]


def mandatory_schemas() -> list[Obj]:
    return [
        _schema("exempt", "exempt", 1, None, _groups("system:masters"), _ALL),
        _schema("catch-all", "catch-all", 10000, "ByUser",
                _groups("system:unauthenticated", "system:authenticated"), _ALL),
    ]  # fmt: skip


def suggested_levels() -> list[Obj]:
    return [
        _level("system", 40, 50, (64, 6)),
        _level("node-high", 60, 50, (64, 6)),
        _level("leader-election", 50, 80, (16, 4)),
        _level("workload-high", 40, 50, (128, 6)),
        _level("event", 5, 0, (31, 3), borrowing=100),
        _level("workload-low", 40, 75, (128, 6)),
        _level("global-default", 10, 50, (128, 6)),
    ]


def suggested_schemas() -> list[Obj]:
    nodes = _groups("system:nodes")
    leases = _resources(_GET_CREATE_UPDATE, ["coordination.k8s.io"], ["leases"], EVERY, False)
    everyone = _groups("system:unauthenticated", "system:authenticated")
    return [
        _schema("system-nodes", "system", 500, "ByUser", nodes, _ALL),
        _schema("events", "event", 450, "ByUser", _groups("system:authenticated"), {
            "resourceRules": [_resources(["create", "update", "patch", "delete"],
                                         ["", "events.k8s.io"], ["events"], EVERY, False)],
        }),
        _schema("system-node-high", "node-high", 400, "ByUser", nodes, {
            "resourceRules": [
                _resources(EVERY, [""], ["nodes", "nodes/status"], EVERY, True),
                _resources(EVERY, ["coordination.k8s.io"], ["leases"], EVERY, False),
            ],
        }),
        _schema("probes", "exempt", 2, None, everyone, {
            "nonResourceRules": [_urls(["get"], ["/healthz", "/readyz", "/livez"])],
        }),
        _schema("system-leader-election", "leader-election", 100, "ByUser",
                [*_users("system:kube-controller-manager", "system:kube-scheduler"),
                 *_kube_system_accounts("*")],
                {"resourceRules": [leases]}),
        _schema("workload-leader-election", "leader-election", 200, "ByUser",
                _kube_system_accounts("*"), {
            "resourceRules": [
                _resources(_GET_CREATE_UPDATE, [""], ["endpoints", "configmaps"], EVERY, False),
                leases,
            ],
        }),
        _schema("endpoint-controller", "workload-high", 150, "ByUser",
                [*_users("system:kube-controller-manager"), *_kube_system_accounts(
                    "endpoint-controller", "endpointslicemirroring-controller")],
                {"resourceRules": [
                    _resources(_GET_CREATE_UPDATE, [""], ["endpoints"], EVERY, False)]}),
        _schema("kube-controller-manager", "workload-high", 800, "ByNamespace",
                _users("system:kube-controller-manager"), _ALL),
        _schema("kube-scheduler", "workload-high", 800, "ByNamespace",
                _users("system:kube-scheduler"), _ALL),
        _schema("kube-system-service-accounts", "workload-high", 900, "ByNamespace",
                _kube_system_accounts("*"), _ALL),
        _schema("service-accounts", "workload-low", 9000, "ByUser",
                _groups("system:serviceaccounts"), _ALL),
        _schema("global-default", "global-default", 9900, "ByUser", everyone, _ALL),
    ]  # fmt: skip


def mandatory() -> tuple[list[Obj], list[Obj]]:
    """The mandatory (schemas, levels): what the flow controller imagines while they are not
    stored."""
    return mandatory_schemas(), mandatory_levels()


def mandatory_spec(kind: str, name: str) -> Obj | None:
    """The fixed spec of a mandatory object (``kind`` FlowSchema or
    PriorityLevelConfiguration), None for any other name."""
    objects = mandatory_schemas() if kind == "FlowSchema" else mandatory_levels()
    for obj in objects:
        if obj["metadata"]["name"] == name:
            spec: Obj = obj["spec"]
            return spec
    return None


# -- the ensurer ---------------------------------------------------------------------------------


Held = Mapping[str, Mapping[str, Obj]]


async def ensure_flowcontrol_bootstrap(
    registry: Registry, catalogue: Catalogue, held: Held | None = None
) -> dict[str, int]:
    """One round of the config producer: suggested, mandatory, then unwanted objects. ``held``:
    the objects as a follower of the two kinds holds them (by plural, then name), read instead
    of the store, as kube's producer reads its informers' caches; None: read the store.
    Returns the newest revision written of each kind it wrote."""
    schemas, levels = flow_schema_info(catalogue), priority_level_info(catalogue)
    reads = _Reads(registry, held)
    for info, objects, always in (
        (schemas, suggested_schemas(), False),
        (levels, suggested_levels(), False),
        (schemas, mandatory_schemas(), True),
        (levels, mandatory_levels(), True),
    ):
        # the objects of one list are independent: written at once (the store commits them
        # together), one list after the other as kube does
        await asyncio.gather(*(_ensure(reads, info, b, always) for b in objects))
    for info, objects in (
        (schemas, [*mandatory_schemas(), *suggested_schemas()]),
        (levels, [*mandatory_levels(), *suggested_levels()]),
    ):
        await _remove_unwanted(reads, info, {o["metadata"]["name"] for o in objects})
    return reads.written


class _Reads:
    """Where the producer reads the objects (a follower's, else the store), and the revisions
    it wrote."""

    def __init__(self, registry: Registry, held: Held | None) -> None:
        self.registry, self.held = registry, held
        self.written: dict[str, int] = {}

    def wrote(self, info: ResourceInfo, obj: Obj) -> None:
        revision = int(obj["metadata"]["resourceVersion"])
        self.written[info.plural] = max(self.written.get(info.plural, 0), revision)

    async def get(self, info: ResourceInfo, name: str) -> Obj | None:
        if self.held is not None:
            return self.held[info.plural].get(name)
        try:
            return await self.registry.get(info, None, name)
        except APIError as exc:
            if exc.code == 404:
                return None
            raise

    async def list(self, info: ResourceInfo) -> list[Obj]:
        if self.held is not None:
            return list(self.held[info.plural].values())
        items: list[Obj] = (await self.registry.list(info, None))["items"]
        return items


def _parse_bool(value: Any) -> bool | None:
    """Go's strconv.ParseBool, None for anything else."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None


def _spec_equalish(info: ResourceInfo, bootstrap: Obj, current: Obj) -> bool:
    """SpecEqualish: the bootstrap spec, defaulted, equals the stored one."""
    expected = clone(bootstrap)
    (default_flow_schema if info.kind == "FlowSchema" else default_priority_level)(expected)
    return bool(expected.get("spec") == current.get("spec"))


def revise(info: ResourceInfo, current: Obj, bootstrap: Obj, always: bool) -> Obj | None:
    """ReviseIfNeeded: the object to write over ``current``, None when it is up to date."""
    meta = current.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    auto = always
    if not auto:
        parsed = _parse_bool(annotations.get(AUTOUPDATE))
        auto = parsed if parsed is not None else meta.get("generation") == 1
    update_annotation = _parse_bool(annotations.get(AUTOUPDATE)) != auto
    spec_changed = auto and not _spec_equalish(info, bootstrap, current)
    if not (update_annotation or spec_changed):
        return None
    revised = clone(current)
    if spec_changed:
        revised["spec"] = clone(bootstrap["spec"])
    if update_annotation:
        revised["metadata"].setdefault("annotations", {})[AUTOUPDATE] = "true" if auto else "false"
    return revised


async def _ensure(reads: _Reads, info: ResourceInfo, bootstrap: Obj, always: bool) -> None:
    name = bootstrap["metadata"]["name"]
    registry = reads.registry
    try:
        for _ in range(3):  # created or deleted meanwhile: look again
            current = await reads.get(info, name)
            if current is None:
                try:
                    created_obj = await registry.create(
                        info, None, clone(bootstrap), field_manager=PRODUCER
                    )
                    reads.wrote(info, created_obj)
                    log.debug("APF bootstrap: created %s %s", info.kind, name)
                    return
                except APIError as created:
                    if created.reason != "AlreadyExists" or reads.held is not None:
                        raise  # (a follower behind the store: the next round sees it)
                    continue
            revised = revise(info, current, bootstrap, always)
            if revised is None:
                return
            try:
                updated, _ = await registry.update(
                    info, None, name, revised, field_manager=PRODUCER
                )
                reads.wrote(info, updated)
                log.debug("APF bootstrap: updated %s %s", info.kind, name)
            except APIError as exc:
                if exc.code not in (404, 409):  # changed meanwhile: the next round sees it
                    raise
            return
    except APIError as exc:
        if exc.reason != "AlreadyExists":
            log.warning("APF bootstrap: %s %s: %s", info.kind, name, exc)


async def _remove_unwanted(reads: _Reads, info: ResourceInfo, wanted: set[str]) -> None:
    """RemoveUnwantedObjects: a stored object annotated autoupdate ``true`` that the bootstrap
    configuration no longer has is deleted."""
    for obj in await reads.list(info):
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if (
            name in wanted
            or _parse_bool((meta.get("annotations") or {}).get(AUTOUPDATE)) is not True
        ):
            continue
        try:
            await reads.registry.delete(info, None, str(name))
        except APIError as exc:
            if exc.code != 404:
                log.warning("APF bootstrap: deleting %s %s: %s", info.kind, name, exc)
