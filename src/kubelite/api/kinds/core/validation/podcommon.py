"""Validation: the small rules the pod-spec modules share (paths inside a volume, file modes,
object-name checks, the field errors pods.py does not import from :mod:`fields`).

Source: kube-apiserver 1.37 ``pkg/apis/core/validation/validation.go``
(``validateLocalDescendingPath``, ``validatePathNoBacksteps``, ``ValidateLocalNonReservedPath``,
``fileModeErrorMsg``, ``ValidateDNS1123Label``, ``ValidateSecretName``) and apimachinery's
``util/validation/field`` (``NotFound``, ``Duplicate``).
"""

from __future__ import annotations

from typing import Any

from kubelite.api.errors import Cause
from kubelite.api.kinds.validation.fields import as_int, invalid, render
from kubelite.api.machinery.metavalidation import subdomain_errors

FILE_MODE = "must be a number between 0 and 0777 (octal), both inclusive"


def not_found(path: str, value: Any) -> Cause:
    return Cause("FieldValueNotFound", f"Not found: {render(value)}", path)


def label_causes(value: str, path: str) -> list[Cause]:
    """ValidateDNS1123Label (pods.py owns IsDNS1123Label; imported here lazily since pods.py
    imports this module's users)."""
    from kubelite.api.kinds.core.validation.pods import dns1123_label_errors

    return [invalid(path, value, m) for m in dns1123_label_errors(value)]


def subdomain_causes(value: str, path: str) -> list[Cause]:
    """ValidateDNS1123Subdomain, also ValidateSecretName / ValidateConfigMapName
    (NameIsDNSSubdomain)."""
    return [invalid(path, value, m) for m in subdomain_errors(value)]


def mode_causes(value: Any, path: str) -> list[Cause]:
    """A file mode (``defaultMode``, an item's ``mode``): 0 through 0777."""
    mode = as_int(value)
    if mode is not None and not 0 <= mode <= 0o777:
        return [invalid(path, mode, FILE_MODE)]
    return []


def no_backsteps(target: str, path: str) -> list[Cause]:
    """validatePathNoBacksteps: no ``..`` element."""
    if ".." in target.split("/"):
        return [invalid(path, target, "must not contain '..'")]
    return []


def local_descending_path(target: str, path: str) -> list[Cause]:
    """validateLocalDescendingPath: relative, no ``..`` element."""
    causes = [invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    return causes + no_backsteps(target, path)


def local_non_reserved_path(target: str, path: str) -> list[Cause]:
    """ValidateLocalNonReservedPath: a descending path that does not start with ``..``."""
    causes = local_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        causes.append(invalid(path, target, "must not start with '..'"))
    return causes
