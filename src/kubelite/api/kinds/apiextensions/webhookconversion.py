"""A CRD's conversion webhook at work (apiextensions-apiserver's webhook_converter.go): the
:class:`~kubelite.api.encoding.stored.VersionConverter` of a kind whose CRD says
``conversion.strategy: Webhook``.

One call converts every object not already at the desired version (none: no call): ``POST``
``{"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": {"uid",
"desiredAPIVersion", "objects"}}`` (``v1beta1`` when the CRD lists it first) to the webhook, with
``?timeout=30s``, through the server's one
:class:`~kubelite.api.machinery.webhookclient.WebhookClient`. The answer is checked as kube checks
it: the review's kind (v1), ``response`` present, its ``uid`` echoed (v1), ``result.status`` Success
(else its message), as many objects as sent, each at the desired apiVersion with the same kind,
name, namespace and UID; its metadata is then the original's but for labels and annotations, which
the webhook may change (and which are then validated). A converted object is pruned by its version's
schema (apiextensions' schemaCoercingConverter).

A failure is a 500 without a reason (kube-apiserver's answer to an error that is not a Status):
``conversion webhook for <group>/<version>, Kind=<Kind> failed: <why>``, the GVK being the
object's before conversion. A page of a list goes in one review; its failures read as kube's
for one object (the object at fault; a call failure names the first object sent), because
kube-apiserver's storage decodes a list's items one at a time and its clients see those texts.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import orjson

from kubelite.api import errors
from kubelite.api.apiextensions import schema as crschema
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding.stored import clone_value
from kubelite.api.errors import APIError, Cause, go_quote
from kubelite.api.kinds.apiextensions.crdconversion import REVIEW_VERSIONS
from kubelite.api.machinery.metavalidation import annotation_causes, label_causes
from kubelite.api.machinery.webhookclient import CallFailed, WebhookClient

Obj = dict[str, Any]
ClientSource = Callable[[], WebhookClient | None]

#: kube-apiserver's webhook clients time out after 30 s (apiserver util/webhook)
TIMEOUT_SECONDS = 30.0
REVIEW_GROUP = "apiextensions.k8s.io"
_CALL_PREFIX = "failed to call webhook: "
_MAX_TEXT = 2048  # client-go's maxUnstructuredResponseTextBytes


class _Failed(Exception):
    """A check of the answer failed; the text is kube's."""


class WebhookConverter:
    """Converts the objects of ``info``'s kind through its CRD's webhook (ResourceInfo.conversion),
    called with the client ``client`` returns when the call is made."""

    def __init__(
        self, info: ResourceInfo, client: ClientSource, *, timeout: float = TIMEOUT_SECONDS
    ) -> None:
        config = orjson.loads(info.conversion)
        webhook = config.get("webhook") or {}
        self.info = info
        self.client = client
        self.timeout = timeout
        self.client_config: Obj = webhook.get("clientConfig") or {}
        self.review_versions = [str(v) for v in webhook.get("conversionReviewVersions") or []]
        self.schemas = {
            info.group_version: info.schema,
            str(config["storageVersion"]): str(config["storageSchema"]),
        }

    async def __call__(self, objs: list[Obj], api_version: str) -> list[Obj]:
        pending = [i for i, obj in enumerate(objs) if obj.get("apiVersion") != api_version]
        if not pending:
            return objs
        sent = [objs[i] for i in pending]
        gvk = _gvk_of(sent[0])
        answered = await self._call(sent, api_version, gvk)
        out = list(objs)
        for index, (original, raw) in enumerate(zip(sent, answered, strict=True)):
            try:
                converted = _checked(original, raw, api_version)
            except _Failed as exc:
                raise errors.internal(str(exc)) from None
            schema = self.schemas.get(api_version)
            if schema:
                crschema.compiled(schema).prune(converted)
            out[pending[index]] = converted
        return out

    async def _call(self, sent: list[Obj], api_version: str, gvk: str) -> list[Any]:
        """The webhook's converted objects, as many as sent."""
        version = next((v for v in self.review_versions if v in REVIEW_VERSIONS), None)
        if version is None:
            raise errors.internal("no supported conversion review versions")
        uid = str(uuid.uuid4())
        review = {
            "kind": "ConversionReview",
            "apiVersion": f"{REVIEW_GROUP}/{version}",
            "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": sent},
            "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}},
        }
        client = self.client()
        if client is None:
            raise _failure(gvk, "no webhook client: this server calls no webhooks")
        seconds = int(self.timeout) if self.timeout == int(self.timeout) else self.timeout
        try:
            status, body = await client.post(
                self.client_config, orjson.dumps(review), self.timeout, f"timeout={seconds}s"
            )
        except CallFailed as exc:
            raise _failure(gvk, str(exc).removeprefix(_CALL_PREFIX)) from None
        if not 200 <= status <= 206:
            raise _failure(gvk, _unexpected_status(status, body))
        try:
            objects = _converted_objects(body, version, uid)
        except _Failed as exc:
            raise _failure(gvk, str(exc)) from None
        if len(objects) != len(sent):
            raise errors.internal(
                f"conversion webhook for {gvk} returned {len(objects)} objects, expected "
                f"{len(sent)}"
            )
        return objects


