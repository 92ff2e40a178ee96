"""No module outside the kind table names a kind: the server and the API layer's generic modules
never compare a resource, plural or Kind with a literal. Kind-specific behaviour belongs in the
kind's strategy or storage (``kubelite.api.kinds``); the import-linter contracts in
pyproject.toml keep the generic modules from importing it, and this test keeps them from
checking kinds by name instead."""

from __future__ import annotations

import ast
from pathlib import Path

from kubelite.api.catalogue import load_builtin_catalogue

SRC = Path(__file__).resolve().parents[2] / "src" / "kubelite"

#: Modules that name kinds by their nature, each with the reason.
EXEMPT = {
    # the kind table and the kinds' own logic
    "api/kinds": "strategies and storages of each kind",
    "api/controllers": "controllers of one kind each (namespaces, CRDs)",
    "api/simulation": "the simulated cluster: kubelets, scheduler, node agents of pods and nodes",
    # declarations of the kinds, and codecs per kind (kube's generated code per type)
    "api/catalogue/extra.py": "hand-written kind data: short names, columns, served versions",
    "api/encoding/gotypes.py": "generated: the Go types of the kinds' fields, by struct",
    "api/encoding/conversion.py": "conversions between the versions of Event and "
    "HorizontalPodAutoscaler",
    "server/protobuf": "the protobuf messages of the kinds kubectl sends as protobuf",
    # RBAC's subjects are named by kind: User, Group, ServiceAccount
    "api/auth/rbac.py": "a binding subject's kind (ServiceAccount), not a resource check",
    "server/flowcontrol/matching.py": "a FlowSchema subject's kind (ServiceAccount) and its "
    "rules' `namespaces` field, not resource checks",
    "api/auth/rbacindex.py": "the RBAC authorizer holds RBAC's own kinds and their roleRef kinds",
    "server/impersonation.py": "kube's impersonation requests: users, groups, serviceaccounts",
    "api/admission/webhooks": "admission webhooks follow their configuration kinds; "
    "a Namespace's labels",
    # admission: the configuration kinds exempt from webhooks and policies, and kube's rules
    # for a Namespace's own labels (a Namespace is cluster-scoped yet has a namespace selector)
    "api/admission/rules.py": "the exempt admission configuration kinds; Namespace selectors",
    "api/machinery/admission.py": "a Namespace's own name is the admission namespace of its writes",
    "api/admission/policy": "admission policies follow their own kinds and read the write's "
    "Namespace",
    # audit.k8s.io's own kinds and fields, which share words with core kinds
    "server/audit.py": "writes audit.k8s.io/v1 objects of kind Event (not core's Event)",
    "server/auditpolicy.py": "an audit policy rule's `namespaces` field",
    # the URL grammar has a namespaces/<name> segment
    "server/requestinfo.py": "the path grammar: /namespaces/<ns>/",
}


def kind_names() -> set[str]:
    names: set[str] = set()
    for info in load_builtin_catalogue():
        names.update((info.plural, info.kind))
    return names


def exempt(path: Path) -> bool:
    relative = path.relative_to(SRC).as_posix()
    return any(relative == key or relative.startswith(key + "/") for key in EXEMPT)


def test_generic_modules_name_no_kind() -> None:
    names = kind_names()
    found: dict[str, set[str]] = {}
    for layer in ("api", "server"):
        for path in sorted((SRC / layer).rglob("*.py")):
            if exempt(path):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and node.value in names:
                    found.setdefault(path.relative_to(SRC).as_posix(), set()).add(node.value)
    assert found == {}


def test_the_check_sees_a_kind_named_by_a_literal() -> None:
    """The scan above would catch the old style of branching on a kind."""
    snippet = 'if info.group == "" and info.plural == "pods":\n    pass\n'
    literals = {
        node.value for node in ast.walk(ast.parse(snippet)) if isinstance(node, ast.Constant)
    }
    assert "pods" in literals & kind_names()
