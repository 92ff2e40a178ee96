"""RBAC's defaults (kube's pkg/apis/rbac/v1/defaults.go): a binding's roleRef and subjects get
their apiGroup."""

from __future__ import annotations

from kubelite.api.kinds.core.poddefaults import items, set_if_empty, sub
from kubelite.api.kinds.rules import Obj

RBAC_GROUP = "rbac.authorization.k8s.io"


def default_binding(obj: Obj) -> None:
    """SetDefaults_{Cluster,}RoleBinding (roleRef.apiGroup) and SetDefaults_Subject (a User's
    or Group's apiGroup is rbac's, a ServiceAccount's is core's)."""
    role_ref = sub(obj, "roleRef")
    if role_ref is not None:
        set_if_empty(role_ref, "apiGroup", RBAC_GROUP)
    for subject in items(obj, "subjects"):
        if subject.get("apiGroup") in (None, ""):
            kind = subject.get("kind")
            if kind in ("User", "Group"):
                subject["apiGroup"] = RBAC_GROUP
            elif kind == "ServiceAccount":
                subject.pop("apiGroup", None)  # core's group: "", which Go leaves out
