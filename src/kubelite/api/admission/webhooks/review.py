"""AdmissionReview, the body of a webhook call and of its answer (kube's
``webhook/request/admissionreview.go``, k8s.io/api ``admission/v1/types.go``).

:func:`admission_request` is the ``request`` kube sends (also the ``request`` variable of
``matchConditions``); :func:`review_body` wraps it for the version the webhook accepts.
:func:`read_answer` reads what came back the way client-go's REST client does (a non-2xx
status is an error: the webhook's own ``Status`` when it sent one, else apimachinery's generic
text for the code) and :func:`verify` checks it as ``VerifyAdmissionResponse``. Both raise
:class:`InvalidAnswer` with the text kube puts after ``failed calling webhook "<name>": ``.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, NamedTuple

import orjson

from kubelite.api.machinery.admission import CREATE, DELETE, UPDATE, Attributes

Obj = dict[str, Any]

REVIEW_GROUP = "admission.k8s.io"
META_VERSION = "meta.k8s.io/v1"
JSON_PATCH = "JSONPatch"
#: client-go keeps this much of an error body it cannot decode
MAX_ERROR_TEXT = 2048
_OPTIONS = {CREATE: "CreateOptions", UPDATE: "UpdateOptions", DELETE: "DeleteOptions"}


class InvalidAnswer(Exception):
    """The webhook's answer was not one kube accepts (a call failure: the failure policy
    decides)."""


class Answer(NamedTuple):
    """A verified AdmissionResponse."""

    allowed: bool
    #: the decoded JSON patch (None: none)
    patch: bytes | None
    patch_type: str
    #: ``response.status`` as sent (None: absent)
    status: Obj | None
    warnings: list[str]
    audit_annotations: dict[str, str]


class Target(NamedTuple):
    """What an invocation names: the matched resource (an equivalent version's when
    ``matchPolicy: Equivalent`` matched another one) and the kind sent (a subresource's own,
    ``autoscaling/v1`` Scale for ``scale``)."""

    group: str
    version: str
    resource: str
    kind: Obj


def options(attrs: Attributes) -> Obj | None:
    """CreateOptions, UpdateOptions or DeleteOptions as the write had them."""
    kind = _OPTIONS.get(attrs.operation)
    if kind is None:
        return None
    out: Obj = {"kind": kind, "apiVersion": META_VERSION}
    if attrs.options is not None:  # as the client sent them, as kube's handlers pass them
        return {**out, **attrs.options}
    if attrs.dry_run:
        out["dryRun"] = ["All"]
    if attrs.field_manager and attrs.operation != DELETE:
        out["fieldManager"] = attrs.field_manager
    return out


def request_kind(attrs: Attributes) -> Obj:
    """The kind of the request's endpoint (a subresource's own kind: ``autoscaling/v1
    Scale`` for ``scale``)."""
    info = attrs.info
    sub = info.subresource(attrs.subresource) if attrs.subresource else None
    if sub is not None:
        return {"group": sub.group, "version": sub.version, "kind": sub.kind}
    return {"group": info.group, "version": info.version, "kind": info.kind}


def admission_request(
    attrs: Attributes, target: Target, obj: Obj | None, old: Obj | None, uid: str = ""
) -> Obj:
    """The AdmissionRequest of one invocation; ``obj`` and ``old`` in the target's version."""
    info = attrs.info
    request: Obj = {
        "uid": uid,
        "kind": target.kind,
        "resource": {"group": target.group, "version": target.version, "resource": target.resource},
    }
    if attrs.subresource:
        request["subResource"] = attrs.subresource
    request["requestKind"] = request_kind(attrs)
    request["requestResource"] = {
        "group": info.group,
        "version": info.version,
        "resource": info.plural,
    }
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request["operation"] = attrs.operation
    request["userInfo"] = attrs.user.info()
    request["object"] = obj
    request["oldObject"] = old
    request["dryRun"] = attrs.dry_run
    request["options"] = options(attrs)
    return request


def review_body(version: str, request: Obj) -> bytes:
    """The AdmissionReview of ``version`` (``v1`` or ``v1beta1``) carrying ``request``."""
    review = {
        "kind": "AdmissionReview",
        "apiVersion": f"{REVIEW_GROUP}/{version}",
        "request": request,
    }
    return orjson.dumps(review)


# -- the answer --------------------------------------------------------------------------------


def _generic_text(code: int, server_message: str) -> str:
    """apimachinery's ``NewGenericServerResponse`` message for an unexpected status."""
    texts = {
        409: "the server reported a conflict",
        404: "the server could not find the requested resource",
        400: "the server rejected our request for an unknown reason",
        401: "the server has asked for the client to provide credentials",
        403: server_message,
        405: "the server does not allow this method on the requested resource",
        415: server_message,
        422: "the server rejected our request due to an error in our request",
        503: "the server is currently unable to handle the request",
        504: "the server was unable to return a response in the time allotted, but may still "
        "be processing the request",
        429: "the server has received too many requests and has asked us to try again later",
    }
    if code == 406:
        if server_message in ("", "unknown"):
            return "the server was unable to respond with a content type that the client supports"
        return server_message
    if code in texts:
        return texts[code]
    if code >= 500:
        quoted = orjson.dumps(server_message).decode()
        return f"an error on the server ({quoted}) has prevented the request from succeeding"
    return f"the server responded with the status code {code} but did not return more information"


