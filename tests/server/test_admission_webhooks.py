"""Admission webhooks against a real ``kubelite serve`` and a real HTTPS webhook server
(tests/server/webhookserver.py): what kubelite sends (AdmissionReview v1), how it takes the
answers (allowed, denied, patched, warnings, audit annotations), call failures under both
failure policies, timeouts, selectors, match conditions, dry run, url and service client
configurations, and kubectl showing a denial (k8s.io/apiserver
``pkg/admission/plugin/webhook``)."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import Server, start_server, stop_server
from test_audit_log import events_of
from test_metrics_endpoint import raw_request
from test_rbac_http import RBAC, binding, create, role, user, user_cert
from webhookserver import Reply, WebhookServer, allow, review_answer, webhook_server

from etcdcluster import EtcdCluster

#: every configuration here matches its kinds in every namespace (or every namespace itself);
#: and a server that calls webhooks runs in a process of its own: uvloop can close a socket's
#: descriptor under the Python object that still holds it (a TLS connection that failed), whose
#: collection later closes whatever descriptor took that number
pytestmark = pytest.mark.fresh_server(subprocess=True)
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


def create_cm(
    server: Server, name: str, namespace: str = "default", **meta: Any
) -> tuple[int, Obj]:
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
        # the options as the client sent them: no fieldManager (the User-Agent's is kubelite's
        # choice for managedFields, not an option), as kube's create handler passes them
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
    }  # fmt: skip
    assert request["userInfo"]["username"] == "kubelite-admin"
    assert "system:masters" in request["userInfo"]["groups"]

    updated = {**created, "data": {"k": "v"}}
    code, _ = server.request("PUT", f"{CMS}/a", updated)
    assert code == 200
    request = hooks.calls_to("/check")[1].review["request"]  # type: ignore[index]
    assert request["operation"] == "UPDATE"
    assert request["object"]["data"] == {"k": "v"}
    assert (
        request["oldObject"]["metadata"]["resourceVersion"]
        == created["metadata"]["resourceVersion"]
    )
    assert request["options"]["kind"] == "UpdateOptions"
    assert request["uid"] != hooks.calls_to("/check")[0].review["request"]["uid"]  # type: ignore[index]

    code, _ = server.request("DELETE", f"{CMS}/a")
    assert code == 200
    request = hooks.calls_to("/check")[2].review["request"]  # type: ignore[index]
    assert request["operation"] == "DELETE"
    assert request["object"] is None
    assert request["oldObject"]["data"] == {"k": "v"}
    assert request["options"] == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}


def test_the_options_sent_are_the_clients(server: Server, hooks: WebhookServer) -> None:
    """AdmissionRequest.options: the CreateOptions, UpdateOptions (a patch's too) and
    DeleteOptions the client sent, as kube's handlers pass them to admission."""
    hooks.handlers["/check"] = allow
    validating(server, "watch", webhook("watch.example.com", hooks.url_config("/check")))
    query = "?fieldManager=me&fieldValidation=Strict"
    assert server.request("POST", f"{CMS}{query}", configmap("a"))[0] == 201
    patch = {"data": {"k": "v"}}
    code, _ = server.request("PATCH", f"{CMS}/a?fieldManager=patcher", patch,
                             "application/merge-patch+json")  # fmt: skip
    assert code == 200
    current = server.request("GET", f"{CMS}/a")[1]
    body = {
        "propagationPolicy": "Background",
        "gracePeriodSeconds": 0,
        "preconditions": {"uid": current["metadata"]["uid"]},
    }  # type: ignore[index]
    assert server.request("DELETE", f"{CMS}/a", body)[0] == 200
    sent = [call.review["request"]["options"] for call in hooks.calls_to("/check")]  # type: ignore[index]
    meta = {"apiVersion": "meta.k8s.io/v1"}
    assert sent == [
        {"kind": "CreateOptions", **meta, "fieldManager": "me", "fieldValidation": "Strict"},
        {"kind": "UpdateOptions", **meta, "fieldManager": "patcher"},
        {"kind": "DeleteOptions", **meta, **body},
    ]


def test_a_namespace_is_sent_as_its_own_namespace(server: Server, hooks: WebhookServer) -> None:
    """kube's admission attributes of a Namespace carry its name as their namespace (the
    RequestInfo of ``/api/v1/namespaces/<n>``, the create handler's ``namespace = name``), so
    the AdmissionRequest names it in ``namespace`` too."""
    hooks.handlers["/ns"] = allow
    rule = {**CONFIGMAP_RULE, "resources": ["namespaces"], "scope": "Cluster"}
    validating(server, "ns", webhook("ns.example.com", hooks.url_config("/ns"), rules=[rule]))
    code, made = server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "team"}})
    assert code == 201, made
    made["metadata"]["labels"] = {"a": "b"}
    assert server.request("PUT", "/api/v1/namespaces/team", made)[0] == 200
    assert server.request("DELETE", "/api/v1/namespaces/team")[0] == 200
    requests = [call.review["request"] for call in hooks.calls_to("/ns")]  # type: ignore[index]
    assert [(r["operation"], r.get("namespace"), r["name"]) for r in requests] == [
        ("CREATE", "team", "team"),
        ("UPDATE", "team", "team"),
        ("DELETE", "team", "team"),
    ]


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


