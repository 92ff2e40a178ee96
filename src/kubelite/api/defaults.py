"""Field defaults kube-apiserver applies on create and update (its ``SetDefaults_*`` functions).

Only the ones clients are seen to depend on, each tied to its kind; the full defaulting of every
built-in kind is not done yet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]


def _secret(obj: Obj) -> None:
    if not obj.get("type"):
        obj["type"] = "Opaque"


def _service(obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))


DEFAULTERS: dict[tuple[str, str], Callable[[Obj], None]] = {
    ("", "Secret"): _secret,
    ("", "Service"): _service,
}


def apply_defaults(group: str, kind: str, obj: Obj) -> Obj:
    """Fill in ``obj``'s defaults (in place) and return it."""
    defaulter = DEFAULTERS.get((group, kind))
    if defaulter is not None:
        defaulter(obj)
    return obj
