"""Bindings (kube's pkg/registry/core/pod/storage BindingREST): a pod bound to a node, through
``bindings`` and ``pods/<name>/binding``."""

from __future__ import annotations

from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding.stored import clone, now
from kubelite.api.kinds.resource import Resource, Wiring
from kubelite.api.machinery.admission import CREATE, Attributes
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.objectmeta import precondition_failure
from kubelite.api.machinery.registry import Storages
from kubelite.api.machinery.rest import Context, WriteOptions
from kubelite.api.machinery.strategy import Strategy
from kubelite.api.machinery.writesteps import Purge

Obj = dict[str, Any]


class BindingREST:
    """A Binding assigns a pod to a node (kube's BindingREST): after admission (a create of
    ``pods/binding``), the pod's ``spec.nodeName`` is set, the binding's annotations merged into
    the pod's and a PodScheduled condition added, written with the optimistic loop but not
    through the pod strategy (no generation move), as kube does. Answers a Status (201).
    ``POST .../namespaces/<ns>/bindings`` takes the pod's name from the body,
    ``POST .../pods/<name>/binding`` from the path."""

    object_info = None

    def __init__(self, pods: GenericStore, info: ResourceInfo) -> None:
        self.pods = pods
        self.info = info

    async def create(self, ctx: Context, body: Obj, opts: WriteOptions) -> Obj:
        meta = body.get("metadata")
        if not isinstance(meta, dict):
            raise errors.bad_request(f"not a Binding object: {body!r}")
        return await self.create_named(ctx, str(meta.get("name") or ""), body, opts)

    async def create_named(self, ctx: Context, name: str, body: Obj, opts: WriteOptions) -> Obj:
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            raise errors.bad_request("name in URL does not match name in Binding object")
        target = body.get("target") or {}
        problems = []
        if target.get("kind") not in (None, "", "Node"):
            problems.append(
                f'target.kind: Unsupported value: "{target.get("kind")}": supported values: '
                '"Node", "<empty>"'
            )
        if not target.get("name"):
            problems.append("target.name: Required value")
        if problems:
            raise errors.internal(problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]")
        node, uid = str(target["name"]), str(meta.get("uid") or "")
        version = str(meta.get("resourceVersion") or "")
        annotations = meta.get("annotations") or {}
        attrs = Attributes(
            CREATE, self.pods.info, ctx.namespace, name, body, None, ctx.user, "binding",
            opts.dry_run,
        )  # fmt: skip
        await self.pods.backing.admission.admit(attrs)
        await self.pods.backing.admission.validate(attrs)

        async def assign(current: Obj | None) -> Obj | Purge:
            if current is None:
                raise errors.not_found("pods", "", name)
            failed = precondition_failure(current["metadata"], uid, version)
            if failed:  # the Binding's uid and resourceVersion are preconditions on the pod
                raise errors.conflict("pods", "", name, failed)
            pod = clone(current)
            _bind(pod, name, node, annotations)
            pod["metadata"].pop("resourceVersion", None)
            return pod

        await self.pods.guaranteed_update(self.pods.key(ctx, name), assign, opts.dry_run)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }


def _bind(pod: Obj, name: str, node: str, annotations: Any) -> None:
    """The pod assigned to ``node``, or kube's 409 on ``pods/binding`` when it cannot be."""
    spec = pod.setdefault("spec", {})
    why = ""
    if pod["metadata"].get("deletionTimestamp"):
        why = f"pod {name} is being deleted, cannot be assigned to a host"
    elif spec.get("nodeName"):
        why = f'pod {name} is already assigned to node "{spec["nodeName"]}"'
    elif spec.get("schedulingGates"):
        why = f"pod {name} has non-empty .spec.schedulingGates"
    if why:
        raise errors.conflict("pods/binding", "", name, why)
    spec["nodeName"] = node
    if isinstance(annotations, dict) and annotations:
        pod["metadata"]["annotations"] = {
            **(pod["metadata"].get("annotations") or {}),
            **annotations,
        }
    status = pod.setdefault("status", {})
    status["conditions"] = scheduled_condition(status.get("conditions"), "True")


def scheduled_condition(conditions: Any, value: str, **fields: Any) -> list[Obj]:
    """``conditions`` with PodScheduled set as podutil.UpdatePodCondition sets it: in place,
    ``lastProbeTime`` null (Go's zero time), ``lastTransitionTime`` now unless the status is
    unchanged; ``fields`` (reason, message) follow."""
    found = [c for c in conditions or [] if isinstance(c, dict)]
    condition: Obj = {"type": "PodScheduled", "status": value, "lastProbeTime": None,
                      "lastTransitionTime": now(), **fields}  # fmt: skip
    for i, old in enumerate(found):
        if old.get("type") == "PodScheduled":
            if old.get("status") == value and old.get("lastTransitionTime"):
                condition["lastTransitionTime"] = old["lastTransitionTime"]
            found[i] = condition
            return found
    return [*found, condition]


def binding_storages(
    info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring
) -> Storages:
    pods = wiring.catalogue.require("", "v1", "pods")
    return {"": BindingREST(GenericStore(pods, wiring.strategy("", "pods"), backing), info)}


RESOURCE = Resource("", "bindings", Strategy(), binding_storages)