def test_a_configuration_comes_into_force_on_every_server(
    tmp_path: Path, etcd: EtcdCluster, hooks: WebhookServer
) -> None:
    """Two servers over one etcd: each follows the configurations, so one written through the
    first is in force on the second, and its removal too. (The delay is a watch event's; the
    30 s bound only keeps a broken watch from hanging.)"""
    hooks.handlers["/deny"] = lambda review, _: review_answer(review, False)
    storage = f"{etcd.url}?prefix=/api/{uuid.uuid4().hex}"
    first = start_server(tmp_path / "one" / "data", storage)
    try:
        second = start_server(tmp_path / "two" / "data", storage)
        try:
            validating(first, "deny-all", webhook("deny.example.com", hooks.url_config("/deny")))
            written = time.monotonic()
            while create_cm(second, "a")[0] != 400:
                assert time.monotonic() - written < 30, "never in force on the other server"
                time.sleep(0.02)
            assert second.request("DELETE", f"{VALIDATING}/deny-all")[0] == 200
            deleted = time.monotonic()
            while create_cm(first, "a")[0] != 201:
                assert time.monotonic() - deleted < 30, "still in force on the other server"
                time.sleep(0.02)
        finally:
            stop_server(second)
    finally:
        stop_server(first)


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
            {"code": 200, "message": "m",
             "details": {"causes": [{"field": "data", "message": "x"}]}},
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
def test_denials(server: Server, hooks: WebhookServer, status: Obj, code: int, body: Obj) -> None:
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
        code, headers, _ = raw_request(server, "DELETE", f"{CMS}/a")
        assert code == 200
        assert headers["warning"] == '299 - "mind the gap"'
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
        assert waiting.is_alive()  # still held by its webhook
        assert not results
    finally:
        release.set()
        waiting.join(30)
    assert results[0][0] == 201


# -- mutating webhooks ------------------------------------------------------------------------


def _add_label(key: str, value: str) -> Any:
    def handler(review: Obj, _: dict[str, str]) -> Reply:
        obj = review["request"]["object"]
        if "labels" in obj["metadata"]:
            patch = [{"op": "add", "path": f"/metadata/labels/{key}", "value": value}]
        else:
            patch = [{"op": "add", "path": "/metadata/labels", "value": {key: value}}]
        return review_answer(review, patch=patch)

    return handler


def _note_labels(review: Obj, _: dict[str, str]) -> Reply:
    """Sets annotation ``seen`` to the labels the object has."""
    obj = review["request"]["object"]
    seen = ",".join(sorted(obj["metadata"].get("labels") or {}))
    if "annotations" in obj["metadata"]:
        patch = [{"op": "add", "path": "/metadata/annotations/seen", "value": seen}]
    else:
        patch = [{"op": "add", "path": "/metadata/annotations", "value": {"seen": seen}}]
    return review_answer(review, patch=patch)


def test_a_json_patch_changes_the_stored_object(server: Server, hooks: WebhookServer) -> None:
    hooks.handlers["/label"] = _add_label("team", "blue")
    mutating(server, "label", webhook("label.example.com", hooks.url_config("/label")))
    code, created = create_cm(server, "a")
    assert code == 201, created
    assert created["metadata"]["labels"] == {"team": "blue"}
    code, stored = server.request("GET", f"{CMS}/a")
    assert stored["metadata"]["labels"] == {"team": "blue"}