def _failure(gvk: str, why: str) -> APIError:
    return errors.internal(f"conversion webhook for {gvk} failed: {why}")


# --- the review's answer --------------------------------------------------------------------------


def _converted_objects(body: bytes, version: str, uid: str) -> list[Any]:
    """getConvertedObjectsFromResponse, after the body is decoded."""
    if not body:
        raise _Failed("0-length response with status code: 200 and content type: application/json")
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise _Failed(f"couldn't get version/kind; json parse error: {exc}") from None
    if not isinstance(review, dict):
        raise _Failed(f"couldn't get version/kind; json parse error: {_json_type(review)}")
    if version == "v1":
        got = _gvk(str(review.get("apiVersion") or ""), str(review.get("kind") or ""))
        expected = _gvk(f"{REVIEW_GROUP}/v1", "ConversionReview")
        if got != expected:
            raise _Failed(f"expected webhook response of {expected}, got {got}")
    response = review.get("response")
    if not isinstance(response, dict):
        raise _Failed("no response provided")
    if version == "v1" and response.get("uid", "") != uid:
        raise _Failed(
            f"expected response.uid={go_quote(uid)}, got {go_quote(str(response.get('uid', '')))}"
        )
    found = response.get("result")
    result: Obj = found if isinstance(found, dict) else {}
    status = result.get("status") or ""
    if status != "Success":
        message = result.get("message")
        if isinstance(message, str) and message:
            raise _Failed(message)
        raise _Failed(f"response.result.status was '{status}', not 'Success'")
    objects = response.get("convertedObjects")
    return objects if isinstance(objects, list) else []


def _checked(original: Obj, raw: Any, api_version: str) -> Obj:
    """One converted object checked against the one sent, given the original's metadata but for
    labels and annotations (the texts of webhook_converter.go for one object)."""
    gvk = _gvk_of(original)
    invalid = f"conversion webhook for {gvk} returned invalid object"
    undecodable = _undecodable(raw)
    if undecodable:
        raise _Failed(undecodable)
    expected = _group_version(api_version)
    received = _group_version(str(raw.get("apiVersion") or ""))
    if expected != received:
        raise _Failed(
            f"{invalid} at index 0: invalid groupVersion (expected {expected}, received {received})"
        )
    if original.get("kind") != raw["kind"]:
        raise _Failed(
            f"{invalid} at index 0: invalid kind (expected {original.get('kind')}, received "
            f"{raw['kind']})"
        )
    different = _different_identity(original, raw)
    if different:
        raise _Failed(f"{invalid}: {different}")
    problem = _restore_metadata(original, raw)
    if problem:
        raise _Failed(f"conversion webhook for {gvk} returned invalid metadata: {problem}")
    assert isinstance(raw, dict)
    return raw


def _undecodable(raw: Any) -> str:
    """Why ``raw`` is not an object with a kind (Unstructured's UnmarshalJSON), or ""."""
    if not isinstance(raw, dict):
        kind = _json_type(raw)
        if kind == "null":
            return "Object 'Kind' is missing in 'null'"
        return f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    if not isinstance(raw.get("kind"), str) or not raw["kind"]:
        return f"Object 'Kind' is missing in '{orjson.dumps(raw).decode()}'"
    return ""


