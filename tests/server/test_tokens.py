"""Service account tokens: kubectl create token, requests made with them, TokenReview, and
their end (expiry, a deleted account, a forged signature)."""

from __future__ import annotations

import json

from harness import Server

from kubelite.api.auth.authn import ServiceAccountTokens

ACCOUNT = {"metadata": {"name": "robot", "namespace": "default", "uid": "u-1"}}
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"


def test_kubectl_create_token_authenticates_as_the_service_account(server: Server) -> None:
    server.kubectl("create", "serviceaccount", "robot")
    token = server.kubectl("create", "token", "robot").stdout.strip()
    whoami = json.loads(server.kubectl("--token", token, "auth", "whoami", "-o", "json").stdout)
    info = whoami["status"]["userInfo"]
    ns = server.namespace
    assert info["username"] == f"system:serviceaccount:{ns}:robot"
    assert info["groups"] == [
        "system:serviceaccounts",
        f"system:serviceaccounts:{ns}",
        "system:authenticated",
    ]
    refused = server.kubectl("--token", token, "create", "configmap", "x", check=False)
    assert (
        f'configmaps is forbidden: User "system:serviceaccount:{ns}:robot" cannot create '
        f'resource "configmaps" in API group "" in the namespace "{ns}"'
    ) in refused.stderr
    server.kubectl("create", "rolebinding", "robot-edit", "--clusterrole=edit",
                   f"--serviceaccount={ns}:robot")  # fmt: skip
    server.kubectl("--token", token, "create", "configmap", "made-by-robot")
    assert server.request("GET", "/api/v1/namespaces/{ns}/configmaps/made-by-robot")[0] == 200
    code, review = server.request("POST", TOKEN_REVIEWS, {"spec": {"token": token}})
    assert code == 201
    assert review["status"]["authenticated"] is True  # type: ignore[index]
    assert review["status"]["user"]["username"] == info["username"]  # type: ignore[index]
    server.kubectl("delete", "serviceaccount", "robot")
    gone = server.kubectl("--token", token, "get", "configmaps", check=False)
    assert gone.returncode == 1
    assert "Unauthorized" in gone.stderr


def test_token_requests_are_validated(server: Server) -> None:
    server.kubectl("create", "serviceaccount", "robot")
    short = server.kubectl("create", "token", "robot", "--duration=5m", check=False)
    assert short.returncode == 1
    assert (
        'TokenRequest.authentication.k8s.io "robot" is invalid: spec.expirationSeconds: '
        "Invalid value: 300: may not specify a duration less than 10 minutes"
    ) in short.stderr
    missing = server.kubectl("create", "token", "nobody", check=False)
    assert 'serviceaccounts "nobody" not found' in missing.stderr


def test_tokens_expire_and_forgeries_fail() -> None:
    tokens = ServiceAccountTokens("admin-secret")
    token, expires = tokens.issue(
        ACCOUNT, ["https://kubernetes.default.svc.cluster.local"], 600, 1000.0
    )
    assert expires == "1970-01-01T00:26:40Z"
    claim = tokens.verify(token, now=1500.0)
    assert claim is not None
    assert claim.user().name == "system:serviceaccount:default:robot"
    assert tokens.verify(token, now=1600.0) is None  # expired
    assert tokens.verify(token, now=999.0) is None  # not yet valid
    assert ServiceAccountTokens("another-secret").verify(token, now=1500.0) is None
    head, body, signature = token.split(".")
    assert tokens.verify(f"{head}.{body}x.{signature}", now=1500.0) is None
