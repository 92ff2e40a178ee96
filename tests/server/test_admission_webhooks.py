"""Admission webhooks against a real ``kubelite serve`` and a real HTTPS webhook server
(tests/server/webhookserver.py): what kubelite sends (AdmissionReview v1), how it takes the
answers (allowed, denied, patched, warnings, audit annotations), call failures under both
failure policies, timeouts, selectors, match conditions, dry run, url and service client
configurations, and kubectl showing a denial (shared/spec/admission.md §5)."""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Server, start_server, stop_server
from test_audit_log import events_of
from test_metrics_endpoint import raw_request
from webhookserver import Reply, WebhookServer, allow, review_answer, webhook_server

Obj = dict[str, Any]

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
VALIDATING = f"{ADMISSION}/validatingwebhookconfigurations"
MUTATING = f"{ADMISSION}/mutatingwebhookconfigurations"
CMS = "/api/v1/namespaces/default/configmaps"
CONFIGMAP_RULE = {
    "operations": ["CREATE", "UPDATE", "DELETE"],
    "apiGroups": [""],
    "apiVersions": ["v1"],
    "resources": ["configmaps"],
}
SVC_NAME = "hooks.webhooks.svc"


@pytest.fixture
def hooks(tmp_path: Path) -> Iterator[WebhookServer]:
    with webhook_server(tmp_path / "webhook", ["localhost", "127.0.0.1", SVC_NAME]) as srv:
        yield srv


def webhook(name: str, client_config: Obj, **fields: Any) -> Obj:
    out: Obj = {
        "name": name,
        "clientConfig": client_config,
        "rules": [CONFIGMAP_RULE],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    out.update(fields)
    return out


def configure(server: Server, kind: str, name: str, *webhooks: Obj) -> None:
    """Create a webhook configuration (answered once this server's webhooks hold it)."""
    path = VALIDATING if kind == "ValidatingWebhookConfiguration" else MUTATING
    body = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": list(webhooks),
    }
    code, answer = server.request("POST", path, body)
    assert code == 201, answer


def validating(server: Server, name: str, *webhooks: Obj) -> None:
    configure(server, "ValidatingWebhookConfiguration", name, *webhooks)


def mutating(server: Server, name: str, *webhooks: Obj) -> None:
    configure(server, "MutatingWebhookConfiguration", name, *webhooks)


def configmap(name: str, **meta: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}


def create_cm(server: Server, name: str, namespace: str = "default", **meta: Any) -> tuple[int, Obj]:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    return server.request("POST", path, configmap(name, **meta))


# -- what kubelite sends ----------------------------------------------------------------------


def test_the_admission_review_sent_for_create_update_and_delete(
    server: Server, hooks: WebhookServer
) -> None:
    hooks.handlers["/check"] = allow
    validating(server, "watch", webhook("watch.example.com", hooks.url_config("/check")))

    code, created = create_cm(server, "a")
    assert code == 201, created
    [call] = hooks.calls_to("/check")
    assert call.query == {"timeout": "10s"}
    review = call.review
    assert review is not None
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    request = review["request"]
    uuid.UUID(request["uid"])
    sent = request["object"]
    assert sent["metadata"]["name"] == "a"
    assert {k: v for k, v in request.items() if k not in ("uid", "object", "userInfo")} == {
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "requestKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "requestResource": {"group": "", "version": "v1", "resource": "configmaps"},
        "name": "a",
        "namespace": "default",
        "operation": "CREATE",
        "oldObject": None,
        "dryRun": False,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager":
                    "Python-urllib"},
    }  # fmt: skip
    assert request["userInfo"]["username"] == "kubelite-admin"
    assert "system:masters" in request["userInfo"]["groups"]

    updated = {**created, "data": {"k": "v"}}
    code, _ = server.request("PUT", f"{CMS}/a", updated)
    assert code == 200
    request = hooks.calls_to("/check")[1].review["request"]  # type: ignore[index]
    assert request["operation"] == "UPDATE"
    assert request["object"]["data"] == {"k": "v"}
    assert request["oldObject"]["metadata"]["resourceVersion"] == created["metadata"][
        "resourceVersion"
    ]
    assert request["options"]["kind"] == "UpdateOptions"
    assert request["uid"] != hooks.calls_to("/check")[0].review["request"]["uid"]  # type: ignore[index]

    code, _ = server.request("DELETE", f"{CMS}/a")
    assert code == 200
    request = hooks.calls_to("/check")[2].review["request"]  # type: ignore[index]
    assert request["operation"] == "DELETE"
    assert request["object"] is None
    assert request["oldObject"]["data"] == {"k": "v"}
    assert request["options"] == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}


