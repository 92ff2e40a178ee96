"""Admission webhooks (``admissionregistration.k8s.io/v1`` ValidatingWebhookConfiguration and
MutatingWebhookConfiguration): the configurations in force, which webhooks a write concerns,
the AdmissionReview exchanged with them, and the two admission plugins that call them
(k8s.io/apiserver ``pkg/admission/plugin/webhook/{generic,mutating,validating}``).

- :mod:`.source`: :class:`WebhookSource` follows the stored configurations (list and watch)
  and holds their webhooks as :class:`Hook` values, in calling order;
- :mod:`.matching`: rules (with ``matchPolicy: Equivalent``), selectors and match conditions
  (:mod:`.conditions`, CEL) decide each webhook; :class:`Views` hold the object per version;
- :mod:`.review`: the AdmissionReview request and the checks of the answer;
- :mod:`.calling`: one call and its outcome in kube's texts;
- :mod:`.dispatch`: :class:`MutatingWebhooks` (sequential, JSON patches, reinvocation) and
  :class:`ValidatingWebhooks` (concurrent).

The HTTP client is :class:`kubelite.api.machinery.webhookclient.WebhookClient`, shared with CRD
conversion webhooks.
"""

from __future__ import annotations

from kubelite.api.admission.webhooks.dispatch import MutatingWebhooks, ValidatingWebhooks
from kubelite.api.admission.webhooks.matching import Invocation, Views
from kubelite.api.admission.webhooks.source import Hook, WebhookSource

__all__ = [
    "Hook",
    "Invocation",
    "MutatingWebhooks",
    "ValidatingWebhooks",
    "Views",
    "WebhookSource",
]
