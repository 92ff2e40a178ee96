"""Admission webhooks without a network: the AdmissionReview sent and the checks of the answer
(kube's texts), denials, match conditions, the hooks' order and defaults, equivalent versions,
and both dispatchers over a fake client (sequential patches and reinvocation; concurrent calls
and the first refusal in order)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from kubelite.api.admission.webhooks import MutatingWebhooks, ValidatingWebhooks
from kubelite.api.admission.webhooks.calling import denial
from kubelite.api.admission.webhooks.conditions import ConditionError, conditions_match
from kubelite.api.admission.webhooks.matching import Invocation, Views, equivalents
from kubelite.api.admission.webhooks.review import (
    InvalidAnswer,
    Target,
    admission_request,
    read_answer,
    verify,
)
from kubelite.api.admission.webhooks.source import Hook, hooks_of
from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.errors import APIError
from kubelite.api.machinery.admission import CREATE, DELETE, Admission, Attributes, Reinvocation
from kubelite.api.machinery.rest import Warnings
from kubelite.api.machinery.user import ADMIN
from kubelite.api.machinery.webhookclient import CallFailed, Response

Obj = dict[str, Any]
UID = "3f1e4c9a-0000-4000-8000-000000000001"


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


def info_of(catalogue: Catalogue, group: str, version: str, plural: str) -> ResourceInfo:
    info = catalogue.lookup(group, version, plural)
    assert info is not None
    return info


def attributes(catalogue: Catalogue, obj: Obj | None = None, **fields: Any) -> Attributes:
    info = info_of(catalogue, "", "v1", "configmaps")
    if obj is None and fields.get("operation", CREATE) != DELETE:
        obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    base: Obj = {
        "operation": CREATE,
        "info": info,
        "namespace": "default",
        "name": "a",
        "obj": obj,
        "old": None,
        "user": ADMIN,
        "warnings": Warnings(),
        "audit_annotations": {},
    }
    base.update(fields)
    return Attributes(**base)


def hook(name: str = "h.example.com", mutating: bool = False, **spec: Any) -> Hook:
    fields: Obj = {
        "name": name,
        "clientConfig": {"url": "https://127.0.0.1:1/"},
        "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                   "resources": ["*"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }  # fmt: skip
    fields.update(spec)
    return Hook("config", 0, fields, mutating)


# -- the review ---------------------------------------------------------------------------------


def test_the_request_of_a_create(catalogue: Catalogue) -> None:
    attrs = attributes(catalogue, dry_run=True, field_manager="kubectl-create")
    target = Target("", "v1", "configmaps", {"group": "", "version": "v1", "kind": "ConfigMap"})
    request = admission_request(attrs, target, attrs.obj, None, UID)
    assert request == {
        "uid": UID,
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "requestKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "requestResource": {"group": "", "version": "v1", "resource": "configmaps"},
        "name": "a",
        "namespace": "default",
        "operation": "CREATE",
        "userInfo": {"username": "kubelite-admin",
                     "groups": ["system:masters", "system:authenticated"]},
        "object": attrs.obj,
        "oldObject": None,
        "dryRun": True,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"],
                    "fieldManager": "kubectl-create"},
    }  # fmt: skip


def answer(**response: Any) -> Obj:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": UID, **response}}  # fmt: skip


def b64(ops: list[Obj]) -> str:
    return base64.b64encode(json.dumps(ops).encode()).decode()


@pytest.mark.parametrize(
    ("review", "mutating", "text"),
    [
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, False,
         "received invalid webhook response: webhook response was absent"),
        (answer(uid="x", allowed=True), False,
         f'received invalid webhook response: expected response.uid="{UID}", got "x"'),
        ({**answer(allowed=True), "apiVersion": "admission.k8s.io/v1beta1"}, False,
         "received invalid webhook response: expected webhook response of admission.k8s.io/v1,"
         " Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview"),
        ({"response": {"uid": UID, "allowed": True}}, False,
         "received invalid webhook response: expected webhook response of admission.k8s.io/v1,"
         " Kind=AdmissionReview, got /, Kind="),
        (answer(allowed=True, patch=b64([])), True,
         "received invalid webhook response: webhook returned response.patch but not "
         "response.patchType"),
        (answer(allowed=True, patchType="JSONPatch"), True,
         "received invalid webhook response: webhook returned response.patchType but not "
         "response.patch"),
        (answer(allowed=True, patch=b64([]), patchType=""), True,
         'received invalid webhook response: webhook returned invalid response.patchType of ""'),
        (answer(allowed=True, patch=b64([])), False,
         "received invalid webhook response: validating webhook may not return response.patch"),
        (answer(allowed=True, patchType="JSONPatch"), False,
         "received invalid webhook response: validating webhook may not return "
         "response.patchType"),
        (answer(allowed="yes"), False,
         "failed to call webhook: json: cannot unmarshal string into Go struct field "
         "AdmissionResponse.response.allowed of type bool"),
    ],
)  # fmt: skip
def test_invalid_answers(review: Obj, mutating: bool, text: str) -> None:
    with pytest.raises(InvalidAnswer) as caught:
        verify(review, UID, "v1", mutating)
    assert str(caught.value) == text


def test_a_valid_answer() -> None:
    ops = [{"op": "add", "path": "/x", "value": 1}]
    got = verify(
        answer(allowed=True, patch=b64(ops), patchType="JSONPatch", warnings=["w"],
               auditAnnotations={"k": "v"}),
        UID, "v1", True,
    )  # fmt: skip
    assert got.allowed
    assert json.loads(got.patch or b"") == ops
    assert (got.patch_type, got.warnings, got.audit_annotations) == ("JSONPatch", ["w"], {"k": "v"})


def test_v1beta1_answers_are_not_checked_for_uid_or_kind() -> None:
    review = {"response": {"uid": "other", "allowed": True, "patch": b64([])}}
    got = verify(review, UID, "v1beta1", True)
    assert (got.allowed, got.patch_type) == (True, "JSONPatch")


@pytest.mark.parametrize(
    ("status", "body", "content_type", "text"),
    [
        (500, b"boom\n", "text/plain",
         'an error on the server ("boom") has prevented the request from succeeding'),
        (500, b"{}", "application/json",
         'an error on the server ("unknown") has prevented the request from succeeding'),
        (503, b'{"kind":"Status","status":"Failure","message":"later"}', "application/json",
         "later"),
        (404, b"", "text/plain", "the server could not find the requested resource"),
        (400, b"", "text/plain", "the server rejected our request for an unknown reason"),
        (403, b"go away", "text/plain", "go away"),
        (302, b"", "text/html",
         "the server responded with the status code 302 but did not return more information"),
        (200, b"[1]", "application/json",
         "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go "
         "value of type struct"),
    ],
)  # fmt: skip
def test_what_client_go_makes_of_an_answer(
    status: int, body: bytes, content_type: str, text: str
) -> None:
    with pytest.raises(InvalidAnswer) as caught:
        read_answer(status, body, content_type)
    assert str(caught.value) == f"failed to call webhook: {text}"


@pytest.mark.parametrize(
    ("status", "code", "reason", "message"),
    [
        (None, 400, "", "denied the request without explanation"),
        ({"code": 200, "message": "m"}, 400, "", "denied the request: m"),
        ({"code": 429, "reason": "TooManyRequests"}, 429, "TooManyRequests",
         "denied the request: TooManyRequests"),
        ({"message": "m", "reason": "R", "code": 403}, 403, "R", "denied the request: m"),
    ],
)  # fmt: skip
def test_denials(status: Obj | None, code: int, reason: str, message: str) -> None:
    error = denial(hook("d.example.com"), status)
    assert (error.code, error.reason) == (code, reason)
    assert error.message == f'admission webhook "d.example.com" {message}'


# -- match conditions -----------------------------------------------------------------------------


def match(*expressions: str, ignore: bool = False, obj: Obj | None = None) -> bool:
    conditions = tuple((f"c{i}", e) for i, e in enumerate(expressions))
    obj = obj if obj is not None else {"metadata": {"name": "a"}}
    return conditions_match(conditions, obj, None, {"operation": "CREATE"}, ignore)


def test_conditions() -> None:
    assert match("object.metadata.name == 'a'", "request.operation == 'CREATE'")
    assert match("oldObject == null")
    assert not match("object.metadata.name == 'b'")
    # any false wins over errors
    assert not match("object.spec.x == 1", "false")
    assert not match("object.spec.x == 1", ignore=True)
    with pytest.raises(ConditionError) as caught:
        match("object.spec.x == 1")
    assert (
        str(caught.value) == "expression 'object.spec.x == 1' resulted in error: no such key: spec"
    )
    with pytest.raises(ConditionError) as caught:
        match("'x'", "nope")
    assert str(caught.value).startswith(
        "[compilation error: must evaluate to bool but got string, compilation error: "
        "compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope'"
    )


# -- hooks and versions -------------------------------------------------------------------------


def test_hooks_in_calling_order_with_their_defaults() -> None:
    configurations = {
        "b": {"webhooks": [{"name": "b1"}, {"name": "b2", "timeoutSeconds": 3}]},
        "a": {"webhooks": [{"name": "a1", "admissionReviewVersions": ["v2", "v1beta1", "v1"]}]},
    }
    hooks = hooks_of(configurations, mutating=True)
    assert [(h.configuration, h.index, h.name) for h in hooks] == [
        ("a", 0, "a1"),
        ("b", 0, "b1"),
        ("b", 1, "b2"),
    ]
    assert [h.timeout for h in hooks] == [10, 10, 3]
    assert [h.review_version for h in hooks] == ["v1beta1", None, None]
    assert hooks[2].uid == "b/b2/1"
    assert not hooks[0].ignores_failures
    assert not hooks[0].exact


def test_equivalents(catalogue: Catalogue) -> None:
    events = info_of(catalogue, "", "v1", "events")
    assert [(i.group, i.version) for i in equivalents(catalogue, events)] == [
        ("events.k8s.io", "v1")
    ]
    hpa = info_of(catalogue, "autoscaling", "v1", "horizontalpodautoscalers")
    assert [(i.group, i.version) for i in equivalents(catalogue, hpa)] == [("autoscaling", "v2")]
    assert equivalents(catalogue, info_of(catalogue, "", "v1", "configmaps")) == []


def test_views_convert_and_write_back(catalogue: Catalogue) -> None:
    v1 = info_of(catalogue, "autoscaling", "v1", "horizontalpodautoscalers")
    v2 = info_of(catalogue, "autoscaling", "v2", "horizontalpodautoscalers")
    obj = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {"maxReplicas": 3, "targetCPUUtilizationPercentage": 50},
    }
    attrs = attributes(catalogue, obj, info=v1)
    views = Views(attrs)
    kind = {"group": "autoscaling", "version": "v2", "kind": "HorizontalPodAutoscaler"}
    invocation = Invocation(hook(), v2, Target("autoscaling", "v2", v2.plural, kind))
    seen, old = views.get(invocation)
    assert seen is not None
    assert seen["apiVersion"] == "autoscaling/v2"
    assert old is None
    views.replace(invocation, {**seen, "spec": {**seen["spec"], "maxReplicas": 7}})
    assert views.write_back()
    assert obj["apiVersion"] == "autoscaling/v1"
    assert obj["spec"] == {"maxReplicas": 7, "targetCPUUtilizationPercentage": 50}


# -- the dispatchers over a fake client ------------------------------------------------------------


Answerer = Callable[[str, Obj], Obj | Exception]


class FakeClient:
    """Answers each call with what ``answerer(url, request)`` gives (a response to wrap, or an
    exception to raise); records the calls and how many ran at once."""

    def __init__(self, answerer: Answerer, delay: float = 0.0) -> None:
        self.answerer = answerer
        self.delay = delay
        self.calls: list[tuple[str, Obj]] = []
        self.versions: list[str] = []
        self.running = self.most = 0

    async def call(self, config: Obj, body: bytes, seconds: float, query: str = "") -> Response:
        review = json.loads(body)
        self.calls.append((config["url"], review["request"]))
        self.versions.append(review["apiVersion"])
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(self.delay)
        finally:
            self.running -= 1
        result = self.answerer(config["url"], review["request"])
        if isinstance(result, Exception):
            raise result
        wrapped = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                   "response": {"uid": review["request"]["uid"], **result}}  # fmt: skip
        return Response(200, json.dumps(wrapped).encode(), "application/json")


class FakeSource:
    def __init__(self, validating: list[Hook] = (), mutating: list[Hook] = ()) -> None:  # type: ignore[assignment]
        self.validating = tuple(validating)
        self.mutating = tuple(mutating)


def at(url: str, name: str, mutating: bool = False, **spec: Any) -> Hook:
    return hook(name, mutating, clientConfig={"url": url}, **spec)


async def no_namespaces(name: str) -> None:
    return None


def plugins(catalogue: Catalogue, source: FakeSource, client: FakeClient) -> Admission:
    args: Any = (source, client, None, catalogue, no_namespaces)
    return Admission(
        [MutatingWebhooks(*args, default=lambda info, obj: None)], [ValidatingWebhooks(*args)]
    )


async def test_validating_webhooks_are_called_together_and_the_first_refusal_wins(
    catalogue: Catalogue,
) -> None:
    def answerer(url: str, request: Obj) -> Obj | Exception:
        if url == "down":
            return CallFailed('failed to call webhook: Post "down": EOF')
        return {"allowed": url == "ok", "status": {"message": url}}

    hooks = [at("ok", "ok.x"), at("first", "first.x"), at("down", "down.x",
             failurePolicy="Ignore"), at("second", "second.x")]  # fmt: skip
    client = FakeClient(answerer, delay=0.05)
    attrs = attributes(catalogue)
    with pytest.raises(APIError) as caught:
        await plugins(catalogue, FakeSource(hooks), client).validate(attrs)
    assert caught.value.message == 'admission webhook "first.x" denied the request: first'
    assert client.most == 4
    assert attrs.audit_annotations == {
        "failed-open.validating.webhook.admission.k8s.io/round_0_index_2": "down.x"
    }


async def test_exempt_kinds_are_never_sent(catalogue: Catalogue) -> None:
    client = FakeClient(lambda url, request: {"allowed": False})
    info = info_of(
        catalogue, "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"
    )
    attrs = attributes(catalogue, {"metadata": {"name": "a"}}, info=info, namespace=None)
    await plugins(catalogue, FakeSource([at("x", "x.x")], [at("y", "y.x", True)]), client).admit(
        attrs
    )
    await plugins(catalogue, FakeSource([at("x", "x.x")]), client).validate(attrs)
    assert client.calls == []


def label_patch(key: str) -> Callable[[Obj], Obj]:
    def answer(request: Obj) -> Obj:
        labels = request["object"]["metadata"].get("labels")
        if labels is None:
            ops = [{"op": "add", "path": "/metadata/labels", "value": {key: "y"}}]
        else:
            ops = [{"op": "add", "path": f"/metadata/labels/{key}", "value": "y"}]
        return {"allowed": True, "patchType": "JSONPatch", "patch": b64(ops)}

    return answer


async def test_mutating_reinvocation_rounds(catalogue: Catalogue) -> None:
    """a (IfNeeded) labels, b (Never) labels after it: a is called again in round 1, b not;
    c (IfNeeded) after b changes nothing and is not called again either."""
    answers = {"a": label_patch("a"), "b": label_patch("b"), "c": lambda r: {"allowed": True}}
    client = FakeClient(lambda url, request: answers[url](request))
    hooks = [
        at("a", "a.x", True, reinvocationPolicy="IfNeeded"),
        at("b", "b.x", True),
        at("c", "c.x", True, reinvocationPolicy="IfNeeded"),
    ]
    attrs = attributes(catalogue)
    await plugins(catalogue, FakeSource((), hooks), client).admit(attrs)
    assert [url for url, _ in client.calls] == ["a", "b", "c", "a"]
    assert attrs.obj is not None
    assert attrs.obj["metadata"]["labels"] == {"a": "y", "b": "y"}
    assert client.calls[3][1]["object"]["metadata"]["labels"] == {"a": "y", "b": "y"}
    annotations = attrs.audit_annotations or {}
    assert json.loads(annotations["mutation.webhook.admission.k8s.io/round_0_index_0"]) == {
        "configuration": "config", "webhook": "a.x", "mutated": True}  # fmt: skip
    assert json.loads(annotations["mutation.webhook.admission.k8s.io/round_1_index_0"])[
        "mutated"] is False  # fmt: skip


async def test_a_mutating_failure_under_ignore_goes_on(catalogue: Catalogue) -> None:
    answers: dict[str, Callable[[Obj], Obj | Exception]] = {
        "down": lambda r: CallFailed("failed to call webhook: boom"),
        "b": label_patch("b"),
    }
    client = FakeClient(lambda url, request: answers[url](request))
    hooks = [at("down", "down.x", True, failurePolicy="Ignore"), at("b", "b.x", True)]
    attrs = attributes(catalogue, reinvocation=Reinvocation())
    await plugins(catalogue, FakeSource((), hooks), client).admit(attrs)
    assert attrs.obj is not None
    assert attrs.obj["metadata"]["labels"] == {"b": "y"}
    annotations = attrs.audit_annotations or {}
    assert annotations["failed-open.mutation.webhook.admission.k8s.io/round_0_index_0"] == "down.x"
    with pytest.raises(APIError) as caught:
        await plugins(catalogue, FakeSource((), [at("down", "down.x", True)]), client).admit(
            attributes(catalogue)
        )
    assert caught.value.code == 500
    assert caught.value.message == (
        'Internal error occurred: failed calling webhook "down.x": failed to call webhook: boom'
    )


async def test_a_patch_that_does_not_apply(catalogue: Catalogue) -> None:
    ops = [{"op": "replace", "path": "/spec/missing", "value": 1}]
    client = FakeClient(lambda url, request: {"allowed": True, "patchType": "JSONPatch",
                                              "patch": b64(ops)})  # fmt: skip
    with pytest.raises(APIError) as caught:
        await plugins(catalogue, FakeSource((), [at("p", "p.x", True)]), client).admit(
            attributes(catalogue)
        )
    assert caught.value.code == 500
    assert caught.value.message.startswith("Internal error occurred: ")


async def test_a_patch_whose_copies_add_more_than_3_mib(catalogue: Catalogue) -> None:
    """kube applies a webhook's patch with json-patch's copy limit (JSONPatchMaxCopyBytes) and
    answers its error as an internal one."""
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
           "data": {"a": "x" * 1_000_000}}  # fmt: skip
    ops = [{"op": "copy", "from": "/data/a", "path": f"/data/{key}"} for key in "bcde"]
    client = FakeClient(lambda url, request: {"allowed": True, "patchType": "JSONPatch",
                                              "patch": b64(ops)})  # fmt: skip
    admission = plugins(catalogue, FakeSource((), [at("p", "p.x", True)]), client)
    with pytest.raises(APIError) as caught:
        await admission.admit(attributes(catalogue, big))
    assert (caught.value.code, caught.value.message) == (
        500,
        "Internal error occurred: Unable to complete the copy, the accumulated size increase of "
        "copy is 4000008, exceeding the limit 3145728",
    )
    attrs = attributes(catalogue, big)
    client.answerer = lambda url, request: {"allowed": True, "patchType": "JSONPatch",
                                            "patch": b64(ops[:3])}  # fmt: skip
    await admission.admit(attrs)  # 3,000,006 bytes copied
    assert attrs.obj is not None
    assert sorted(attrs.obj["data"]) == ["a", "b", "c", "d"]


async def test_a_webhook_without_a_known_review_version(catalogue: Catalogue) -> None:
    client = FakeClient(lambda url, request: {"allowed": True})
    hooks = [at("v2", "v2.x", admissionReviewVersions=["v2"])]
    with pytest.raises(APIError) as caught:
        await plugins(catalogue, FakeSource(hooks), client).validate(attributes(catalogue))
    assert caught.value.message == (
        'Internal error occurred: failed calling webhook "v2.x": could not create admission '
        "objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)"
    )
    assert client.calls == []


async def test_v1beta1_reviews(catalogue: Catalogue) -> None:
    seen: list[Obj] = []

    def answerer(url: str, request: Obj) -> Obj:
        seen.append(request)
        return {"allowed": True}

    client = FakeClient(answerer)
    hooks = [at("old", "old.x", admissionReviewVersions=["v1beta1"])]
    await plugins(catalogue, FakeSource(hooks), client).validate(attributes(catalogue))
    assert seen[0]["operation"] == "CREATE"
    assert client.versions == ["admission.k8s.io/v1beta1"]
