"""Kubernetes' own OpenAPI definitions of the built-in kinds, as kubernetes-validate ships them
(``kubernetes-json-schema/v1.37.0-local[-strict]/_definitions.json``), loaded lazily: a kind's
definition is the one whose ``x-kubernetes-group-version-kind`` names it
(:attr:`ResourceInfo.schema_ref`); a custom resource's is its CRD's schema.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

from kubelite.api.catalogue.types import KUBERNETES_VERSION, CatalogueError, ResourceInfo


def _package_dir(name: str) -> Path:
    """Where package ``name`` lives, found without importing (executing) it or its parents
    (``find_spec`` of a dotted name imports the parent: for ``lightkube.resources``, the whole
    lightkube client, a fifth of a server's start-up)."""
    top, *rest = name.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except ModuleNotFoundError:
        spec = None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(location).joinpath(*rest)
        if path.is_dir():
            return path
    raise CatalogueError(f"package {name!r} is not installed")


def _distribution_version(package_dir: Path, distribution: str) -> str:
    """The installed version of ``distribution``, read from its ``.dist-info`` directory name
    beside the package (importlib.metadata would cost ~40 ms of imports on a warm start)."""
    prefix = distribution.replace("-", "_") + "-"
    for parent in (package_dir.parent, package_dir.parent.parent):
        for entry in sorted(parent.glob(prefix + "*.dist-info")):
            return entry.name[len(prefix) : -len(".dist-info")]
    import importlib.metadata  # an unusual layout (e.g. an egg); rare, so the slow way is fine

    return importlib.metadata.version(distribution)


def _definitions_path(strict: bool) -> Path:
    base = _package_dir("kubernetes_validate") / "kubernetes-json-schema"
    suffix = "-local-strict" if strict else "-local"
    path = base / f"v{KUBERNETES_VERSION}.0{suffix}" / "_definitions.json"
    if not path.is_file():
        raise CatalogueError(f"kubernetes-validate has no definitions for {KUBERNETES_VERSION}")
    return path


def load_schema_definitions(strict: bool = False) -> dict[str, Any]:
    """Kubernetes 1.37's OpenAPI definitions, by name (``io.k8s.api.core.v1.ConfigMap``).

    JSON Schema 2020-12 as kubernetes-validate ships it: ``$ref`` values are
    ``#/$defs/<name>``, and properties keep the ``x-kubernetes-*`` extensions
    (``group-version-kind``, ``patch-merge-key``, ``patch-strategy``, ``list-type``,
    ``list-map-keys``). ``strict=True`` is the variant with ``additionalProperties: false`` on
    every object with fixed properties, for strict field validation. Loaded once, on first use;
    the result is shared, so never mutate it.
    """
    return _load_definitions(bool(strict))


@functools.cache  # keyed on one positional bool, so each variant is read at most once
def _load_definitions(strict: bool) -> dict[str, Any]:
    with _definitions_path(strict).open("rb") as f:
        document = json.load(f)
    definitions = document["$defs"]
    assert isinstance(definitions, dict)
    return definitions


@functools.cache
def _gvk_index() -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, definition in _load_definitions(False).items():
        for gvk in definition.get("x-kubernetes-group-version-kind", ()):
            index.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return index


def definition_name(group: str, version: str, kind: str) -> str | None:
    """The definition whose ``x-kubernetes-group-version-kind`` names this kind, if any
    (``("autoscaling", "v1", "Scale")`` gives ``io.k8s.api.autoscaling.v1.Scale``)."""
    return _gvk_index().get((group, version, kind))


def resolve_ref(ref: str, strict: bool = False) -> dict[str, Any]:
    """The definition a ``$ref`` such as ``#/$defs/io.k8s.api.core.v1.PodSpec`` points at."""
    prefix = "#/$defs/"
    if not ref.startswith(prefix):
        raise KeyError(ref)
    definition = _load_definitions(bool(strict))[ref[len(prefix) :]]
    assert isinstance(definition, dict)
    return definition


def custom_schema(info: ResourceInfo) -> dict[str, Any] | None:
    """A custom resource version's ``openAPIV3Schema`` (ResourceInfo.schema), parsed once per
    distinct text; shared, never mutate it. None for a kind without one."""
    return parse_schema(info.schema) if info.schema else None


@functools.lru_cache(maxsize=256)
def parse_schema(text: str) -> dict[str, Any]:
    """A schema from its JSON text (ResourceInfo.schema), parsed once; shared, never mutate it."""
    parsed: dict[str, Any] = json.loads(text)
    return parsed


def schema_for(info: ResourceInfo, strict: bool = False) -> dict[str, Any]:
    """The JSON schema of ``info``'s objects, self-contained: the kind's definition (its
    ``properties`` at the top) plus ``$defs`` holding every definition, so each ``$ref``
    (``#/$defs/<name>``) resolves within the returned document, by a JSON Schema 2020-12
    validator or by hand (``schema["$defs"][name]``, or :func:`resolve_ref`). Shared and cached:
    never mutate it. KeyError if the kind has no definition (a CRD: its schema comes from the
    CRD itself)."""
    if not info.schema_ref:
        raise KeyError(f"{info.kind}.{info.group_version} has no OpenAPI definition")
    return _schema_document(info.schema_ref, bool(strict))


@functools.cache
def _schema_document(name: str, strict: bool) -> dict[str, Any]:
    definitions = _load_definitions(strict)
    return {**definitions[name], "$defs": definitions}
