"""Validation: a container's ``env`` and ``envFrom``, and the downward-API selectors they share
with ``downwardAPI`` volumes.

Source: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go`` (``ValidateEnv``,
``validateEnvVarValueFrom``, ``validateObjectFieldSelector``,
``validateContainerResourceFieldSelector``, ``validateContainerResourceDivisor``,
``validateConfigMapKeySelector``, ``validateSecretKeySelector``, ``validateFileKeySelector``,
``ValidateEnvFrom``), ``pkg/api/pod``'s ``ConvertDownwardAPIFieldLabel``, ``pkg/fieldpath``'s
``SplitMaybeSubscriptedPath`` and apimachinery's ``IsRelaxedEnvVarName`` (RelaxedEnvironment-
VariableValidation is GA) and ``IsConfigMapKey``.
"""

from __future__ import annotations

from typing import Any

from kubelite.api.encoding.quantity import parse_or_none
from kubelite.api.errors import Cause
from kubelite.api.kinds.core.validation.configdata import config_key_errors
from kubelite.api.kinds.core.validation.podcommon import (
    label_causes,
    local_descending_path,
    subdomain_causes,
)
from kubelite.api.kinds.validation.fields import (
    as_dict,
    as_list,
    as_str,
    invalid,
    not_supported,
    required,
)
from kubelite.api.machinery.metavalidation import qualified_name_errors, subdomain_errors

_RELAXED_ENV_MSG = (
    "a valid environment variable name must consist only of printable ASCII characters other "
    "than '='"
)

