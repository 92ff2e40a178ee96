"""The RBAC authorizer: Roles, ClusterRoles, RoleBindings and ClusterRoleBindings held in memory,
indexed by subject, kept current by watches, with decisions cached until the policy changes.

:class:`PolicyIndex` holds the four kinds and answers kube's ``VisitRulesFor``: the bindings
whose subjects are the user (found by user name and by each group, not by scanning every
binding), in kube's visit order (cluster role bindings, then the namespace's role bindings, each
by name), each with its role's rules or the error resolving it.

:class:`RBACAuthorizer` decides on request attributes as kube's RBAC authorizer does (allow on
the first rule that matches; never deny; the reason ``RBAC: <errors>`` when resolving failed)
and remembers each decision until the index changes: a request that was decided before costs a
dictionary lookup.

:class:`PolicyFollower` keeps the index current like any informer (list, then watch from the
list's revision; list again when the watch ends), on every server over the same store, so a
change takes effect everywhere within the watch's delay. :meth:`PolicyFollower.settled` lets an
RBAC write answer only after this server's index holds it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from kubelite.api.auth.authorizer import Decision
from kubelite.api.auth.rbac import SERVICE_ACCOUNT_PREFIX, rule_allows, rules_of
from kubelite.api.auth.rbaccover import aggregate
from kubelite.api.catalogue import Catalogue
from kubelite.api.errors import go_quote
from kubelite.api.machinery.following import StoreFollower
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.request import RequestInfo
from kubelite.api.machinery.user import User

Obj = dict[str, Any]

GROUP = "rbac.authorization.k8s.io"
ROLES, CLUSTER_ROLES = "roles", "clusterroles"
ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS = "rolebindings", "clusterrolebindings"
PLURALS = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)
#: decisions remembered at most; the cache starts over when full
CACHE_SIZE = 8192


class Binding(NamedTuple):
    """A RoleBinding (``namespace`` set) or ClusterRoleBinding, as the index keeps it."""

    namespace: str
    name: str
    role_kind: str
    role_name: str
    subjects: tuple[Obj, ...]

    def describe(self, subject: Obj) -> str:
        """kube's ``clusterRoleBindingDescriber``/``roleBindingDescriber``: who it grants what."""
        kind = subject.get("kind", "")
        name = subject.get("name", "")
        if kind == "ServiceAccount":
            name = f"{name}/{subject.get('namespace') or self.namespace}"
        whom = f"{kind} {go_quote(name)}"
        role = f"{self.role_kind} {go_quote(self.role_name)}"
        if self.namespace:
            return f"RoleBinding {go_quote(f'{self.name}/{self.namespace}')} of {role} to {whom}"
        return f"ClusterRoleBinding {go_quote(self.name)} of {role} to {whom}"


def _subject_key(subject: Obj, binding_namespace: str) -> str | None:
    """The key a subject is indexed under: ``u:<user name>`` or ``g:<group>`` (a service
    account is its user name; one in a cluster role binding without a namespace is nobody)."""
    kind, name = subject.get("kind"), subject.get("name")
    if not isinstance(name, str) or not name:
        return None
    if kind == "User":
        return f"u:{name}"
    if kind == "Group":
        return f"g:{name}"
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return f"u:{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}" if namespace else None
    return None


def _user_keys(user: User) -> list[str]:
    return [f"u:{user.name}", *(f"g:{g}" for g in user.groups)]


