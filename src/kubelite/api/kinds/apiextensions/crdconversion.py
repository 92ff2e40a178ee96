"""A CRD's ``spec.conversion``: its defaults and validation with apiextensions' 422 texts, and
what its served versions carry of it (:func:`conversion_text`).

``strategy: None`` (the default) converts by rewriting apiVersion; ``strategy: Webhook`` names a
webhook, ``webhook {clientConfig {url | service {namespace, name, path, port (443)}, caBundle},
conversionReviewVersions}``, that :mod:`kubelite.api.kinds.apiextensions.webhookconversion` calls.

Validation follows apiextensions' validation.go ``validateCustomResourceConversion`` and
apiserver's ``util/webhook`` validators. Its field paths are those of the internal type,
which kube-apiserver reports for v1 objects too: ``spec.conversion.webhookClientConfig`` and
``spec.conversion.conversionReviewVersions``, not ``spec.conversion.webhook.…``. As in kube,
``caBundle`` is checked on an update of an established CRD whose bundle was valid (a create is
not checked: the CRD is not established yet), and a list of review versions without ``v1`` or
``v1beta1`` is refused unless the CRD already had one.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any
from urllib.parse import urlsplit

import orjson

from kubelite.api.errors import Cause, go_quote
from kubelite.api.machinery.names import DNS1035_MESSAGE, subdomain_errors

Obj = dict[str, Any]

NONE = "None"
WEBHOOK = "Webhook"
STRATEGIES = (NONE, WEBHOOK)
#: the ConversionReview versions kube-apiserver sends (sorted, as its message lists them)
REVIEW_VERSIONS = ("v1", "v1beta1")
DEFAULT_PORT = 443
_PATH = "spec.conversion"
_CLIENT = f"{_PATH}.webhookClientConfig"
_URL_FORM = "; desired format: https://host[/path]"
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def apply_defaults(spec: Obj) -> None:
    """``strategy: None`` when the CRD says nothing, and a service's port 443."""
    conversion = spec.setdefault("conversion", {})
    if not isinstance(conversion, dict):
        return
    conversion.setdefault("strategy", NONE)
    webhook = conversion.get("webhook")
    client = webhook.get("clientConfig") if isinstance(webhook, dict) else None
    service = client.get("service") if isinstance(client, dict) else None
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = DEFAULT_PORT


def is_webhook(crd: Obj) -> bool:
    conversion = (crd.get("spec") or {}).get("conversion")
    return isinstance(conversion, dict) and conversion.get("strategy") == WEBHOOK


def conversion_text(crd: Obj, storage_version: str, storage_schema: str) -> str:
    """What each served version of ``crd`` carries of its conversion (ResourceInfo.conversion):
    empty for strategy None; for a webhook, its name, ``spec.conversion.webhook``, and the
    storage version's apiVersion and schema (what is written is pruned by that schema)."""
    if not is_webhook(crd):
        return ""
    spec = crd["spec"]
    config = {
        "name": crd["metadata"]["name"],
        "webhook": spec["conversion"].get("webhook") or {},
        "storageVersion": f"{spec['group']}/{storage_version}",
        "storageSchema": storage_schema,
    }
    return orjson.dumps(config, option=orjson.OPT_SORT_KEYS).decode()


# --- validation -----------------------------------------------------------------------------------


def causes(spec: Obj, old: Obj | None = None, *, old_established: bool = False) -> list[Cause]:
    """The 422 causes of ``spec.conversion``; ``old``: the stored CRD's spec on an update."""
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        return []
    found: list[Cause] = []
    strategy = conversion.get("strategy")
    if strategy != NONE and spec.get("preserveUnknownFields") is True:
        found.append(
            _invalid(
                f"{_PATH}.strategy", strategy, "must be None if spec.preserveUnknownFields is true"
            )
        )
    if not strategy:
        found.append(_required(f"{_PATH}.strategy"))
    elif strategy not in STRATEGIES:
        listed = ", ".join(go_quote(s) for s in STRATEGIES)
        found.append(
            Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {_go(strategy)}: supported values: {listed}",
                f"{_PATH}.strategy",
            )
        )
    client, versions = _internal(conversion)
    if strategy == WEBHOOK:
        if client is None:
            found.append(_required(_CLIENT, "required when strategy is set to Webhook"))
        else:
            found += _client_causes(client, _allow_invalid_ca_bundle(old, old_established))
        found += _review_version_causes(versions, _require_recognized(old))
    else:
        if client is not None:
            found.append(
                _forbidden(_CLIENT, "should not be set when strategy is not set to Webhook")
            )
        if versions:
            found.append(
                _forbidden(
                    f"{_PATH}.conversionReviewVersions",
                    "should not be set when strategy is not set to Webhook",
                )
            )
    return found


def _internal(conversion: Obj) -> tuple[Obj | None, list[Any]]:
    """(webhookClientConfig, conversionReviewVersions) as the internal type holds them."""
    webhook = conversion.get("webhook")
    if not isinstance(webhook, dict):
        return None, []
    client = webhook.get("clientConfig")
    versions = webhook.get("conversionReviewVersions")
    return (client if isinstance(client, dict) else None), (
        versions if isinstance(versions, list) else []
    )


def _require_recognized(old: Obj | None) -> bool:
    """A list without a known review version is refused unless the stored CRD had one."""
    if old is None:
        return True
    conversion = old.get("conversion")
    if not isinstance(conversion, dict):
        return True
    _, versions = _internal(conversion)
    return not versions or any(v in REVIEW_VERSIONS for v in versions)