def _different_identity(original: Obj, converted: Obj) -> str:
    """validateConvertedObject: the same kind, name, namespace and UID."""
    for field, label in (("kind", "kind"),):
        if original.get(field) != converted.get(field):
            return f"must have the same {label}: {original.get(field)} != {converted.get(field)}"
    for field, label in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        before, after = _meta_str(original, field), _meta_str(converted, field)
        if before != after:
            return f"must have the same {label}: {before} != {after}"
    return ""


def _meta_str(obj: Obj, field: str) -> str:
    meta = obj.get("metadata")
    value = meta.get(field) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else ""


def _restore_metadata(original: Obj, converted: Obj) -> str:
    """restoreObjectMeta: ``converted`` gets the original's metadata with the labels and
    annotations the webhook answered (checked when changed); the problem, or ""."""
    if "metadata" not in converted:
        return "missing metadata in converted object"
    answered = converted["metadata"]
    if not isinstance(answered, dict):
        return f"invalid metadata of type {_go_type(answered)} in converted object"
    meta = clone_value(original.get("metadata", {}))
    if not isinstance(meta, dict):
        return f"invalid metadata of type {_go_type(meta)} in input object"
    for field in ("labels", "annotations"):
        value = answered.get(field)
        if value is None:
            meta.pop(field, None)
            continue
        if not isinstance(value, dict):
            return f"invalid metadata.{field} of type {_go_type(value)} in converted object"
        before = meta.get(field)
        if before is not None and not isinstance(before, dict):
            return f"invalid metadata.{field} of type {_go_type(before)} in original object"
        before = before or {}
        changed = len(before) != len(value)
        for key, item in value.items():
            if not isinstance(item, str):
                return (
                    f"metadata.{field}[{key}] must be a string, but is {_go_type(item)} in "
                    "converted object"
                )
            changed = changed or before.get(key) != item
        if changed:
            found = (
                label_causes(value, "metadata.labels")
                if field == "labels"
                else annotation_causes(value, "metadata.annotation")
            )
            if found:
                return _aggregate(found)
        meta[field] = value
    converted["metadata"] = meta
    return ""


def _aggregate(causes: list[Cause]) -> str:
    """A field.ErrorList's ToAggregate().Error(): one error as it is, several in brackets."""
    texts: list[str] = []
    for cause in causes:
        text = f"{cause.field}: {cause.message}"
        if text not in texts:
            texts.append(text)
    return texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"


def _unexpected_status(status: int, body: bytes) -> str:
    """client-go's error for a webhook answering ``status`` (NewGenericServerResponse; a body
    that is not JSON is taken as the text/plain message kube would show)."""
    text = body[:_MAX_TEXT].decode("utf-8", "replace").strip()
    try:
        orjson.loads(body)
        message = "unknown"
    except orjson.JSONDecodeError:
        message = text or "unknown"
    fixed = {
        400: "the server rejected our request for an unknown reason",
        401: "the server has asked for the client to provide credentials",
        404: "the server could not find the requested resource",
        405: "the server does not allow this method on the requested resource",
        409: "the server reported a conflict",
        422: "the server rejected our request due to an error in our request",
        429: "the server has received too many requests and has asked us to try again later",
        503: "the server is currently unable to handle the request",
        504: (
            "the server was unable to return a response in the time allotted, but may still be "
            "processing the request"
        ),
    }
    if status in fixed:
        return fixed[status]
    if status in (403, 415) or (status == 406 and message != "unknown"):
        return message
    if status == 406:
        return "the server was unable to respond with a content type that the client supports"
    if status >= 500:
        quoted = go_quote(message)
        return f"an error on the server ({quoted}) has prevented the request from succeeding"
    return f"the server responded with the status code {status} but did not return more information"


# --- Go's names for things ------------------------------------------------------------------------


def _gvk(api_version: str, kind: str) -> str:
    """schema.GroupVersionKind's String(): ``<group>/<version>, Kind=<kind>``."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def _gvk_of(obj: Obj) -> str:
    return _gvk(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))


def _group_version(api_version: str) -> str:
    """schema.ParseGroupVersion then String(): ``v1``, ``group/v1``; "" when unparsable."""
    if api_version in ("", "/") or api_version.count("/") > 1:
        return ""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}" if group else version


def _go_type(value: Any) -> str:
    """``%T`` of a JSON value as Go's unstructured decoding holds it."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


def _json_type(value: Any) -> str:
    """encoding/json's name of a JSON value's type in its unmarshal errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
