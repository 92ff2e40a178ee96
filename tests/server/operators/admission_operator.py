"""A kopf operator with admission handlers for the Widget CRD (tests/server/data/widgets-crd.yaml),
run by tests/server/test_admission_webhooks_kopf.py as ``kopf run --standalone -A``: kopf serves
the webhooks itself (``kopf.WebhookServer`` on 127.0.0.1) and writes their configurations
(``settings.admission.managed``) into kubelite.

``WEBHOOK_PORT``: the port to serve on; ``WEBHOOK_CERTS``: a directory with ``tls.crt`` and
``tls.key``, and ``ca.crt`` when a CA issued the certificate (without one kopf sends the
certificate itself as the caBundle, as with the self-signed certificate it makes when
``WEBHOOK_CERTS`` is unset, which needs ``certbuilder``).

validate: a widget of size 7 is refused (422); mutate: every widget gets the label
``checked-by: kopf``.
"""

import os
from pathlib import Path

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_):
    certs = os.environ.get("WEBHOOK_CERTS")
    files = {}
    if certs:
        files = {"certfile": Path(certs) / "tls.crt", "pkeyfile": Path(certs) / "tls.key"}
        if (Path(certs) / "ca.crt").exists():
            files["cafile"] = Path(certs) / "ca.crt"
    settings.admission.server = kopf.WebhookServer(
        addr="127.0.0.1", port=int(os.environ["WEBHOOK_PORT"]), **files
    )
    settings.admission.managed = "auto.kopf.dev"


@kopf.on.validate("example.com", "v1", "widgets")
def no_sevens(spec, warnings, **_):
    warnings.append("checked by kopf")
    if spec.get("size") == 7:
        raise kopf.AdmissionError("seven is unlucky", code=422)


@kopf.on.mutate("example.com", "v1", "widgets")
def label(patch, **_):
    patch.metadata.labels["checked-by"] = "kopf"
