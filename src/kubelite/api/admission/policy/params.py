"""A binding's parameters (apiserver ``pkg/admission/plugin/policy/generic/policy_dispatcher.go``
``CollectParams``): the objects of the policy's ``paramKind`` its ``paramRef`` names, read live
from the registry (a get by name, a list by selector), so a parameter's change counts from the
next write.

- No ``paramKind`` or no ``paramRef``: one evaluation with ``params`` null.
- ``name``: that object in ``paramRef.namespace`` or, for a namespaced kind without one, the
  request's namespace; ``selector``: every object it selects there (or cluster-wide).
- None found: no evaluation, unless ``parameterNotFoundAction`` is ``Deny``, a configuration
  error (``no params found for policy binding with `Deny` parameterNotFoundAction``).
"""

from __future__ import annotations

from typing import Any

from kubelite.api.admission.policy.matching import PolicyConfigError
from kubelite.api.admission.rules import labels_of
from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.errors import APIError
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.selectors import SelectorError, label_selector_of

Obj = dict[str, Any]


def param_kind_of(spec: Obj) -> tuple[str, str] | None:
    """``spec.paramKind`` as (apiVersion, kind), or None."""
    kind = spec.get("paramKind")
    if not isinstance(kind, dict):
        return None
    return str(kind.get("apiVersion") or ""), str(kind.get("kind") or "")


def gvk_text(api_version: str, kind: str) -> str:
    """Go's ``schema.GroupVersionKind`` %v: ``group/version, Kind=kind``."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


def resolve_param_kind(catalogue: Catalogue, api_version: str, kind: str) -> ResourceInfo:
    info = catalogue.lookup_api_version(api_version, kind)
    if info is None:
        raise PolicyConfigError(
            f"failed to find resource referenced by paramKind: '{gvk_text(api_version, kind)}'"
        )
    return info


async def collect_params(
    registry: Registry, info: ResourceInfo | None, param_ref: Any, namespace: str
) -> list[Obj | None]:
    """The params of one binding (``info``: the paramKind's resource, None without one).
    Raises :class:`PolicyConfigError`."""
    if info is None or not isinstance(param_ref, dict):
        return [None]
    name = param_ref.get("name") or ""
    selector = param_ref.get("selector")
    ref_namespace = param_ref.get("namespace") or ""
    where: str | None = None
    if info.namespaced:
        where = ref_namespace or namespace
        if not where:
            raise PolicyConfigError(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped "
                "resources"
            )
    elif ref_namespace:
        raise PolicyConfigError(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
        )
    params: list[Obj | None]
    if name:
        if selector is not None:
            raise PolicyConfigError("paramRef.name and paramRef.selector are mutually exclusive")
        params = [found] if (found := await _get(registry, info, where, name)) else []
    elif selector is not None:
        try:
            parsed = label_selector_of(selector if isinstance(selector, dict) else {})
        except SelectorError as exc:
            raise PolicyConfigError(str(exc)) from None
        listed = await registry.list(info, where)
        items = listed.get("items") or []
        params = [_typed(obj, info) for obj in items if parsed.matches(labels_of(obj))]
    else:
        raise PolicyConfigError("one of name or selector must be provided")
    if not params and param_ref.get("parameterNotFoundAction") == "Deny":
        raise PolicyConfigError(
            "no params found for policy binding with `Deny` parameterNotFoundAction"
        )
    return params


async def _get(registry: Registry, info: ResourceInfo, namespace: str | None, name: str) -> Any:
    try:
        obj = await registry.get(info, namespace, name)
    except APIError as exc:
        if exc.code == 404:
            return None
        raise
    return _typed(obj, info)


def _typed(obj: Obj, info: ResourceInfo) -> Obj:
    """A param with its apiVersion and kind (kube's wrappedParam sets them)."""
    if obj.get("apiVersion") and obj.get("kind"):
        return obj
    return {**obj, "apiVersion": info.api_version, "kind": info.kind}
