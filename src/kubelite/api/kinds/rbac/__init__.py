"""The rbac.authorization.k8s.io group (kube's ``pkg/registry/rbac``): Roles, ClusterRoles and
their bindings, served by the storages of :mod:`.storage` (the escalation check in front of
every write), with their defaults (:mod:`.defaults`) and validation (:mod:`.validation`); the
bootstrap policy every cluster has (:mod:`.bootstrap`, with :mod:`.policy`'s roles)."""

from __future__ import annotations

from kubelite.api.kinds.rbac import storage
from kubelite.api.kinds.rbac.defaults import default_binding
from kubelite.api.kinds.rbac.storage import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    GROUP,
    ROLE_BINDINGS,
    ROLES,
    RBACStrategy,
)
from kubelite.api.kinds.rbac.validation import (
    validate_cluster_role,
    validate_cluster_role_binding,
    validate_role,
    validate_role_binding,
)
from kubelite.api.kinds.resource import Resource

RESOURCES: tuple[Resource, ...] = (
    Resource(GROUP, ROLES, RBACStrategy(validate_role), storage.storages),
    Resource(GROUP, CLUSTER_ROLES, RBACStrategy(validate_cluster_role), storage.storages),
    Resource(
        GROUP,
        ROLE_BINDINGS,
        RBACStrategy(validate_role_binding, default_binding),
        storage.storages,
    ),
    Resource(
        GROUP,
        CLUSTER_ROLE_BINDINGS,
        RBACStrategy(validate_cluster_role_binding, default_binding),
        storage.storages,
    ),
)