#: validEnvDownwardAPIFieldPathExpressions (env) and validVolumeDownwardAPIFieldPathExpressions.
ENV_FIELD_PATHS = (
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
)
VOLUME_FIELD_PATHS = (
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
)
#: The labels ConvertDownwardAPIFieldLabel knows for v1 (``spec.host`` is spec.nodeName's old name).
_CONVERTIBLE = frozenset(
    {
        "metadata.annotations",
        "metadata.labels",
        "metadata.name",
        "metadata.namespace",
        "metadata.uid",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.serviceAccountName",
        "spec.schedulerName",
        "status.phase",
        "status.hostIP",
        "status.hostIPs",
        "status.podIP",
        "status.podIPs",
    }
)
#: validContainerResourceFieldPathExpressions (sorted, as sets.List lists them).
_RESOURCE_FIELDS = (
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
)
_HUGEPAGES_PREFIXES = ("limits.hugepages-", "requests.hugepages-")
_SIZE_DIVISORS = frozenset(
    ("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)
_SIZE_LIST = "1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei"


def relaxed_env_name_errors(name: str) -> list[str]:
    """util/validation.IsRelaxedEnvVarName (the empty name is the callers' Required)."""
    if any(ord(c) > 126 or ord(c) < 32 or c == "=" for c in name):
        return [_RELAXED_ENV_MSG]
    return []


def _split_subscript(field_path: str) -> tuple[str, str] | None:
    """fieldpath.SplitMaybeSubscriptedPath: ``metadata.labels['key']`` -> (path, key)."""
    if not field_path.endswith("']"):
        return None
    head, sep, key = field_path[:-2].partition("['")
    return (head, key) if sep and head else None


def _convert_field_label(label: str) -> tuple[str, str]:
    """ConvertDownwardAPIFieldLabel for v1: the internal field path, or an error text."""
    split = _split_subscript(label)
    if split is not None:
        if split[0] in ("metadata.annotations", "metadata.labels"):
            return label, ""
        return "", f"field label does not support subscript: {label}"
    if label == "spec.host":
        return "spec.nodeName", ""
    if label in _CONVERTIBLE:
        return label, ""
    return "", f"field label not supported: {label}"


def object_field_selector_causes(ref: Any, allowed: tuple[str, ...], path: str) -> list[Cause]:
    """validateObjectFieldSelector: an apiVersion, a field path the downward API serves (a
    label or annotation subscript a qualified name)."""
    sel = as_dict(ref)
    api_version, field_path = as_str(sel.get("apiVersion")), as_str(sel.get("fieldPath"))
    if not api_version:
        return [required(f"{path}.apiVersion")]
    if not field_path:
        return [required(f"{path}.fieldPath")]
    error = f"unsupported pod version: {api_version}" if api_version != "v1" else ""
    internal = ""
    if not error:
        internal, error = _convert_field_label(field_path)
    if error:
        return [invalid(f"{path}.fieldPath", field_path, f"error converting fieldPath: {error}")]
    split = _split_subscript(internal)
    if split is not None:
        name, key = split
        if name == "metadata.annotations":
            key = key.lower()
        elif name != "metadata.labels":
            return [invalid(path, name, "does not support subscript")]
        return [invalid(path, key, m) for m in qualified_name_errors(key)]
    if internal not in allowed:
        return [not_supported(f"{path}.fieldPath", internal, sorted(allowed))]
    return []


def _divisor_causes(resource: str, raw: Any, path: str) -> list[Cause]:
    """validateContainerResourceDivisor: a divisor (unset or zero: none) the resource allows."""

    divisor = parse_or_none(raw) if raw is not None else None
    if divisor is None or divisor.value == 0:
        return []
    shown, where = str(divisor), f"{path}.divisor"
    causes: list[Cause] = []
    if resource in ("limits.cpu", "requests.cpu") and shown not in ("1m", "1"):
        detail = "only divisor's values 1m and 1 are supported with the cpu resource"
        causes.append(invalid(where, resource, detail))
    for names, what in (
        (("limits.memory", "requests.memory"), "memory"),
        (("limits.ephemeral-storage", "requests.ephemeral-storage"), "local ephemeral storage"),
    ):
        if resource in names and shown not in _SIZE_DIVISORS:
            detail = f"only divisor's values {_SIZE_LIST} are supported with the {what} resource"
            causes.append(invalid(where, resource, detail))
    if resource.startswith(_HUGEPAGES_PREFIXES) and shown not in _SIZE_DIVISORS:
        detail = f"only divisor's values {_SIZE_LIST} are supported with the hugepages resource"
        causes.append(invalid(where, resource, detail))
    return causes


def resource_field_selector_causes(ref: Any, path: str, volume: bool) -> list[Cause]:
    """validateContainerResourceFieldSelector: a containerName (volumes only), a supported
    resource (or a hugepages one), a divisor that fits it."""
    sel = as_dict(ref)
    resource = as_str(sel.get("resource"))
    causes: list[Cause] = []
    if volume and not as_str(sel.get("containerName")):
        causes.append(required(f"{path}.containerName"))
    elif not resource:
        causes.append(required(f"{path}.resource"))
    elif resource not in _RESOURCE_FIELDS and not resource.startswith(_HUGEPAGES_PREFIXES):
        causes.append(not_supported(f"{path}.resource", resource, list(_RESOURCE_FIELDS)))
    return causes + _divisor_causes(resource, sel.get("divisor"), path)


def _key_selector_causes(ref: Any, path: str) -> list[Cause]:
    """validateConfigMapKeySelector / validateSecretKeySelector: the name is a subdomain (an
    empty one too: kube checks it unconditionally), the key required and a config key."""
    sel = as_dict(ref)
    name, key = as_str(sel.get("name")), as_str(sel.get("key"))
    causes = [invalid(f"{path}.name", name, m) for m in subdomain_errors(name)]
    if not key:
        return [*causes, required(f"{path}.key")]
    return causes + [invalid(f"{path}.key", key, m) for m in config_key_errors(key)]


def _file_key_selector_causes(ref: Any, path: str) -> list[Cause]:
    """validateFileKeySelector (EnvFiles): a key that is an env var name, a relative path
    without backsteps, a volume name that is a DNS label."""
    sel = as_dict(ref)
    key, file, volume = (as_str(sel.get(k)) for k in ("key", "path", "volumeName"))
    causes: list[Cause] = []
    if not key:
        causes.append(required(f"{path}.key"))
    else:
        causes += [invalid(f"{path}.key", key, m) for m in relaxed_env_name_errors(key)]
    if not file:
        causes.append(required(f"{path}.path"))
    else:
        causes += local_descending_path(file, f"{path}.path")
    if not volume:
        causes.append(required(f"{path}.volumeName"))
    else:
        causes += label_causes(volume, f"{path}.volumeName")
    return causes


_VALUE_FROM = (
    "fieldRef",
    "resourceFieldRef",
    "configMapKeyRef",
    "secretKeyRef",
    "fileKeyRef",
)


def _value_from_causes(env: dict[str, Any], path: str) -> list[Cause]:
    """validateEnvVarValueFrom: exactly one source, none with a ``value``."""
    source = env.get("valueFrom")
    if not isinstance(source, dict):
        return []
    causes: list[Cause] = []
    count = 0
    for key in _VALUE_FROM:
        ref = source.get(key)
        if ref is None:
            continue
        count += 1
        where = f"{path}.{key}"
        if key == "fieldRef":
            causes += object_field_selector_causes(ref, ENV_FIELD_PATHS, where)
        elif key == "resourceFieldRef":
            causes += resource_field_selector_causes(ref, where, volume=False)
        elif key == "fileKeyRef":
            causes += _file_key_selector_causes(ref, where)
        else:
            causes += _key_selector_causes(ref, where)
    if not count:
        detail = (
            "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, "
            "`secretKeyRef` or `fileKeyRef`"
        )
        causes.append(invalid(path, "", detail))
    elif as_str(env.get("value")):
        causes.append(invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        causes.append(invalid(path, "", "may not have more than one field specified at a time"))
    return causes


def env_causes(env: Any, path: str) -> list[Cause]:
    """ValidateEnv: each variable named (relaxed names), its valueFrom valid."""
    causes: list[Cause] = []
    for index, raw in enumerate(as_list(env)):
        var = as_dict(raw)
        name = as_str(var.get("name"))
        where = f"{path}[{index}]"
        if not name:
            causes.append(required(f"{where}.name"))
        else:
            causes += [invalid(f"{where}.name", name, m) for m in relaxed_env_name_errors(name)]
        causes += _value_from_causes(var, f"{where}.valueFrom")
    return causes


def env_from_causes(env_from: Any, path: str) -> list[Cause]:
    """ValidateEnvFrom: a relaxed prefix, exactly one of configMapRef / secretRef, named."""
    causes: list[Cause] = []
    for index, raw in enumerate(as_list(env_from)):
        source = as_dict(raw)
        where = f"{path}[{index}]"
        prefix = as_str(source.get("prefix"))
        causes += [invalid(f"{where}.prefix", prefix, m) for m in relaxed_env_name_errors(prefix)]
        count = 0
        for key in ("configMapRef", "secretRef"):
            ref = source.get(key)
            if ref is None:
                continue
            count += 1
            name = as_str(as_dict(ref).get("name"))
            if not name:
                causes.append(required(f"{where}.{key}.name"))
            else:
                causes += subdomain_causes(name, f"{where}.{key}.name")
        if not count:
            causes.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            detail = "may not have more than one field specified at a time"
            causes.append(invalid(path, "", detail))
    return causes