def test_a_configuration_is_in_force_once_its_write_answers(
    server: Server, hooks: WebhookServer
) -> None:
    """No sleep between configuring and writing: the write of the configuration answers once
    this server's webhooks hold it, and so does its removal."""
    hooks.handlers["/deny"] = lambda review, _: review_answer(review, False)
    validating(server, "deny-all", webhook("deny.example.com", hooks.url_config("/deny")))
    code, _ = create_cm(server, "a")
    assert code == 400
    code, _ = server.request("DELETE", f"{VALIDATING}/deny-all")
    assert code == 200
    code, _ = create_cm(server, "a")
    assert code == 201


# -- validating webhooks: answers -------------------------------------------------------------


def _deny_as_annotated(review: Obj, _: dict[str, str]) -> Reply:
    """Denies with the Status in the object's annotation ``status`` (allows without one)."""
    obj = review["request"]["object"] or review["request"]["oldObject"]
    status = (obj["metadata"].get("annotations") or {}).get("status")
    if status is None:
        return review_answer(review)
    return review_answer(review, False, status=json.loads(status))


@pytest.mark.parametrize(
    ("status", "code", "body"),
    [
        (
            {"message": "no configmaps today", "code": 403, "reason": "Forbidden"},
            403,
            {"message": 'admission webhook "deny.example.com" denied the request: '
             "no configmaps today", "reason": "Forbidden"},
        ),
        (
            {"reason": "NotToday"},
            400,
            {"message": 'admission webhook "deny.example.com" denied the request: NotToday',
             "reason": "NotToday"},
        ),
        (
            {},
            400,
            {"message": 'admission webhook "deny.example.com" denied the request without '
             "explanation"},
        ),
        (
            {"code": 200, "message": "m", "details": {"causes": [{"field": "data", "message": "x"}]}},
            400,
            {"message": 'admission webhook "deny.example.com" denied the request: m',
             "details": {"causes": [{"field": "data", "message": "x"}]}},
        ),
        (
            {"code": 422, "message": "bad", "reason": "Invalid"},
            422,
            {"message": 'admission webhook "deny.example.com" denied the request: bad',
             "reason": "Invalid"},
        ),
    ],
)  # fmt: skip
def test_denials(
    server: Server, hooks: WebhookServer, status: Obj, code: int, body: Obj
) -> None:
    hooks.handlers["/deny"] = _deny_as_annotated
    validating(server, "deny", webhook("deny.example.com", hooks.url_config("/deny")))
    got, answer = create_cm(server, "a", annotations={"status": json.dumps(status)})
    assert got == code
    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        **body,
        "code": code,
    }


def test_warnings_and_audit_annotations(tmp_path: Path, hooks: WebhookServer) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
    log = tmp_path / "audit.log"
    server = start_server(
        tmp_path / "data", None, "--audit-policy-file", str(policy), "--audit-log-path", str(log)
    )
    try:
        hooks.handlers["/warn"] = lambda review, _: review_answer(
            review, warnings=["mind the gap"], audit={"checked": "yes"}
        )
        validating(
            server,
            "warn",
            webhook("warn.example.com", hooks.url_config("/warn")),
            webhook("down.example.com", {"url": "https://127.0.0.1:1/x"}, failurePolicy="Ignore"),
        )
        body = json.dumps(configmap("a")).encode()
        code, headers, _ = raw_request(server, "POST", CMS, body)
        assert code == 201
        assert headers["warning"] == '299 - "mind the gap"'
        audit_id = headers["audit-id"]
        [event] = [e for e in events_of(log, audit_id) if e["stage"] == "ResponseComplete"]
        annotations = event["annotations"]
        assert annotations["warn.example.com/checked"] == "yes"
        assert (
            annotations["failed-open.validating.webhook.admission.k8s.io/round_0_index_1"]
            == "down.example.com"
        )
    finally:
        stop_server(server)


# -- call failures ----------------------------------------------------------------------------