@pytest.mark.parametrize("policy", ["IfNeeded", "Never"])
def test_reinvocation(server: Server, hooks: WebhookServer, policy: str) -> None:
    """A (first, by configuration name) notes the labels it sees; B (after it) adds one. With
    IfNeeded, A is called again and sees B's label; B, whose policy is Never, is not."""
    hooks.handlers["/a"] = _note_labels
    hooks.handlers["/b"] = _add_label("b", "yes")
    mutating(
        server, "1-notes", webhook("a.example.com", hooks.url_config("/a"),
                                   reinvocationPolicy=policy)
    )  # fmt: skip
    mutating(server, "2-labels", webhook("b.example.com", hooks.url_config("/b")))
    code, created = create_cm(server, "x")
    assert code == 201, created
    assert created["metadata"]["labels"] == {"b": "yes"}
    again = policy == "IfNeeded"
    assert created["metadata"]["annotations"] == {"seen": "b" if again else ""}
    assert len(hooks.calls_to("/a")) == (2 if again else 1)
    assert len(hooks.calls_to("/b")) == 1


def test_the_next_webhook_sees_a_patch_defaulted(server: Server, hooks: WebhookServer) -> None:
    """kube defaults each webhook's patched object before calling the next: a port added
    without a protocol reaches the second webhook with ``protocol: TCP`` and its targetPort."""
    rules = [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
              "resources": ["services"]}]  # fmt: skip
    port = {"op": "add", "path": "/spec/ports/-", "value": {"name": "extra", "port": 81}}
    hooks.handlers["/port"] = lambda review, _: review_answer(review, patch=[port])
    hooks.handlers["/sees"] = allow
    mutating(server, "1-port", webhook("port.example.com", hooks.url_config("/port"), rules=rules))
    mutating(server, "2-sees", webhook("sees.example.com", hooks.url_config("/sees"), rules=rules))
    body = {"metadata": {"name": "svc"}, "spec": {"ports": [{"name": "web", "port": 80}]}}
    code, created = server.request("POST", "/api/v1/namespaces/default/services", body)
    assert code == 201, created
    [seen] = hooks.calls_to("/sees")
    assert seen.review is not None
    ports = seen.review["request"]["object"]["spec"]["ports"]
    assert ports[1] == {"name": "extra", "port": 81, "protocol": "TCP", "targetPort": 81}


def test_a_patch_of_a_delete_is_refused(server: Server, hooks: WebhookServer) -> None:
    hooks.handlers["/patch"] = lambda review, _: review_answer(
        review, patch=[{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}]
    )
    assert create_cm(server, "a")[0] == 201
    rule = {**CONFIGMAP_RULE, "operations": ["DELETE"]}
    mutating(server, "m", webhook("patcher.example.com", hooks.url_config("/patch"), rules=[rule]))
    code, answer = server.request("DELETE", f"{CMS}/a")
    assert code == 500
    assert answer["message"] == (
        'Internal error occurred: admission webhook "patcher.example.com" attempted to modify '
        "the object, which is not supported for this operation"
    )


def test_equivalent_versions(server: Server, hooks: WebhookServer) -> None:
    """A webhook for autoscaling/v2 HPAs sees a write of autoscaling/v1 as v2 (matchPolicy
    Equivalent, the default), and its patch comes back into the v1 object; with Exact it is
    not called."""
    hooks.handlers["/hpa"] = _add_label("seen", "v2")
    rule = {"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v2"],
            "resources": ["horizontalpodautoscalers"]}  # fmt: skip
    mutating(
        server,
        "hpa",
        webhook("exact.example.com", hooks.url_config("/hpa"), rules=[rule], matchPolicy="Exact"),
        webhook("equivalent.example.com", hooks.url_config("/hpa"), rules=[rule]),
    )
    hpa = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "maxReplicas": 3,
            "targetCPUUtilizationPercentage": 50,
        },
    }
    code, created = server.request(
        "POST", "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers", hpa
    )
    assert code == 201, created
    assert created["apiVersion"] == "autoscaling/v1"
    assert created["metadata"]["labels"] == {"seen": "v2"}
    assert created["spec"]["targetCPUUtilizationPercentage"] == 50
    [call] = hooks.calls_to("/hpa")
    request = call.review["request"]  # type: ignore[index]
    assert request["kind"] == {"group": "autoscaling", "version": "v2",
                               "kind": "HorizontalPodAutoscaler"}  # fmt: skip
    assert request["resource"]["version"] == "v2"
    assert request["requestKind"]["version"] == "v1"
    assert request["requestResource"]["version"] == "v1"
    assert request["object"]["apiVersion"] == "autoscaling/v2"
    assert request["object"]["spec"]["metrics"][0]["resource"]["name"] == "cpu"