def _allow_invalid_ca_bundle(old: Obj | None, old_established: bool) -> bool:
    if old is None or not old_established:
        return True
    conversion = old.get("conversion")
    client, _ = _internal(conversion) if isinstance(conversion, dict) else (None, [])
    bundle = _bundle(client.get("caBundle")) if client is not None else None
    if not bundle:
        return False
    return ca_bundle_error(bundle) is not None


def _client_causes(client: Obj, allow_invalid_ca_bundle: bool) -> list[Cause]:
    found: list[Cause] = []
    url, service = client.get("url"), client.get("service")
    if (url is None) == (service is None):
        found.append(_required(_CLIENT, "exactly one of url or service is required"))
    elif url is not None:
        found += url_causes(f"{_CLIENT}.url", str(url))
    elif isinstance(service, dict):
        found += service_causes(f"{_CLIENT}.service", service)
    bundle = _bundle(client.get("caBundle"))
    if bundle and not allow_invalid_ca_bundle:
        error = ca_bundle_error(bundle)
        if error is not None:
            shown = "[]byte{" + ", ".join(f"0x{b:x}" for b in bundle) + "}"
            found.append(
                Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {shown}: unable to load root certificates: {error}",
                    f"{_CLIENT}.caBundle",
                )
            )
    return found


def _bundle(value: Any) -> bytes | None:
    """A caBundle's bytes (decoding has already refused bad base64)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def url_causes(path: str, url: str) -> list[Cause]:
    """apiserver's ValidateWebhookURL, HTTPS forced."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        detail = f"url must be a valid URL: parse {go_quote(url)}: {exc}{_URL_FORM}"
        return [_required(path, detail)]
    found: list[Cause] = []
    if parts.scheme != "https":
        found.append(
            _invalid(path, parts.scheme, "'https' is the only allowed URL scheme" + _URL_FORM)
        )
    userinfo, at, host = parts.netloc.rpartition("@")
    if not host:
        found.append(_invalid(path, host, "host must be specified" + _URL_FORM))
    if at:
        found.append(_invalid(path, userinfo, "user information is not permitted in the URL"))
    if parts.fragment:
        found.append(_invalid(path, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        found.append(_invalid(path, parts.query, "query parameters are not permitted in the URL"))
    return found


def service_causes(path: str, service: Obj) -> list[Cause]:
    """apiserver's ValidateWebhookService."""
    found: list[Cause] = []
    if not service.get("name"):
        found.append(_required(f"{path}.name"))
    if not service.get("namespace"):
        found.append(_required(f"{path}.namespace"))
    port = service.get("port", DEFAULT_PORT)
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        found.append(
            _invalid(
                f"{path}.port", port, "port is not valid: must be between 1 and 65535, inclusive"
            )
        )
    url_path = service.get("path")
    if not isinstance(url_path, str) or url_path in ("", "/"):
        return found
    where = f"{path}.path"
    if url_path == "//":
        return [*found, _invalid(where, url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        found.append(_invalid(where, url_path, "must start with a '/'"))
    steps = url_path[1:].removesuffix("/").split("/")
    for index, step in enumerate(steps):
        if not step:
            found.append(_invalid(where, url_path, f"segment[{index}] may not be empty"))
            continue
        for failure in subdomain_errors(step):
            found.append(_invalid(where, url_path, f"segment[{index}]: {failure}"))
    return found


def _review_version_causes(versions: list[Any], require_recognized: bool) -> list[Cause]:
    path = f"{_PATH}.conversionReviewVersions"
    if not versions:
        return [_required(path)]
    found: list[Cause] = []
    seen: set[str] = set()
    for index, version in enumerate(versions):
        text = str(version)
        if text in seen:
            found.append(_invalid(f"{path}[{index}]", text, "duplicate version"))
            continue
        seen.add(text)
        if len(text) > 63:
            found.append(_invalid(f"{path}[{index}]", text, "must be no more than 63 characters"))
        if not _DNS1035.fullmatch(text):
            found.append(_invalid(f"{path}[{index}]", text, DNS1035_MESSAGE))
    if require_recognized and not any(v in REVIEW_VERSIONS for v in versions):
        shown = "[]string{" + ", ".join(go_quote(str(v)) for v in versions) + "}"
        found.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {shown}: must include at least one of "
                + ", ".join(REVIEW_VERSIONS),
                path,
            )
        )
    return found


# --- caBundle: client-go's rootCertPool and createErrorParsingCAData --------------------------

_PEM_BLOCK = re.compile(
    rb"-----BEGIN ([^-\r\n]*)-----\r?\n(.*?)-----END \1-----[ \t]*(?:\r?\n|$)", re.DOTALL
)


def ca_bundle_error(bundle: bytes) -> str | None:
    """Why ``bundle`` (PEM) holds no usable CA certificate, in client-go's words; None when it
    holds one."""
    from cryptography import x509

    rest, first_error = bundle, None
    usable = False
    while rest:
        match = _PEM_BLOCK.search(rest)
        if match is None:
            first_error = first_error or "unable to parse bytes as PEM block"
            break
        rest = rest[match.end() :]
        kind, body = match.group(1), match.group(2)
        if kind != b"CERTIFICATE" or b":" in body.split(b"\n", 1)[0]:
            continue  # another block, or one with headers
        try:
            x509.load_der_x509_certificate(base64.b64decode(b"".join(body.split())))
        except (ValueError, binascii.Error) as exc:
            first_error = first_error or f"failed to parse certificate: x509: {exc}"
            continue
        usable = True
    if usable:
        return None
    return first_error or "no valid certificate authority data seen"


# --- field errors as apimachinery renders them --------------------------------------------------


def _go(value: Any) -> str:
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {_go(value)}: {detail}", path)


def _required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", "Required value" + (f": {detail}" if detail else ""), path)


def _forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", path)
