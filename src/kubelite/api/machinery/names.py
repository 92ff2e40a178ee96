"""Object name validation and ``generateName``, as apimachinery does them."""

from __future__ import annotations

import re
import secrets

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)

LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def is_subdomain(name: str) -> bool:
    return len(name) <= 253 and bool(_DNS1123_SUBDOMAIN.fullmatch(name))


def is_dns1035(name: str) -> bool:
    return len(name) <= 63 and bool(_DNS1035_LABEL.fullmatch(name))


_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
MAX_GENERATED_PREFIX = 58


def subdomain_errors(name: str) -> list[str]:
    """Messages for a name that is not a DNS-1123 subdomain (most kinds' names)."""
    errors: list[str] = []
    if len(name) > 253:
        errors.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.fullmatch(name):
        errors.append(SUBDOMAIN_MESSAGE)
    return errors


def label_errors(name: str) -> list[str]:
    """Messages for a name that is not a DNS-1123 label (Namespace and Service names)."""
    errors: list[str] = []
    if len(name) > 63:
        errors.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.fullmatch(name):
        errors.append(LABEL_MESSAGE)
    return errors


def generate_name(prefix: str) -> str:
    """``prefix`` (cut to 58 characters) and five random characters."""
    suffix = "".join(secrets.choice(_GENERATE_ALPHABET) for _ in range(5))
    return prefix[:MAX_GENERATED_PREFIX] + suffix


def path_segment_errors(name: str) -> list[str]:
    """apimachinery's ``IsValidPathSegmentName``: a name that can be one segment of a URL path
    (RBAC objects' names, a name pinned by a field selector)."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]
