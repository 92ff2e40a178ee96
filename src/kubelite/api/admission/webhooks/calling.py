"""One webhook call: the dry-run check, the AdmissionReview sent with ``?timeout=<n>s``, the
answer verified, its warnings and audit annotations recorded, and the outcome in kube's terms
(the ``callHook``/``callAttrMutatingHook`` halves of ``webhook/{validating,mutating}/
dispatcher.go``, ``webhook/errors/statuserror.go``, apiserver ``pkg/util/webhook/error.go``).

Three ways a call goes wrong, as in kube:

- :class:`CallError` (kube's ErrCallingWebhook): the webhook could not be called, or answered
  with something that is not a valid AdmissionReview. ``failurePolicy`` decides: ``Fail`` turns
  it into 500 ``Internal error occurred: failed calling webhook "<name>": <why>``
  (:meth:`CallError.as_status`), ``Ignore`` lets the write go on with a ``failed-open`` audit
  annotation.
- a denial: :func:`denial`, the webhook's own Status made a refusal (code at least 400).
- anything else (a dry run the webhook cannot take part in) is an APIError at once.
"""

from __future__ import annotations

import uuid
from typing import Any

from kubelite.api import errors
from kubelite.api.admission.webhooks.matching import Invocation, internal_error
from kubelite.api.admission.webhooks.review import (
    Answer,
    InvalidAnswer,
    admission_request,
    read_answer,
    review_body,
    verify,
)
from kubelite.api.admission.webhooks.source import Hook
from kubelite.api.machinery.admission import Attributes
from kubelite.api.machinery.webhookclient import CallFailed, WebhookClient

Obj = dict[str, Any]

SIDE_EFFECT_FREE = ("None", "NoneOnDryRun")
WITHOUT_EXPLANATION = "without explanation"


class CallError(Exception):
    """The webhook could not be called or answered invalidly (the failure policy applies)."""

    def __init__(self, hook: Hook, why: str) -> None:
        self.hook = hook
        self.why = why
        super().__init__(f'failed calling webhook "{hook.name}": {why}')

    def as_status(self) -> errors.APIError:
        return internal_error(str(self))


def denial(hook: Hook, status: Obj | None) -> errors.APIError:
    """kube's ``ToStatusErr``: the webhook's Status, code at least 400, message prefixed with
    ``admission webhook "<name>" denied the request``."""
    status = status or {}
    code = status.get("code")
    code = code if isinstance(code, int) and not isinstance(code, bool) and code >= 400 else 400
    denied = f'admission webhook "{hook.name}" denied the request'
    message, reason = str(status.get("message") or ""), str(status.get("reason") or "")
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} {WITHOUT_EXPLANATION}"
    details = status.get("details")
    return errors.APIError(code, reason, text, details if isinstance(details, dict) else None)


def dry_run_unsupported(hook: Hook) -> errors.APIError:
    return errors.bad_request(f'admission webhook "{hook.name}" does not support dry run')


def annotate(attrs: Attributes, key: str, value: str) -> None:
    """An audit annotation; a key already set keeps its value (kube's AddAnnotation)."""
    if attrs.audit_annotations is not None:
        attrs.audit_annotations.setdefault(key, value)


async def call(
    client: WebhookClient,
    attrs: Attributes,
    invocation: Invocation,
    obj: Obj | None,
    old: Obj | None,
) -> Answer:
    """Call the webhook of ``invocation`` with ``obj`` and ``old`` (in its version); returns
    its verified answer, after recording its warnings and audit annotations. Raises
    :class:`CallError` or (dry run) an APIError; a denial is the caller's to raise."""
    hook = invocation.hook
    if attrs.dry_run:
        if hook.side_effects is None:
            raise CallError(hook, "Webhook SideEffects is nil")
        if hook.side_effects not in SIDE_EFFECT_FREE:
            raise dry_run_unsupported(hook)
    version = hook.review_version
    if version is None:
        raise CallError(
            hook,
            "could not create admission objects: webhook does not accept known AdmissionReview "
            "versions (v1, v1beta1)",
        )
    uid = str(uuid.uuid4())
    body = review_body(version, admission_request(attrs, invocation.target, obj, old, uid))
    seconds = hook.timeout
    try:
        response = await client.call(hook.client_config, body, seconds, f"timeout={seconds}s")
        review = read_answer(response.status, response.body, response.content_type)
        answer = verify(review, uid, version, hook.mutating)
    except (CallFailed, InvalidAnswer) as exc:
        raise CallError(hook, str(exc)) from None
    for key, value in answer.audit_annotations.items():
        annotate(attrs, f"{hook.name}/{key}", value)
    if attrs.warnings is not None:
        attrs.warnings.texts.extend(w for w in answer.warnings if w)
    return answer
