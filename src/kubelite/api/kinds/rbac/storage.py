"""The storages of RBAC's kinds (Role, ClusterRole, RoleBinding, ClusterRoleBinding): the generic
store, whose write hooks put the escalation check in front of every create and update (kube's
``pkg/registry/rbac/*/policybased/storage.go`` and ``escalation_check.go``).

Nobody may grant through RBAC what they do not hold. A write of a role passes when the user is
in ``system:masters``, may ``escalate`` that role, or already holds every rule it grants (rules
of the user's cluster role bindings and the request namespace's role bindings); setting or
keeping a ClusterRole's ``aggregationRule`` takes full authority. A write of a binding passes
when the user is in ``system:masters``, may ``bind`` the role it references, or holds every rule
of that role. kube checks a create before anything else the store does, and an update on the
object the update makes of the stored one (its PUT body, its patched object), skipping updates
that change only what the garbage collector changes.

The checks ask the server's authorizer, a hook the assembly sets once it exists
(:attr:`kubelite.api.kinds.resource.Wiring.authorizer`); without one (no authentication, or
``AlwaysAllow``) every write passes, as under kube's AlwaysAllow. Coverage and the failure text
are :mod:`kubelite.api.auth.rbaccover`.
"""

from __future__ import annotations

from typing import Any

from kubelite.api import errors
from kubelite.api.auth.authorizer import MASTERS, Authorizer, AuthorizerHook
from kubelite.api.auth.rbac import rules_of
from kubelite.api.auth.rbaccover import FULL_AUTHORITY, escalation
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import APIError, go_quote, qualified
from kubelite.api.kinds.resource import Wiring
from kubelite.api.kinds.rules import BuiltinStrategy, Defaulter, Validator
from kubelite.api.kinds.settled import Settled, SettledWrites
from kubelite.api.machinery.backing import Backing
from kubelite.api.machinery.generic import GenericStore
from kubelite.api.machinery.names import path_segment_errors
from kubelite.api.machinery.registry import Storages
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.rest import Context, GetOptions, ObjectUpdate
from kubelite.api.machinery.strategy import Strategy
from kubelite.api.machinery.subresources import generic_subresources

Obj = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
ROLES, CLUSTER_ROLES = "roles", "clusterroles"
ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS = "rolebindings", "clusterrolebindings"
PLURALS = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)
#: Metadata the garbage collector changes (kube's ``IsOnlyMutatingGCFields``).
GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "managedFields")
AGGREGATION_NEEDS_ADMIN = "must have cluster-admin privileges to use the aggregationRule"


def storages(info: ResourceInfo, strategy: Strategy, backing: Backing, wiring: Wiring) -> Storages:
    """The storages of one RBAC kind, each write checked against the server's authorizer and
    answered once the authorizer holds it (so a client's next request is decided by the policy
    it just wrote)."""
    authorizer, settled = wiring.current_authorizer, wiring.rbac_write_settled
    hooks: EscalationCheck
    if info.plural in (ROLES, CLUSTER_ROLES):
        hooks = RoleCheck(info, strategy, authorizer, settled)
    else:
        rules = RoleRules(wiring, backing)
        hooks = BindingCheck(info, strategy, authorizer, settled, rules)
    store = GenericStore(info, strategy, backing, hooks=hooks)
    return {"": store, **generic_subresources(store)}


