"""The core group's kinds with rules of their own (kube-apiserver's ``pkg/registry/core``):
strategies, and the storages of ``serviceaccounts/<n>/token``, ``bindings`` (and
``pods/<n>/binding``) and the read-only ``componentstatuses``.

Namespaces have a module of their own (:mod:`kubelite.api.kinds.namespaces`). Sources: each
kind's ``strategy.go`` and ``storage/storage.go``.
"""

from __future__ import annotations

from typing import Any

from kubelite.api import authn, errors
from kubelite.api.admission import CREATE, Attributes
from kubelite.api.authn import AccountLookup
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.generic import Backing, GenericStore, Purge, ReadsOf
from kubelite.api.kinds.rules import BuiltinStrategy
from kubelite.api.names import label_errors
from kubelite.api.objectmeta import precondition_failure
from kubelite.api.registry import Registry, Storages
from kubelite.api.rest import Context, GetOptions, WriteOptions
from kubelite.api.stored import clone
from kubelite.api.strategy import ORPHAN_DEPENDENTS, UNSUPPORTED, Strategy
from kubelite.api.subresources import generic_subresources

Obj = dict[str, Any]


class PodStrategy(BuiltinStrategy):
    """Pods: generation moves on spec changes (1.33+), DELETE answers the pod, and /status
    cannot touch ownerReferences (kube guards them against old kubelets)."""

    def __init__(self) -> None:
        super().__init__(
            tracks_generation=True,
            returns_deleted_object=True,
            status_keeps=("ownerReferences",),
        )


class ServiceStrategy(BuiltinStrategy):
    """Services: DNS-1123 label names, create-on-update, DELETE answers the Service, and the
    defaults clients read back (type ClusterIP, sessionAffinity None, port protocol TCP and
    targetPort = port)."""

    def __init__(self) -> None:
        super().__init__(allow_create_on_update=True, returns_deleted_object=True)

    def name_errors(self, name: str) -> list[str]:
        return label_errors(name)

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        super().default(info, obj)
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))


class SecretStrategy(BuiltinStrategy):
    """Secrets: ``type`` defaults to Opaque, and an update that leaves it empty keeps the
    stored one."""

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        super().default(info, obj)
        if not obj.get("type"):
            obj["type"] = "Opaque"

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        if not new.get("type") and old.get("type"):
            new["type"] = old["type"]
        super().prepare_for_update(info, new, old)


class NodeStrategy(BuiltinStrategy):
    """Nodes: the status sent on create is kept (kubelets register with it)."""

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        pass


class ReplicationControllerStrategy(BuiltinStrategy):
    """ReplicationControllers: generation on spec changes; deleting one at v1 (its only
    version) orphans its pods unless the request says otherwise."""

    def __init__(self) -> None:
        super().__init__(tracks_generation=True)

    def default_gc_policy(self, info: ResourceInfo) -> str:
        return ORPHAN_DEPENDENTS if info.version == "v1" else super().default_gc_policy(info)


class EventStrategy(BuiltinStrategy):
    """Events (core and events.k8s.io share it): create-on-update, and never a
    garbage-collection finalizer."""

    def __init__(self) -> None:
        super().__init__(allow_create_on_update=True)

    def default_gc_policy(self, info: ResourceInfo) -> str:
        return UNSUPPORTED


STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("", "pods"): PodStrategy(),
    ("", "services"): ServiceStrategy(),
    ("", "secrets"): SecretStrategy(),
    ("", "nodes"): NodeStrategy(),
    ("", "replicationcontrollers"): ReplicationControllerStrategy(),
    ("", "events"): EventStrategy(),
    ("events.k8s.io", "events"): EventStrategy(),
    ("", "endpoints"): BuiltinStrategy(allow_create_on_update=True),
    ("", "limitranges"): BuiltinStrategy(allow_create_on_update=True),
    ("", "serviceaccounts"): BuiltinStrategy(returns_deleted_object=True),
    ("", "resourcequotas"): BuiltinStrategy(returns_deleted_object=True),
    ("", "persistentvolumes"): BuiltinStrategy(returns_deleted_object=True),
    ("", "persistentvolumeclaims"): BuiltinStrategy(returns_deleted_object=True),
    ("", "podtemplates"): BuiltinStrategy(tracks_generation=True, returns_deleted_object=True),
}


# -- serviceaccounts/<name>/token -----------------------------------------------------------------


class TokenREST:
    """``POST .../serviceaccounts/<name>/token`` (``kubectl create token``): a TokenRequest
    answered with a token for the account; nothing is stored."""

    object_info = None

    def __init__(self, accounts: GenericStore, tokens: authn.ServiceAccountTokens) -> None:
        self.accounts = accounts
        self.info = accounts.info
        self.tokens = tokens

    async def create_named(self, ctx: Context, name: str, body: Obj, opts: WriteOptions) -> Obj:
        account = await self.accounts.get(ctx, name, GetOptions())
        return authn.token_request_response(self.tokens, account, body)


def service_account_storages(
    info: ResourceInfo, backing: Backing, tokens: authn.ServiceAccountTokens | None
) -> Storages:
    store = GenericStore(info, STRATEGIES[("", "serviceaccounts")], backing)
    found: Storages = {"": store}
    if tokens is not None:
        found["token"] = TokenREST(store, tokens)
    return found


# -- bindings and pods/<name>/binding ------------------------------------------------------------


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
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True"})
    status["conditions"] = conditions


def pod_storages(info: ResourceInfo, backing: Backing) -> Storages:
    store = GenericStore(info, STRATEGIES[("", "pods")], backing)
    found: Storages = {"": store, **generic_subresources(store)}
    if "binding" in info.subresources:
        found["binding"] = BindingREST(store, info)
    return found


# -- componentstatuses ---------------------------------------------------------------------------


def read_only_storages(info: ResourceInfo, backing: Backing) -> Storages:
    """A resource clients may only read (ComponentStatus: get, list and watch)."""
    return {"": ReadsOf(GenericStore(info, BuiltinStrategy(), backing))}


def service_account_lookup(registry: Registry, catalogue: Catalogue) -> AccountLookup:
    """How the token authenticator finds the account a token names (None when it is gone)."""
    info = catalogue.lookup("", "v1", "serviceaccounts")
    if info is None:
        raise ValueError("the catalogue does not serve serviceaccounts")

    async def lookup(namespace: str, name: str) -> Obj | None:
        try:
            return await registry.get(info, namespace, name)
        except errors.APIError:
            return None

    return lookup