def test_the_scale_subresource_is_sent_as_a_scale(server: Server, hooks: WebhookServer) -> None:
    hooks.handlers["/scale"] = lambda review, _: review_answer(
        review, patch=[{"op": "replace", "path": "/spec/replicas", "value": 2}]
    )
    rule = {"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
            "resources": ["deployments/scale"]}  # fmt: skip
    mutating(server, "scale", webhook("cap.example.com", hooks.url_config("/scale"), rules=[rule]))
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    labels = {"app": "d"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    assert server.request("POST", deployments, deployment)[0] == 201
    code, scaled = server.request(
        "PATCH",
        f"{deployments}/d/scale",
        {"spec": {"replicas": 9}},
        content_type="application/merge-patch+json",
    )
    assert code == 200, scaled
    assert scaled["spec"]["replicas"] == 2
    request = hooks.calls_to("/scale")[0].review["request"]  # type: ignore[index]
    assert request["kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert request["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert request["subResource"] == "scale"
    assert request["object"]["kind"] == "Scale"
    assert request["object"]["spec"] == {"replicas": 9}
    assert request["oldObject"]["spec"] == {"replicas": 1}
    assert server.request("GET", f"{deployments}/d")[1]["spec"]["replicas"] == 2


# -- which writes a webhook sees --------------------------------------------------------------


def _deny(review: Obj, _: dict[str, str]) -> Reply:
    return review_answer(review, False, status={"message": "denied"})


def test_namespace_selector(server: Server, hooks: WebhookServer) -> None:
    hooks.handlers["/deny"] = _deny
    for name, labels in (("in", {"hooked": "yes"}), ("out", {})):
        body = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": labels},
        }
        assert server.request("POST", "/api/v1/namespaces", body)[0] == 201
    validating(
        server,
        "ns",
        webhook("ns.example.com", hooks.url_config("/deny"),
                namespaceSelector={"matchLabels": {"hooked": "yes"}}),
    )  # fmt: skip
    assert create_cm(server, "a", "in")[0] == 400
    assert create_cm(server, "a", "out")[0] == 201
    assert create_cm(server, "a", "default")[0] == 201


def test_object_selector(server: Server, hooks: WebhookServer) -> None:
    hooks.handlers["/deny"] = _deny
    assert create_cm(server, "labelled", labels={"check": "yes"})[0] == 201
    validating(
        server,
        "objects",
        webhook("objects.example.com", hooks.url_config("/deny"),
                objectSelector={"matchLabels": {"check": "yes"}}),
    )  # fmt: skip
    assert create_cm(server, "a", labels={"check": "yes"})[0] == 400
    assert create_cm(server, "b", labels={"check": "no"})[0] == 201
    # an update taking the label away is still seen: the old object has it
    current = server.request("GET", f"{CMS}/labelled")[1]
    current["metadata"]["labels"] = {}
    assert server.request("PUT", f"{CMS}/labelled", current)[0] == 400


def test_match_conditions(server: Server, hooks: WebhookServer) -> None:
    hooks.handlers["/deny"] = _deny
    conditions = [
        {"name": "x-only", "expression": "object.metadata.name.startsWith('x')"},
        {"name": "creates", "expression": "request.operation == 'CREATE' && oldObject == null"},
    ]
    validating(server, "conditions", webhook("conditions.example.com", hooks.url_config("/deny"),
                                             matchConditions=conditions))  # fmt: skip
    assert create_cm(server, "xa")[0] == 400
    assert create_cm(server, "ya")[0] == 201
    assert len(hooks.calls_to("/deny")) == 1


def test_match_conditions_ask_the_authorizer(server: Server, hooks: WebhookServer) -> None:
    """kube's webhook match conditions have ``authorizer`` (the documented break-glass
    condition): checks for the request's user through the server's authorizer."""
    hooks.handlers["/deny"] = _deny
    breakglass = (
        "!authorizer.group('admissionregistration.k8s.io')"
        ".resource('validatingwebhookconfigurations').name('glass.example.com')"
        ".check('breakglass').allowed()"
    )
    conditions = [
        {"name": "breakglass", "expression": breakglass},
        {
            "name": "may-create",
            "expression": "authorizer.requestResource.check('create').allowed()",
        },
    ]
    validating(server, "glass", webhook("glass.example.com", hooks.url_config("/deny"),
                                        matchConditions=conditions))  # fmt: skip
    # the administrator (system:masters) may break the glass: the webhook is not called
    assert create_cm(server, "by-admin")[0] == 201
    assert hooks.calls_to("/deny") == []
    # a user who may only create configmaps meets the webhook
    rules = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]
    create(server, f"{RBAC}/namespaces/default/roles", role("cm-writer", rules))
    create(
        server,
        f"{RBAC}/namespaces/default/rolebindings",
        binding("cm-writer", "Role", "cm-writer", [user("dev")], "default"),
    )
    dev = user_cert(server, "dev")
    code, answer = server.request("POST", CMS, configmap("by-dev"), cert=dev)
    assert code == 400, answer
    assert len(hooks.calls_to("/deny")) == 1


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_a_match_condition_that_fails(server: Server, hooks: WebhookServer, policy: str) -> None:
    hooks.handlers["/deny"] = _deny
    conditions = [{"name": "data", "expression": "object.data.k == 'v'"}]
    validating(
        server,
        "conditions",
        webhook("conditions.example.com", hooks.url_config("/deny"),
                matchConditions=conditions, failurePolicy=policy),
    )  # fmt: skip
    code, answer = create_cm(server, "a")
    if policy == "Ignore":
        assert code == 201
    else:
        assert (code, answer["reason"]) == (403, "Forbidden")
        assert answer["message"] == (
            "configmaps \"a\" is forbidden: expression 'object.data.k == 'v'' resulted in "
            "error: no such key: data"
        )
        assert answer["details"] == {"name": "a", "kind": "configmaps"}
    assert not hooks.calls_to("/deny")