class EscalationCheck(SettledWrites):
    """The hooks of an RBAC kind's generic store: a check of each create (before anything else)
    and of each update's new object (on every try, on what the update made of the stored
    object), unless the user may write anything (:meth:`allowed_outright`); a write through a
    subresource is not checked; a write answers once ``settled`` says so."""

    def __init__(
        self,
        info: ResourceInfo,
        strategy: Strategy,
        authorizer: AuthorizerHook,
        settled: Settled,
    ) -> None:
        super().__init__(info, settled)
        self.strategy = strategy
        self.authorizer = authorizer

    async def before_create(self, ctx: Context, body: Obj) -> None:
        authorizer = self.authorizer()
        if authorizer is not None and not self.allowed_outright(authorizer, ctx):
            await self.check(authorizer, ctx, self.decoded(body), None)

    def updated(self, ctx: Context, update: ObjectUpdate, subresource: str) -> ObjectUpdate:
        authorizer = self.authorizer()
        if authorizer is None or subresource or self.allowed_outright(authorizer, ctx):
            return update
        checked_authorizer = authorizer

        async def checked(current: Obj | None) -> Obj:
            new = await update(current)
            decoded = self.decoded(new)
            if current is None or not only_gc_fields_changed(decoded, current):
                await self.check(checked_authorizer, ctx, decoded, current)
            return new

        return checked

    def namespace(self, ctx: Context) -> str | None:
        return ctx.namespace if self.info.namespaced else None

    def decoded(self, obj: Obj) -> Obj:
        """``obj`` with the kind's defaults, as kube's storage sees a decoded object."""
        copied = clone(obj)
        self.strategy.default(self.info, copied)
        return copied

    def allowed_outright(self, authorizer: Authorizer, ctx: Context) -> bool:
        return MASTERS in ctx.user.groups

    async def check(
        self, authorizer: Authorizer, ctx: Context, obj: Obj, old: Obj | None
    ) -> None:  # pragma: no cover - each kind's hooks define it
        raise NotImplementedError

    def confirm_no_escalation(
        self, authorizer: Authorizer, ctx: Context, obj: Obj, rules: list[Obj]
    ) -> None:
        """``ConfirmNoEscalation``: 403 unless the rules the user holds in the request's
        namespace cover ``rules``."""
        why = self.escalation(authorizer, ctx, rules)
        if why:
            raise self.forbidden(obj, why)

    def escalation(self, authorizer: Authorizer, ctx: Context, rules: list[Obj]) -> str:
        held, resolution_errors = authorizer.rules_for(ctx.user, self.namespace(ctx) or "")
        return escalation(ctx.user, held, resolution_errors, rules)

    def forbidden(self, obj: Obj, why: str) -> APIError:
        """``errors.NewForbidden`` of this resource and the object's name (none yet for a
        generateName create)."""
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        target = qualified(self.info.plural, self.info.group)
        details: Obj = {"group": self.info.group, "kind": self.info.plural}
        if isinstance(name, str) and name:
            return APIError(
                403,
                "Forbidden",
                f"{target} {go_quote(name)} is forbidden: {why}",
                {"name": name, **details},
            )
        return APIError(403, "Forbidden", f"{target} is forbidden: {why}", details)


class RoleCheck(EscalationCheck):
    """Roles and ClusterRoles: the user may ``escalate`` the role, or holds its rules (and full
    authority for a ClusterRole's aggregationRule, set now or before)."""

    def allowed_outright(self, authorizer: Authorizer, ctx: Context) -> bool:
        return super().allowed_outright(authorizer, ctx) or escalate_authorized(authorizer, ctx)

    async def check(self, authorizer: Authorizer, ctx: Context, obj: Obj, old: Obj | None) -> None:
        self.confirm_no_escalation(authorizer, ctx, obj, rules_of(obj))
        aggregated = has_aggregation_rule(obj) or (old is not None and has_aggregation_rule(old))
        if self.info.plural != CLUSTER_ROLES or not aggregated:
            return
        if self.escalation(authorizer, ctx, list(FULL_AUTHORITY)):
            raise self.forbidden(obj, AGGREGATION_NEEDS_ADMIN)


class BindingCheck(EscalationCheck):
    """RoleBindings and ClusterRoleBindings: the user may ``bind`` the referenced role in the
    binding's namespace, or holds its rules; a role that does not exist answers its 404."""

    def __init__(
        self,
        info: ResourceInfo,
        strategy: Strategy,
        authorizer: AuthorizerHook,
        settled: Settled,
        role_rules: RoleRules,
    ) -> None:
        super().__init__(info, strategy, authorizer, settled)
        self.role_rules = role_rules

    async def check(self, authorizer: Authorizer, ctx: Context, obj: Obj, old: Obj | None) -> None:
        namespace = self.namespace(ctx) or ""
        if self.info.namespaced and not namespace:
            raise errors.bad_request("namespace is required")
        ref = obj.get("roleRef")
        ref = ref if isinstance(ref, dict) else {}
        if bind_authorized(authorizer, ctx, ref, namespace):
            return
        rules = await self.role_rules(ref, namespace)
        self.confirm_no_escalation(authorizer, ctx, obj, rules)


