"""Object metadata validation on every create and update, whatever the kind: labels,
annotations, owner references, finalizer names and generateName, with kube-apiserver's field
paths and texts.

Sources (Kubernetes 1.37): apimachinery ``pkg/api/validation/objectmeta.go``
(``ValidateObjectMetaAccessor``, ``ValidateObjectMetaAccessorUpdate``, ``ValidateAnnotations``,
``ValidateOwnerReferences``, ``ValidateFinalizers``), ``pkg/apis/meta/v1/validation``
(``ValidateLabels``), ``pkg/api/validate/content`` (``IsLabelKey``, ``IsLabelValue``,
``IsDNS1123Subdomain``), ``pkg/util/validation/field`` (the texts of each error type); and, for
built-in kinds only, core's ``validateKubeFinalizerName`` (pkg/apis/core/validation).

The name itself (and the namespace) are checked earlier, by
:mod:`kubelite.api.machinery.objectmeta`. Nothing here raises on a malformed body (a list where a
map belongs, a number where a string belongs): such input is decode's to refuse, and this module
skips what it cannot read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.catalogue.extra import BANNED_OWNERS
from kubelite.api.errors import Cause, go_quote

Obj = dict[str, Any]
NameCheck = Callable[[str], list[str]]

#: apimachinery's TotalAnnotationSizeLimitB.
ANNOTATIONS_SIZE_LIMIT = 256 * 1024
#: core's standard finalizers (helper.IsStandardFinalizerName).
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
#: Built-in groups whose validation uses apimachinery's ValidateObjectMeta rather than core's
#: (no standard-finalizer rule): apiextensions-apiserver and kube-aggregator.
_GENERIC_META_GROUPS = frozenset({"apiextensions.k8s.io", "apiregistration.k8s.io"})

# --- content.IsLabelKey / IsLabelValue / IsDNS1123Subdomain ---------------------------------

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile(_NAME_FMT)
_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_VALUE_FMT = f"({_NAME_FMT})?"
_VALUE_RE = re.compile(_VALUE_FMT)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character"
)
_DNS_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _DNS_LABEL_FMT + "(\\." + _DNS_LABEL_FMT + ")*"
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN_FMT)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """util/validation's RegexError (note its spacing: ``'a',  or 'b', regex...``)."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def subdomain_errors(value: str) -> list[str]:
    """content.IsDNS1123Subdomain (lengths in bytes)."""
    errs = ["must be no more than 253 bytes"] if _nbytes(value) > 253 else []
    if not _SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    return errs


def qualified_name_errors(value: str) -> list[str]:
    """content.IsLabelKey (= IsQualifiedName): ``[prefix/]name``."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in subdomain_errors(prefix))
    if not name:
        errs.append("name part must be non-empty")
    elif _nbytes(name) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _NAME_RE.fullmatch(name):
        errs.append(
            "name part " + regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    """content.IsLabelValue."""
    errs = ["must be no more than 63 bytes"] if _nbytes(value) > 63 else []
    if not _VALUE_RE.fullmatch(value):
        errs.append(regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def go_json(value: Any) -> str:
    """Go's ``json.Marshal`` of a value, as field errors render non-scalar bad values."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def invalid(path: str, shown: str, detail: str) -> Cause:
    """field.Invalid with an already rendered bad value."""
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: {detail}", path)


# --- the rules ------------------------------------------------------------------------------


def label_causes(labels: Any, path: str) -> list[Cause]:
    """v1validation.ValidateLabels (keys in sorted order: Go's map order is random)."""
    if not isinstance(labels, dict):
        return []
    causes: list[Cause] = []
    for key in sorted(k for k in labels if isinstance(k, str)):
        causes += [invalid(path, go_quote(key), m) for m in qualified_name_errors(key)]
        value = labels[key]
        if isinstance(value, str):
            causes += [invalid(path, go_quote(value), m) for m in label_value_errors(value)]
    return causes


def annotation_causes(annotations: Any, path: str) -> list[Cause]:
    """apimachinery ValidateAnnotations: keys are qualified names (case-insensitive), the whole
    map at most 256 KiB."""
    if not isinstance(annotations, dict):
        return []
    causes: list[Cause] = []
    total = 0
    for key in sorted(k for k in annotations if isinstance(k, str)):
        causes += [invalid(path, go_quote(key), m) for m in qualified_name_errors(key.lower())]
        value = annotations[key]
        total += _nbytes(key) + (_nbytes(value) if isinstance(value, str) else 0)
    if total > ANNOTATIONS_SIZE_LIMIT:
        causes.append(
            Cause(
                "FieldValueTooLong",
                f"Too long: may not be more than {ANNOTATIONS_SIZE_LIMIT} bytes",
                path,
            )
        )
    return causes


def _group_version(api_version: str) -> tuple[str, str] | None:
    """schema.ParseGroupVersion: None when it does not parse."""
    if not api_version or api_version == "/":
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", api_version
    if len(parts) == 2:
        return parts[0], parts[1]
    return None