def test_dry_run(server: Server, hooks: WebhookServer) -> None:
    hooks.handlers["/check"] = allow
    validating(
        server,
        "dry",
        webhook("clean.example.com", hooks.url_config("/check"), sideEffects="NoneOnDryRun"),
    )
    code, _ = server.request("POST", f"{CMS}?dryRun=All", configmap("a"))
    assert code == 201
    request = hooks.calls_to("/check")[0].review["request"]  # type: ignore[index]
    assert request["dryRun"] is True
    assert request["options"]["dryRun"] == ["All"]
    assert server.request("GET", f"{CMS}/a")[0] == 404


def test_dry_run_with_side_effects(server: Server, hooks: WebhookServer) -> None:
    """kube's v1 validation allows only None and NoneOnDryRun; a configuration stored with
    another value (written through an older version) refuses dry runs."""
    hooks.handlers["/check"] = allow
    validating(server, "dry", webhook("effects.example.com", hooks.url_config("/check"),
                                      sideEffects="Some"))  # fmt: skip
    code, answer = server.request("POST", f"{CMS}?dryRun=All", configmap("a"))
    assert (code, answer["reason"]) == (400, "BadRequest")
    assert answer["message"] == 'admission webhook "effects.example.com" does not support dry run'
    assert not hooks.calls_to("/check")
    assert create_cm(server, "a")[0] == 201


def test_a_service_client_config(server: Server, hooks: WebhookServer) -> None:
    """A Service without selector, its Endpoints at the webhook server's address; kubelite
    verifies the certificate for hooks.webhooks.svc against the caBundle."""
    hooks.handlers["/svc"] = _deny
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "webhooks"}}
    assert server.request("POST", "/api/v1/namespaces", namespace)[0] == 201
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "hooks"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hooks.port}]},
    }
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "hooks"},
        "subsets": [
            {"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": hooks.port}]}
        ],
    }
    base = "/api/v1/namespaces/webhooks"
    assert server.request("POST", f"{base}/services", service)[0] == 201
    assert server.request("POST", f"{base}/endpoints", endpoints)[0] == 201
    config = {"service": {"namespace": "webhooks", "name": "hooks", "path": "/svc"},
              "caBundle": hooks.ca_bundle}  # fmt: skip
    validating(server, "svc", webhook("svc.example.com", config))
    code, answer = create_cm(server, "a")
    assert code == 400, answer
    assert answer["message"] == 'admission webhook "svc.example.com" denied the request: denied'
    [call] = hooks.calls_to("/svc")
    assert call.server_name == SVC_NAME
    assert call.query == {"timeout": "10s"}


def test_kubectl_shows_the_denial(server: Server, hooks: WebhookServer) -> None:
    hooks.handlers["/deny"] = lambda review, _: review_answer(
        review, False, status={"message": "no configmaps today", "code": 403}
    )
    validating(server, "deny", webhook("deny.example.com", hooks.url_config("/deny")))
    result = server.kubectl("create", "configmap", "k", "--from-literal=a=b", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        'error: failed to create configmap: admission webhook "deny.example.com" denied the '
        "request: no configmaps today"
    )
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k\n"
    result = server.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert re.search(
        r'admission webhook "deny.example.com" denied the request: no configmaps today',
        result.stderr,
    ), result.stderr
