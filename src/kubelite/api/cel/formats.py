"""Kubernetes' format library (library.Format)."""

from __future__ import annotations

import re
from typing import Any

from kubelite.api.cel.urls import _is_url
from kubelite.api.cel.values import _FORMAT, _marked, _no_overload
from kubelite.api.errors import go_quote


def _format_errors(name: str, text: str) -> list[str]:
    from kubelite.api.machinery import metavalidation, names

    def prefixed(s: str) -> str:
        return s[:-1] + "a" if s.endswith("-") else s

    if name in ("dns1123Label", "dns1123LabelPrefix"):
        return names.label_errors(prefixed(text) if name.endswith("Prefix") else text)
    if name in ("dns1123Subdomain", "dns1123SubdomainPrefix"):
        return names.subdomain_errors(prefixed(text) if name.endswith("Prefix") else text)
    if name in ("dns1035Label", "dns1035LabelPrefix"):
        value = prefixed(text) if name.endswith("Prefix") else text
        out = ["must be no more than 63 characters"] if len(value) > 63 else []
        if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", value):
            out.append(names.DNS1035_MESSAGE)
        return out
    if name == "qualifiedName":
        return metavalidation.qualified_name_errors(text)
    if name == "labelValue":
        return metavalidation.label_value_errors(text)
    if name == "uri":
        return [] if _is_url(text) else [f"parse {go_quote(text)}: invalid URI for request"]
    if name == "uuid":
        ok = re.fullmatch(
            r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", text
        )
        return [] if ok else ["does not match the UUID format"]
    if name == "byte":
        import base64
        import binascii

        try:
            base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return ["invalid base64"]
        return []
    if name == "date":
        import datetime

        try:
            datetime.date.fromisoformat(text)
        except ValueError:
            return ["invalid date"]
        return [] if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else ["invalid date"]
    if name == "datetime":
        import datetime

        ok = re.fullmatch(
            r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", text
        )
        try:
            if ok:
                datetime.datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
        except ValueError:
            ok = None
        return [] if ok else ["invalid datetime"]
    raise _no_overload()


FORMATS = (
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
)


def _format_named(name: Any) -> Any:
    from cel import OptionalValue

    if not isinstance(name, str):
        raise _no_overload()
    return OptionalValue.of({_FORMAT: name}) if name in FORMATS else OptionalValue.none()


def _validate(fmt: Any, text: Any) -> Any:
    from cel import OptionalValue

    name = _marked(fmt, _FORMAT)
    if name is None or not isinstance(text, str):
        raise _no_overload()
    errors = _format_errors(name, text)
    return OptionalValue.of(errors) if errors else OptionalValue.none()