_OWNER_FIELDS = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")


def _owner_json(ref: Obj) -> Any:
    out: Obj = {}
    for key in _OWNER_FIELDS[:4]:
        value = ref.get(key)
        out[key] = value if isinstance(value, str) else ""
    for key in _OWNER_FIELDS[4:]:
        if isinstance(ref.get(key), bool):
            out[key] = ref[key]
    return out


def owner_reference_causes(refs: Any, path: str) -> list[Cause]:
    """apimachinery ValidateOwnerReferences (paths without the index, as kube has them)."""
    if not isinstance(refs, list):
        return []
    causes: list[Cause] = []
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, dict):
            continue
        fields: dict[str, str] = {}
        for key in _OWNER_FIELDS[:4]:
            value = ref.get(key)
            fields[key] = value if isinstance(value, str) else ""
        gv = _group_version(fields["apiVersion"])
        group, version = gv if gv is not None else ("", "")
        if not version:
            causes.append(
                invalid(
                    f"{path}.apiVersion",
                    go_quote(fields["apiVersion"]),
                    "version must not be empty",
                )
            )
        for key in ("kind", "name", "uid"):
            if not fields[key]:
                causes.append(invalid(f"{path}.{key}", '""', "must not be empty"))
        kind = fields["kind"]
        if (group, version, kind) in BANNED_OWNERS:
            causes.append(
                invalid(
                    path,
                    go_json(_owner_json(ref)),
                    f"{group}/{version}, Kind={kind} is disallowed from being an owner",
                )
            )
        if ref.get("controller") is True:
            current = f"{fields['kind']}/{fields['name']}"
            if first_controller:
                shown = go_json([_owner_json(r) for r in refs if isinstance(r, dict)])
                causes.append(
                    invalid(
                        path,
                        shown,
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {first_controller} and {current}",
                    )
                )
            else:
                first_controller = current
    return causes


def finalizer_causes(finalizers: Any, path: str, builtin: bool, create: bool) -> list[Cause]:
    """apimachinery ValidateFinalizers (on create: qualified names, not both ``orphan`` and
    ``foregroundDeletion``) and, for built-in kinds, core's standard-name rule (each item)."""
    if not isinstance(finalizers, list):
        return []
    names = [f for f in finalizers if isinstance(f, str)]
    causes: list[Cause] = []
    if create:
        for name in names:
            causes += [invalid(path, go_quote(name), m) for m in qualified_name_errors(name)]
        if "orphan" in names and "foregroundDeletion" in names:
            causes.append(
                invalid(
                    path,
                    go_json(names),
                    "finalizer orphan and foregroundDeletion cannot be both set",
                )
            )
    if builtin:
        for index, name in enumerate(finalizers):
            if isinstance(name, str) and "/" not in name and name not in STANDARD_FINALIZERS:
                causes.append(
                    invalid(
                        f"{path}[{index}]",
                        go_quote(name),
                        "name is neither a standard finalizer name nor is it fully qualified",
                    )
                )
    return causes


def generate_name_causes(meta: Obj, names: NameCheck) -> list[Cause]:
    """ValidateObjectMetaAccessor's generateName check: the kind's name rule on the prefix, a
    trailing dash allowed (apimachinery maskTrailingDash)."""
    prefix = meta.get("generateName")
    if not isinstance(prefix, str) or not prefix:
        return []
    masked = prefix[:-1] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix
    causes = [invalid("metadata.generateName", go_quote(prefix), m) for m in names(masked)]
    name = meta.get("name")
    if isinstance(name, str) and name:  # the generated name is validated too, as kube does
        causes += [invalid("metadata.name", go_quote(name), m) for m in names(name)]
    return causes


def _core_rules(info: ResourceInfo) -> bool:
    """Whether the kind's metadata goes through core's ValidateObjectMeta (finalizer names)."""
    return info.builtin and info.group not in _GENERIC_META_GROUPS


def _common(info: ResourceInfo, meta: Obj) -> list[Cause]:
    return (
        label_causes(meta.get("labels"), "metadata.labels")
        + annotation_causes(meta.get("annotations"), "metadata.annotations")
        + owner_reference_causes(meta.get("ownerReferences"), "metadata.ownerReferences")
    )


def create_causes(info: ResourceInfo, obj: Obj, names: NameCheck) -> list[Cause]:
    """The causes of a 422 in a new object's metadata (ValidateObjectMeta)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return []
    return (
        generate_name_causes(meta, names)
        + _common(info, meta)
        + finalizer_causes(meta.get("finalizers"), "metadata.finalizers", _core_rules(info), True)
    )


def update_causes(info: ResourceInfo, new: Obj, old: Obj) -> list[Cause]:
    """The causes of a 422 in an updated object's metadata (ValidateObjectMetaUpdate; the
    immutable fields and new finalizers while deleting are :mod:`objectmeta`'s)."""
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        return []
    return _common(info, meta) + finalizer_causes(
        meta.get("finalizers"), "metadata.finalizers", _core_rules(info), False
    )
