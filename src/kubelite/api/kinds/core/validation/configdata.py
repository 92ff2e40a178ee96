"""Validation: ConfigMap and Secret: keys and size (ValidateConfigMap, ValidateSecret).

Source: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go`` (``ValidateConfigMap``,
``ValidateConfigMapUpdate``, ``ValidateSecret``, ``ValidateSecretUpdate``) and apimachinery's
``util/validation.IsConfigMapKey``. Keys are checked in sorted order (Go's map order is random).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from kubelite.api.errors import Cause, go_quote
from kubelite.api.kinds.rules import Obj
from kubelite.api.machinery.metavalidation import invalid, regex_error

#: core.MaxSecretSize, also ConfigMap's limit.
MAX_SIZE = 1024 * 1024
IMMUTABLE = "field is immutable when `immutable` is set"

_KEY_FMT = "[-._a-zA-Z0-9]+"
_KEY_RE = re.compile(_KEY_FMT)
_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"


def config_key_errors(key: str) -> list[str]:
    """util/validation.IsConfigMapKey."""
    errs = ["must be no more than 253 characters"] if len(key) > 253 else []
    if not _KEY_RE.fullmatch(key):
        errs.append(regex_error(_KEY_MSG, _KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if key == ".":
        errs.append("must not be '.'")
    elif key == "..":
        errs.append("must not be '..'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def _map(value: Any) -> dict[str, Any]:
    return {k: v for k, v in value.items() if isinstance(k, str)} if isinstance(value, dict) else {}


def _decoded_size(value: Any) -> int:
    """The byte length of a base64 ``[]byte`` value as JSON carries it."""
    if not isinstance(value, str):
        return 0
    try:
        return len(base64.b64decode(value, validate=False))
    except (binascii.Error, ValueError):
        return len(value) * 3 // 4


def _text_size(value: Any) -> int:
    return len(value.encode("utf-8", "surrogatepass")) if isinstance(value, str) else 0


#: Every key valid, checked in one match over the keys joined by newlines (no valid key has
#: one): the common case costs one regex call, not one per key.
_ALL_VALID = re.compile(r"(?:(?!\.\.)(?!\.(?:\n|\Z))[-._a-zA-Z0-9]{1,253}(?:\n|\Z))*")


def _all_valid(keys: list[str]) -> bool:
    return _ALL_VALID.fullmatch("\n".join(keys)) is not None


def _key_causes(keys: list[str], path: str) -> list[Cause]:
    if _all_valid(keys):
        return []
    return [
        invalid(f"{path}[{key}]", go_quote(key), msg)
        for key in sorted(keys)
        for msg in config_key_errors(key)
    ]


def _too_long(path: str) -> Cause:
    return Cause("FieldValueTooLong", f"Too long: may not be more than {MAX_SIZE} bytes", path)


def _required(path: str) -> Cause:
    return Cause("FieldValueRequired", "Required value", path)


def _forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", path)


# --- ConfigMap --------------------------------------------------------------------------------


def configmap_causes(obj: Obj) -> list[Cause]:
    """ValidateConfigMap (beyond the metadata): keys, keys in both maps, total size."""
    data, binary = _map(obj.get("data")), _map(obj.get("binaryData"))
    causes: list[Cause] = []
    if not (_all_valid(list(data)) and binary.keys().isdisjoint(data)):
        for key in sorted(data):
            causes += [invalid(f"data[{key}]", go_quote(key), m) for m in config_key_errors(key)]
            if key in binary:
                causes.append(
                    invalid(f"data[{key}]", go_quote(key), "duplicate of key present in binaryData")
                )
    causes += _key_causes(list(binary), "binaryData")
    texts = [v for v in data.values() if isinstance(v, str)]
    size = len("".join(texts).encode("utf-8", "surrogatepass")) + sum(
        _decoded_size(v) for v in binary.values()
    )
    if size > MAX_SIZE:
        causes.append(_too_long("[]"))  # field.NewPath(""): the whole object
    return causes


def _immutable_causes(new: Obj, old: Obj, fields: tuple[str, ...]) -> list[Cause]:
    """The ``immutable: true`` rule of ValidateConfigMapUpdate / ValidateSecretUpdate."""
    if old.get("immutable") is not True:
        return []
    causes: list[Cause] = []
    if new.get("immutable") is not True:
        causes.append(_forbidden("immutable", IMMUTABLE))
    for name in fields:
        if (new.get(name) or {}) != (old.get(name) or {}):
            causes.append(_forbidden(name, IMMUTABLE))
    return causes


def validate_configmap(obj: Obj, old: Obj | None) -> list[Cause]:
    before = _immutable_causes(obj, old, ("data", "binaryData")) if old is not None else []
    return before + configmap_causes(obj)


# --- Secret -----------------------------------------------------------------------------------

_SA_NAME_KEY = "kubernetes.io/service-account.name"


def secret_causes(obj: Obj) -> list[Cause]:
    """ValidateSecret (beyond the metadata): keys, total size, what each type requires."""
    data = _map(obj.get("data"))
    # stringData not yet folded into data counts as data (kube merges it before validating)
    strings = _map(obj.get("stringData"))
    keys = set(data) | set(strings)
    causes = _key_causes(list(keys), "data")
    size = sum(_decoded_size(v) for k, v in data.items() if k not in strings)
    size += sum(_text_size(v) for v in strings.values())
    if size > MAX_SIZE:
        causes.append(_too_long("data"))
    kind = obj.get("type")
    if kind == "kubernetes.io/service-account-token":
        annotations = (obj.get("metadata") or {}).get("annotations")
        value = annotations.get(_SA_NAME_KEY) if isinstance(annotations, dict) else None
        if not (isinstance(value, str) and value):
            causes.append(_required(f"metadata.annotations[{_SA_NAME_KEY}]"))
    elif kind == "kubernetes.io/dockercfg":
        if ".dockercfg" not in keys:
            causes.append(_required("data[.dockercfg]"))
    elif kind == "kubernetes.io/dockerconfigjson":
        if ".dockerconfigjson" not in keys:
            causes.append(_required("data[.dockerconfigjson]"))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in keys and "password" not in keys:
            causes += [_required("data[username]"), _required("data[password]")]
    elif kind == "kubernetes.io/ssh-auth":
        raw = strings.get("ssh-privatekey", data.get("ssh-privatekey"))
        if not raw:
            causes.append(_required("data[ssh-privatekey]"))
    elif kind == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in keys:
                causes.append(_required(f"data[{key}]"))
    return causes


def validate_secret(obj: Obj, old: Obj | None) -> list[Cause]:
    causes: list[Cause] = []
    if old is not None:
        new_type, old_type = obj.get("type") or "Opaque", old.get("type") or "Opaque"
        if new_type != old_type:
            shown = go_quote(new_type) if isinstance(new_type, str) else str(new_type)
            causes.append(invalid("type", shown, "field is immutable"))
        causes += _immutable_causes(obj, old, ("data",))
    return causes + secret_causes(obj)