class PolicyIndex:
    """The four kinds in memory. ``generation`` changes with every change."""

    def __init__(self) -> None:
        self.generation = 0
        self._roles: dict[tuple[str, str], list[Obj]] = {}
        self._cluster_roles: dict[str, list[Obj]] = {}
        self._bindings: dict[tuple[str, str], Binding] = {}
        #: namespace ("" for cluster role bindings) -> subject key -> binding keys
        self._by_subject: dict[str, dict[str, set[tuple[str, str]]]] = {}

    # -- changes -------------------------------------------------------------------------------

    def put(self, plural: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name") or ""
        self.generation += 1
        if plural == ROLES:
            self._roles[(namespace, name)] = rules_of(obj)
        elif plural == CLUSTER_ROLES:
            self._cluster_roles[name] = rules_of(obj)
        else:
            self._drop_binding((namespace, name))
            ref = obj.get("roleRef")
            ref = ref if isinstance(ref, dict) else {}  # stored before validation: anything
            kind, role = ref.get("kind"), ref.get("name")
            subjects = tuple(s for s in obj.get("subjects") or () if isinstance(s, dict))
            binding = Binding(
                namespace,
                name,
                kind if isinstance(kind, str) else "",
                role if isinstance(role, str) else "",
                subjects,
            )
            self._bindings[(namespace, name)] = binding
            keys = self._by_subject.setdefault(namespace, {})
            for subject in subjects:
                key = _subject_key(subject, namespace)
                if key is not None:
                    keys.setdefault(key, set()).add((namespace, name))

    def remove(self, plural: str, namespace: str, name: str) -> None:
        self.generation += 1
        if plural == ROLES:
            self._roles.pop((namespace, name), None)
        elif plural == CLUSTER_ROLES:
            self._cluster_roles.pop(name, None)
        else:
            self._drop_binding((namespace, name))

    def replace(self, plural: str, objects: list[Obj]) -> None:
        """Forget every object of ``plural`` (of bindings: both binding kinds share a table,
        told apart by namespace) and hold ``objects`` instead."""
        self.generation += 1
        if plural == ROLES:
            self._roles.clear()
        elif plural == CLUSTER_ROLES:
            self._cluster_roles.clear()
        else:
            namespaced = plural == ROLE_BINDINGS
            for key in [k for k in self._bindings if bool(k[0]) == namespaced]:
                self._drop_binding(key)
        for obj in objects:
            self.put(plural, obj)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        if plural == ROLES:
            return (namespace, name) in self._roles
        if plural == CLUSTER_ROLES:
            return name in self._cluster_roles
        return (namespace, name) in self._bindings

    def _drop_binding(self, key: tuple[str, str]) -> None:
        old = self._bindings.pop(key, None)
        if old is None:
            return
        keys = self._by_subject.get(old.namespace, {})
        for subject in old.subjects:
            skey = _subject_key(subject, old.namespace)
            holders = keys.get(skey or "")
            if holders is not None:
                holders.discard(key)
                if not holders:
                    del keys[skey or ""]

    # -- questions -----------------------------------------------------------------------------

    def bindings_for(self, user: User, namespace: str) -> list[tuple[Binding, Obj]]:
        """The bindings that apply to ``user`` (each with the first subject that is the user),
        in kube's visit order: cluster role bindings by name, then ``namespace``'s role
        bindings by name."""
        found: list[tuple[Binding, Obj]] = []
        user_keys = _user_keys(user)
        for scope in ("", namespace) if namespace else ("",):
            index = self._by_subject.get(scope)
            if not index:
                continue
            held: set[tuple[str, str]] = set()
            for key in user_keys:
                held.update(index.get(key, ()))
            for binding_key in sorted(held):
                binding = self._bindings[binding_key]
                subject = next(s for s in binding.subjects if _subject_key(s, scope) in user_keys)
                found.append((binding, subject))
        return found

    def role_rules(self, binding: Binding) -> list[Obj] | str:
        """The rules of the role ``binding`` refers to, or the error resolving it."""
        if binding.role_kind == "ClusterRole":
            rules = self._cluster_roles.get(binding.role_name)
            if rules is None:
                return f"clusterrole.{GROUP} {go_quote(binding.role_name)} not found"
            return rules
        if binding.role_kind == "Role":  # a cluster role binding's Role: looked up in "", so none
            rules = self._roles.get((binding.namespace, binding.role_name))
            if rules is None:
                return f"role.{GROUP} {go_quote(binding.role_name)} not found"
            return rules
        return f"unsupported role reference kind: {go_quote(binding.role_kind)}"

    def visit(self, user: User, namespace: str) -> Iterator[tuple[Binding, Obj, list[Obj] | str]]:
        for binding, subject in self.bindings_for(user, namespace):
            yield binding, subject, self.role_rules(binding)


class RBACAuthorizer:
    """RBAC over a :class:`PolicyIndex`, with each decision remembered until the index
    changes."""

    def __init__(self, index: PolicyIndex) -> None:
        self.index = index
        self._cache: dict[tuple[Any, ...], Decision] = {}
        self._cache_generation = -1

    def authorize(self, user: User, attrs: RequestInfo) -> Decision:
        if self._cache_generation != self.index.generation:
            self._cache.clear()
            self._cache_generation = self.index.generation
        key = (user.name, user.groups, attrs)
        decision = self._cache.get(key)
        if decision is None:
            decision = self._decide(user, attrs)
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = decision
        return decision

    def _decide(self, user: User, attrs: RequestInfo) -> Decision:
        errors: list[str] = []
        for binding, subject, rules in self.index.visit(user, attrs.namespace):
            if isinstance(rules, str):
                errors.append(rules)
                continue
            for rule in rules:
                if rule_allows(attrs, rule):
                    return Decision(True, f"RBAC: allowed by {binding.describe(subject)}")
        if errors:  # a reason, not an error: kube's RBAC authorizer returns a nil error
            return Decision(False, f"RBAC: {aggregate(errors)}")
        return Decision(False)

    def rules_for(self, user: User, namespace: str) -> tuple[list[Obj], list[str]]:
        rules: list[Obj] = []
        errors: list[str] = []
        for _, _, found in self.index.visit(user, namespace):
            if isinstance(found, str):
                errors.append(found)
            else:
                rules.extend(found)
        return rules, errors


class PolicyFollower(StoreFollower):
    """Keeps a :class:`PolicyIndex` current with the stored objects, as an informer: each kind
    listed through ``registry``, then watched from the list's revision (listed again when the
    watch ends or fails)."""

    def __init__(
        self,
        registry: Registry,
        catalogue: Catalogue,
        index: PolicyIndex,
        *,
        retry_seconds: float = 0.5,
    ) -> None:
        infos = {p: catalogue.require(GROUP, "v1", p) for p in PLURALS}
        super().__init__(registry, infos, name="rbac", retry_seconds=retry_seconds)
        self.index = index

    def replace(self, plural: str, objects: list[Obj]) -> None:
        self.index.replace(plural, objects)

    def put(self, plural: str, obj: Obj) -> None:
        self.index.put(plural, obj)

    def remove(self, plural: str, namespace: str, name: str) -> None:
        self.index.remove(plural, namespace, name)

    def holds(self, plural: str, namespace: str, name: str) -> bool:
        return self.index.holds(plural, namespace, name)

    #: (plural, namespace, name, revision): returns once the index holds every change of
    #: ``plural`` up to ``revision``, or (None) no longer holds the object
    settled = StoreFollower.caught_up
