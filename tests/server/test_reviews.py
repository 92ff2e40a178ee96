"""Review kinds are answered, never stored; verbs a kind does not serve get 405."""

from __future__ import annotations

import json

from harness import Server

SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"


def test_kubectl_auth_can_i_and_whoami(server: Server) -> None:
    assert server.kubectl("auth", "can-i", "create", "deployments").stdout.strip() == "yes"
    assert server.kubectl("auth", "can-i", "delete", "nodes", "-A").stdout.strip() == "yes"
    whoami = json.loads(server.kubectl("auth", "whoami", "-o", "json").stdout)
    assert whoami["kind"] == "SelfSubjectReview"
    assert whoami["status"]["userInfo"]["username"] == "kubelite-admin"
    assert "system:masters" in whoami["status"]["userInfo"]["groups"]


def test_an_access_review_is_answered_and_not_stored(server: Server) -> None:
    attributes = {"namespace": "default", "verb": "get", "resource": "pods"}
    code, body = server.request("POST", SSAR, {"spec": {"resourceAttributes": attributes}})
    assert code == 201
    assert body["status"] == {"allowed": True}  # type: ignore[index]
    assert body["spec"]["resourceAttributes"] == attributes  # type: ignore[index]
    assert body["metadata"] == {"creationTimestamp": None}  # type: ignore[index]
    code, body = server.request("GET", SSAR)
    assert code == 405
    assert body["reason"] == "MethodNotAllowed"  # type: ignore[index]


def test_an_access_review_needs_exactly_one_kind_of_attributes(server: Server) -> None:
    code, body = server.request("POST", SSAR, {"spec": {}})
    assert code == 422
    assert body["message"] == (  # type: ignore[index]
        'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
        'Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must '
        "be specified"
    )
    code, body = server.request(
        "POST", SAR, {"spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}
    )
    assert code == 422
    assert "at least one of user or group must be specified" in body["message"]  # type: ignore[index]


def test_token_review_authenticates_the_admin_token_only(server: Server) -> None:
    code, body = server.request("POST", TOKEN_REVIEWS, {"spec": {"token": server.token}})
    assert code == 201
    status = body["status"]  # type: ignore[index]
    assert status["authenticated"] is True
    assert status["user"]["username"] == "kubelite-admin"
    code, body = server.request("POST", TOKEN_REVIEWS, {"spec": {"token": server.token + "x"}})
    assert code == 201
    assert "authenticated" not in body["status"]  # type: ignore[index]
    assert body["status"]["error"]  # type: ignore[index]


def test_verbs_a_kind_does_not_serve_are_405(server: Server) -> None:
    code, body = server.request("POST", "/api/v1/componentstatuses", {"metadata": {"name": "x"}})
    assert code == 405
    assert body["message"] == "the server does not allow this method on the requested resource"  # type: ignore[index]
    code, _ = server.request("GET", "/api/v1/namespaces/{ns}/finalize")
    assert code == 405
    code, _ = server.request("DELETE", "/api/v1/namespaces/{ns}/status")
    assert code == 405
    code, _ = server.request("GET", "/api/v1/namespaces/{ns}/status")
    assert code == 200
