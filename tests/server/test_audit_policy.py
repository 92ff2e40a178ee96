"""The audit policy's rule matching and loading, as kube's pkg/audit/policy checker and reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubelite.api.machinery.user import ADMIN, ANONYMOUS, User
from kubelite.server.auditpolicy import PolicyError, load_policy, parse_policy
from kubelite.server.requestinfo import request_info

ALICE = User("alice", ("devs", "system:authenticated"))


def level(rules: list[dict[str, Any]], user: User, method: str, path: str) -> str:
    policy = parse_policy({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": rules})
    return policy.evaluate(user, request_info(method, path, False)).level


@pytest.mark.parametrize(
    ("rule", "user", "method", "path", "matches"),
    [
        ({"users": ["alice"]}, ALICE, "GET", "/api/v1/pods", True),
        ({"users": ["alice"]}, ADMIN, "GET", "/api/v1/pods", False),
        ({"userGroups": ["devs"]}, ALICE, "GET", "/version", True),
        ({"userGroups": ["devs"]}, ANONYMOUS, "GET", "/version", False),
        ({"verbs": ["list"]}, ALICE, "GET", "/api/v1/pods", True),
        ({"verbs": ["get"]}, ALICE, "GET", "/api/v1/pods", False),
        ({"namespaces": ["a"]}, ALICE, "GET", "/api/v1/namespaces/a/pods", True),
        ({"namespaces": ["a"]}, ALICE, "GET", "/api/v1/namespaces/b/pods", False),
        ({"namespaces": ["a"]}, ALICE, "GET", "/version", False),
        ({"resources": [{"group": "apps"}]}, ALICE, "GET", "/apis/apps/v1/deployments", True),
        ({"resources": [{"group": ""}]}, ALICE, "GET", "/apis/apps/v1/deployments", False),
        # no wildcard group: "*" is a group named "*" (kube's ruleMatchesResource)
        ({"resources": [{"group": "*", "resources": ["*"]}]}, ALICE, "GET", "/api/v1/pods", False),
        ({"resources": [{"group": "", "resources": ["*"]}]}, ALICE, "GET", "/api/v1/pods", True),
        ({"resources": [{"resources": ["pods"]}]}, ALICE, "GET", "/api/v1/namespaces/a/pods/p/log",
         False),
        ({"resources": [{"resources": ["pods/log"]}]}, ALICE, "GET",
         "/api/v1/namespaces/a/pods/p/log", True),
        ({"resources": [{"resources": ["*/log"]}]}, ALICE, "GET",
         "/api/v1/namespaces/a/pods/p/log", True),
        ({"resources": [{"resources": ["pods/*"]}]}, ALICE, "GET",
         "/api/v1/namespaces/a/pods/p/status", True),
        ({"resources": [{"resources": ["pods"], "resourceNames": ["p"]}]}, ALICE, "GET",
         "/api/v1/namespaces/a/pods/p", True),
        ({"resources": [{"resources": ["pods"], "resourceNames": ["p"]}]}, ALICE, "GET",
         "/api/v1/namespaces/a/pods/q", False),
        ({"nonResourceURLs": ["/healthz*"]}, ANONYMOUS, "GET", "/healthz/etcd", True),
        ({"nonResourceURLs": ["/version"]}, ANONYMOUS, "GET", "/version", True),
        ({"nonResourceURLs": ["*"]}, ANONYMOUS, "GET", "/api/v1/pods", False),
    ],
)  # fmt: skip
def test_rule_matching(
    rule: dict[str, Any], user: User, method: str, path: str, matches: bool
) -> None:
    rules = [{"level": "Request", **rule}, {"level": "Metadata"}]
    assert level(rules, user, method, path) == ("Request" if matches else "Metadata")


def test_no_matching_rule_is_none_and_stages_combine() -> None:
    assert level([{"level": "Metadata", "users": ["x"]}], ALICE, "GET", "/version") == "None"
    policy = parse_policy(
        {
            "apiVersion": "audit.k8s.io/v1",
            "kind": "Policy",
            "omitStages": ["RequestReceived"],
            "omitManagedFields": True,
            "rules": [{"level": "Metadata", "omitStages": ["Panic"], "omitManagedFields": False}],
        }
    )
    config = policy.evaluate(ALICE, request_info("GET", "/version", False))
    assert config.omit_stages == {"RequestReceived", "Panic"}
    assert config.omit_managed_fields is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n", "with 0 rules"),
        ("apiVersion: v1\nkind: Policy\nrules: [{level: None}]\n", "expected kind Policy"),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]\n",
         "rules[0].level: Unsupported value: 'Everything'"),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Later]\nrules: [{level: None}]\n",
         "omitStages: Unsupported value: 'Later'"),
    ],
)  # fmt: skip
def test_bad_policies_are_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_policy(path)