def _failure_cases(hooks: WebhookServer) -> dict[str, tuple[Obj, str]]:
    """name -> (clientConfig, the text after 'failed calling webhook "<name>": ')."""
    hooks.handlers["/500"] = lambda review, _: Reply(500, b"boom\n", "text/plain")
    hooks.handlers["/garbage"] = lambda review, _: Reply(200, b"not json", "application/json")
    hooks.handlers["/uid"] = lambda review, _: review_answer(review, uid="other")
    hooks.handlers["/patch"] = lambda review, _: review_answer(review, patch=[])
    hooks.handlers["/status"] = lambda review, _: Reply(
        503,
        json.dumps({"kind": "Status", "status": "Failure", "message": "not now"}).encode(),
        "application/json",
    )
    return {
        "refused": (
            {"url": "https://127.0.0.1:1/x"},
            'failed to call webhook: Post "https://127.0.0.1:1/x?timeout=10s": dial tcp '
            "127.0.0.1:1: connect: connection refused",
        ),
        "http500": (
            hooks.url_config("/500"),
            'failed to call webhook: an error on the server ("boom") has prevented the request '
            "from succeeding",
        ),
        "status": (hooks.url_config("/status"), "failed to call webhook: not now"),
        "garbage": (
            hooks.url_config("/garbage"),
            "failed to call webhook: couldn't get version/kind; json parse error: ",
        ),
        "uid": (
            hooks.url_config("/uid"),
            'received invalid webhook response: expected response.uid="',
        ),
        "patch": (
            hooks.url_config("/patch"),
            "received invalid webhook response: validating webhook may not return response.patch",
        ),
        "unknown-ca": (
            {"url": hooks.url("/500")},
            f'failed to call webhook: Post "{hooks.url("/500")}?timeout=10s": tls: failed to '
            "verify certificate: x509: certificate signed by unknown authority",
        ),
    }


@pytest.mark.parametrize(
    "case", ["refused", "http500", "status", "garbage", "uid", "patch", "unknown-ca"]
)
def test_call_failures_under_failure_policy_fail(
    server: Server, hooks: WebhookServer, case: str
) -> None:
    client_config, why = _failure_cases(hooks)[case]
    validating(server, "failing", webhook(f"{case}.example.com", client_config))
    code, answer = create_cm(server, "a")
    assert code == 500, answer
    text = f'failed calling webhook "{case}.example.com": {why}'
    message = str(answer["message"])
    assert message.startswith(f"Internal error occurred: {text}"), message
    assert answer["reason"] == "InternalError"
    assert answer["details"] == {"causes": [{"message": message.removeprefix(
        "Internal error occurred: ")}]}  # fmt: skip


def test_call_failures_under_failure_policy_ignore(server: Server, hooks: WebhookServer) -> None:
    cases = _failure_cases(hooks)
    validating(
        server,
        "ignored",
        *(
            webhook(f"{case}.example.com", config, failurePolicy="Ignore")
            for case, (config, _) in cases.items()
        ),
    )
    code, answer = create_cm(server, "a")
    assert code == 201, answer


def test_a_webhook_that_times_out(server: Server, hooks: WebhookServer) -> None:
    release = threading.Event()

    def slow(review: Obj, _: dict[str, str]) -> Reply:
        release.wait(10)
        return review_answer(review)

    hooks.handlers["/slow"] = slow
    try:
        validating(server, "slow", webhook("slow.example.com", hooks.url_config("/slow"),
                                           timeoutSeconds=1))  # fmt: skip
        code, answer = create_cm(server, "a")
    finally:
        release.set()
    assert code == 500
    assert answer["message"] == (
        'Internal error occurred: failed calling webhook "slow.example.com": failed to call '
        f'webhook: Post "{hooks.url("/slow")}?timeout=1s": context deadline exceeded'
    )
    assert hooks.calls_to("/slow")[0].query == {"timeout": "1s"}


def test_a_slow_webhook_holds_only_its_own_request(server: Server, hooks: WebhookServer) -> None:
    """While a webhook keeps one write waiting, the server answers others, including writes
    that call other webhooks."""
    called, release = threading.Event(), threading.Event()

    def blocking(review: Obj, _: dict[str, str]) -> Reply:
        called.set()
        release.wait(20)
        return review_answer(review)

    hooks.handlers["/blocking"] = blocking
    hooks.handlers["/fast"] = allow
    selector = {"matchLabels": {"slow": "yes"}}
    validating(
        server,
        "hooks",
        webhook("blocking.example.com", hooks.url_config("/blocking"), objectSelector=selector,
                timeoutSeconds=30),
        webhook("fast.example.com", hooks.url_config("/fast")),
    )  # fmt: skip
    results: list[tuple[int, Obj]] = []
    waiting = threading.Thread(
        target=lambda: results.append(create_cm(server, "held", labels={"slow": "yes"}))
    )
    waiting.start()
    try:
        assert called.wait(10)
        for i in range(5):
            assert create_cm(server, f"other-{i}")[0] == 201
            assert server.request("GET", "/api/v1/namespaces")[0] == 200
        assert waiting.is_alive() and not results  # still held by its webhook
    finally:
        release.set()
        waiting.join(30)
    assert results[0][0] == 201