class RoleRules:
    """``GetRoleReferenceRules``: the rules of the role a binding references, read from
    storage (a Role in the binding's namespace, or a ClusterRole)."""

    def __init__(self, wiring: Wiring, backing: Backing) -> None:
        roles = wiring.catalogue.require(GROUP, "v1", ROLES)
        cluster_roles = wiring.catalogue.require(GROUP, "v1", CLUSTER_ROLES)
        self.roles = GenericStore(roles, wiring.strategy(GROUP, ROLES), backing)
        self.cluster_roles = GenericStore(
            cluster_roles, wiring.strategy(GROUP, CLUSTER_ROLES), backing
        )

    async def __call__(self, ref: Obj, namespace: str) -> list[Obj]:
        kind, name = ref.get("kind"), ref.get("name")
        name = name if isinstance(name, str) else ""
        if kind == "Role":
            if not namespace:
                raise errors.bad_request("Namespace parameter required.")
            role = await self.roles.get(Context(namespace), name, GetOptions())
        elif kind == "ClusterRole":
            role = await self.cluster_roles.get(Context(), name, GetOptions())
        else:
            kind = kind if isinstance(kind, str) else ""
            raise errors.internal(f"unsupported role reference kind: {go_quote(kind)}")
        return rules_of(role)


# -- the questions asked of the authorizer ---------------------------------------------------


def escalate_authorized(authorizer: Authorizer, ctx: Context) -> bool:
    """``RoleEscalationAuthorized``: the user may ``escalate`` the role the request is for (its
    name and namespace as the request names them; none for a create)."""
    request = ctx.request
    if request is None or not request.is_resource_request:
        return False
    if request.api_group != GROUP or request.resource not in (ROLES, CLUSTER_ROLES):
        return False
    attrs = RequestInfo(
        request.path,
        "escalate",
        True,
        api_group=request.api_group,
        api_version="*",
        namespace=request.namespace,
        resource=request.resource,
        name=request.name,
    )
    return authorizer.authorize(ctx.user, attrs).allowed


def bind_authorized(authorizer: Authorizer, ctx: Context, ref: Obj, namespace: str) -> bool:
    """``BindingAuthorized``: the user may ``bind`` the role ``ref`` names, in the binding's
    namespace ("" for a ClusterRoleBinding)."""
    kind = ref.get("kind")
    resource = {"Role": ROLES, "ClusterRole": CLUSTER_ROLES}.get(
        kind if isinstance(kind, str) else ""
    )
    if resource is None:
        return False
    group, name = ref.get("apiGroup"), ref.get("name")
    attrs = RequestInfo(
        ctx.request.path if ctx.request is not None else "",
        "bind",
        True,
        api_group=group if isinstance(group, str) else "",
        api_version="*",
        namespace=namespace,
        resource=resource,
        name=name if isinstance(name, str) else "",
    )
    return authorizer.authorize(ctx.user, attrs).allowed


# -- reading the objects -----------------------------------------------------------------------


def has_aggregation_rule(cluster_role: Obj) -> bool:
    rule = cluster_role.get("aggregationRule")
    return isinstance(rule, dict) and bool(rule.get("clusterRoleSelectors"))


def only_gc_fields_changed(new: Obj, old: Obj) -> bool:
    """``IsOnlyMutatingGCFields``: ``new`` is ``old`` but for owner references, finalizers
    (and selfLink, managedFields); an empty list or map counts as none, as Go's semantic
    equality has it."""
    new_meta, old_meta = new.get("metadata"), old.get("metadata")
    if not isinstance(new_meta, dict) or not isinstance(old_meta, dict):
        return False
    copied = dict(new)
    copied["metadata"] = {k: v for k, v in new_meta.items() if k not in GC_FIELDS}
    copied["metadata"].update((k, old_meta[k]) for k in GC_FIELDS if k in old_meta)
    return bool(_semantic(_untyped(copied)) == _semantic(_untyped(old)))


def _untyped(obj: Obj) -> Obj:
    """The object without its type (a decoded Go object's TypeMeta is not compared)."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def _semantic(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _semantic(v) for k, v in value.items() if v is not None and v != [] and v != {}}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


class RBACStrategy(BuiltinStrategy):
    """Roles, ClusterRoles and their bindings: create-on-update, and names that need only be
    valid path segments (ValidateRBACName), so ``system:discovery`` is a valid name."""

    def __init__(self, validator: Validator, *defaulters: Defaulter) -> None:
        super().__init__(
            defaulters=defaulters, validators=(validator,), allow_create_on_update=True
        )

    def name_errors(self, name: str) -> list[str]:
        return path_segment_errors(name)