def read_answer(status: int, body: bytes, content_type: str) -> Obj:
    """The AdmissionReview a webhook answered with, read as client-go's REST client reads a
    response (:class:`InvalidAnswer`, whose text follows ``failed to call webhook: ``)."""
    if not 200 <= status <= 206:
        decoded = _json(body) if content_type.endswith("json") else None
        if (
            isinstance(decoded, dict)
            and decoded.get("kind", "Status") == "Status"
            and decoded.get("status") == "Failure"
        ):
            raise InvalidAnswer(f"failed to call webhook: {decoded.get('message') or ''}")
        text = "unknown"
        if content_type.startswith("text/"):
            text = body[:MAX_ERROR_TEXT].decode(errors="replace").strip()
        raise InvalidAnswer(f"failed to call webhook: {_generic_text(status, text)}")
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise InvalidAnswer(
            f"failed to call webhook: couldn't get version/kind; json parse error: {exc}"
        ) from None
    if not isinstance(decoded, dict):
        raise InvalidAnswer(
            "failed to call webhook: couldn't get version/kind; json parse error: json: cannot "
            f"unmarshal {_json_type(decoded)} into Go value of type struct"
        )
    return decoded


def _json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _json_type(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    return "number" if isinstance(value, int | float) else "null"


def _gvk_text(api_version: str, kind: str) -> str:
    """Go's ``GroupVersionKind.String()``: ``admission.k8s.io/v1, Kind=AdmissionReview``."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def verify(review: Obj, uid: str, version: str, mutating: bool) -> Answer:
    """``VerifyAdmissionResponse``: the answer of a webhook sent an AdmissionReview of
    ``version`` with ``uid``, or :class:`InvalidAnswer` (text after ``received invalid webhook
    response: ``, unless it is a decoding error)."""
    response = review.get("response")
    if not isinstance(response, dict):
        raise InvalidAnswer("received invalid webhook response: webhook response was absent")
    allowed = _field(response, "allowed", bool, False)
    status = _field(response, "status", dict, None)
    warnings = [str(w) for w in _field(response, "warnings", list, [])]
    annotations = {
        str(k): str(v) for k, v in _field(response, "auditAnnotations", dict, {}).items()
    }
    encoded = _field(response, "patch", str, "")
    try:
        patch = base64.b64decode(encoded, validate=True) if encoded else None
    except binascii.Error as exc:
        raise InvalidAnswer(f"failed to call webhook: illegal base64 data: {exc}") from None
    patch_type = response.get("patchType")
    if version != "v1":  # v1beta1: neither uid nor kind checked; a patch is a JSON patch
        patch = patch if mutating else None
        return Answer(allowed, patch, JSON_PATCH if patch else "", status, warnings, annotations)

    def invalid(text: str) -> InvalidAnswer:
        return InvalidAnswer(f"received invalid webhook response: {text}")

    got_uid = str(response.get("uid") or "")
    if got_uid != uid:
        raise invalid(f'expected response.uid="{uid}", got "{got_uid}"')
    expected = f"{REVIEW_GROUP}/v1"
    api_version, kind = str(review.get("apiVersion") or ""), str(review.get("kind") or "")
    if (api_version, kind) != (expected, "AdmissionReview"):
        raise invalid(
            f"expected webhook response of {_gvk_text(expected, 'AdmissionReview')}, "
            f"got {_gvk_text(api_version, kind)}"
        )
    if mutating:
        if patch and patch_type is None:
            raise invalid("webhook returned response.patch but not response.patchType")
        if not patch and patch_type is not None:
            raise invalid("webhook returned response.patchType but not response.patch")
        if patch_type is not None and not patch_type:
            raise invalid('webhook returned invalid response.patchType of ""')
    else:
        if patch:
            raise invalid("validating webhook may not return response.patch")
        if patch_type is not None:
            raise invalid("validating webhook may not return response.patchType")
    return Answer(allowed, patch, str(patch_type or ""), status, warnings, annotations)


def _field(response: Obj, key: str, kind: type, default: Any) -> Any:
    """A response field, absent or null: ``default``; of another JSON type: the decoding error
    Go's unmarshalling gives."""
    value = response.get(key)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        go_type = {bool: "bool", dict: "map", list: "slice", str: "string"}[kind]
        raise InvalidAnswer(
            f"failed to call webhook: json: cannot unmarshal {_json_type(value)} into Go struct "
            f"field AdmissionResponse.response.{key} of type {go_type}"
        )
    return value
