"""Decode the protobuf request bodies kubectl sends for imperative ``kubectl create <kind>``.

kubectl 1.32+ sends ``Content-Type: application/vnd.kubernetes.protobuf`` for the typed clients
behind ``create configmap|secret|namespace|deployment|...``, with no fallback to JSON after a 415.
The body is the magic ``k8s\\0`` followed by a ``runtime.Unknown`` message (k8s.io/apimachinery
``pkg/runtime/serializer/protobuf/protobuf.go``, ``pkg/runtime/generated.proto``): TypeMeta
(field 1: apiVersion=1, kind=2), raw (field 2: the object's own protobuf encoding),
contentEncoding (3) and contentType (4).

This package's entry point is :func:`decode_request`: the envelope read here, the object by the
kind's table in :data:`KINDS`. The object encodings follow k8s.io/api's ``generated.proto``:
the wire format is read by :mod:`~kubelite.server.protobuf.wire`, the tables
(:mod:`~kubelite.server.protobuf.core`, :mod:`~kubelite.server.protobuf.groups`) are walked
by :mod:`~kubelite.server.protobuf.decoder`.

Only this decoding direction exists: kubelite always answers in JSON.
"""

from __future__ import annotations

from typing import Any

from kubelite.server.protobuf.core import (
    CONFIG_MAP,
    NAMESPACE,
    POD,
    RESOURCE_QUOTA,
    SECRET,
    SERVICE,
    SERVICE_ACCOUNT,
)
from kubelite.server.protobuf.decoder import STR, F, Message, decode_message
from kubelite.server.protobuf.groups import (
    CLUSTER_ROLE,
    CRON_JOB,
    DEPLOYMENT,
    HORIZONTAL_POD_AUTOSCALER,
    INGRESS,
    JOB,
    POD_DISRUPTION_BUDGET,
    PRIORITY_CLASS,
    ROLE,
    ROLE_BINDING,
    SELF_SUBJECT_ACCESS_REVIEW,
    SELF_SUBJECT_REVIEW,
    SELF_SUBJECT_RULES_REVIEW,
    TOKEN_REQUEST,
)
from kubelite.server.protobuf.wire import read_fields

__all__ = ["KINDS", "MAGIC", "UnsupportedKind", "decode_request"]

MAGIC = b"k8s\x00"

KINDS: dict[tuple[str, str], Message] = {
    ("v1", "ConfigMap"): CONFIG_MAP,
    ("v1", "Secret"): SECRET,
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("v1", "Service"): SERVICE,
    ("v1", "ResourceQuota"): RESOURCE_QUOTA,
    ("v1", "Pod"): POD,
    ("apps/v1", "Deployment"): DEPLOYMENT,
    ("batch/v1", "Job"): JOB,
    ("batch/v1", "CronJob"): CRON_JOB,
    ("rbac.authorization.k8s.io/v1", "Role"): ROLE,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): CLUSTER_ROLE,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ROLE_BINDING,
    ("scheduling.k8s.io/v1", "PriorityClass"): PRIORITY_CLASS,
    ("policy/v1", "PodDisruptionBudget"): POD_DISRUPTION_BUDGET,
    ("networking.k8s.io/v1", "Ingress"): INGRESS,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): HORIZONTAL_POD_AUTOSCALER,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): SELF_SUBJECT_ACCESS_REVIEW,
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): SELF_SUBJECT_RULES_REVIEW,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): SELF_SUBJECT_REVIEW,
    ("authentication.k8s.io/v1", "TokenRequest"): TOKEN_REQUEST,
}

# runtime.Unknown is read directly in decode_request: typeMeta=1, raw=2, contentEncoding=3,
# contentType=4.
TYPE_META: Message = {1: F("apiVersion", STR), 2: F("kind", STR)}


class UnsupportedKind(ValueError):
    """A well-formed body of a kind this module has no table for (the server answers 415)."""


def decode_request(body: bytes) -> dict[str, Any]:
    """Decode a ``application/vnd.kubernetes.protobuf`` request body into the JSON object
    kubectl would have sent. Raises ValueError for a malformed body, and UnsupportedKind for a
    kind with no table here."""
    if not body.startswith(MAGIC):
        raise ValueError("the protobuf body does not start with the k8s\\x00 prefix")
    envelope = {number: value for number, _, value in read_fields(body[len(MAGIC) :])}
    if envelope.get(3):
        raise ValueError(f"unsupported protobuf contentEncoding {envelope[3]!r}")
    raw, type_meta = envelope.get(2, b""), envelope.get(1, b"")
    if not isinstance(raw, bytes) or not isinstance(type_meta, bytes):
        raise ValueError("malformed runtime.Unknown envelope")
    type_fields = decode_message(TYPE_META, type_meta, "TypeMeta")
    api_version, kind = type_fields.get("apiVersion", ""), type_fields.get("kind", "")
    message = KINDS.get((api_version, kind))
    if message is None:
        raise UnsupportedKind(f"no protobuf decoding for {kind or '?'} in {api_version or '?'}")
    return {"kind": kind, "apiVersion": api_version, **decode_message(message, raw, kind)}
