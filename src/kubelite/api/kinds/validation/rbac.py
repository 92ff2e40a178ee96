"""Validation: Role, ClusterRole, RoleBinding, ClusterRoleBinding (pkg/apis/rbac/validation)."""

from __future__ import annotations

from kubelite.api.kinds.rules import Kind, Validator

VALIDATORS: dict[Kind, Validator] = {}
