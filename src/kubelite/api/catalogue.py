"""The resource catalogue: every kind kubelite serves, each declared once.

A kind is one :class:`ResourceInfo`. Routes, discovery, OpenAPI, Table output, strategic merge
keys and strict field validation are all generated from it, for built-in kinds and (next) for
CustomResourceDefinitions alike: a CRD becomes a ResourceInfo passed to :meth:`Catalogue.add`.

Built-in kinds are generated from maintained data, not written by hand:

- **lightkube-models** (its ``lightkube/resources/*.py``) gives each resource's group, version,
  kind, plural, scope, verbs and subresources. Those modules import ``lightkube.core``, which the
  models package does not ship, so they are *parsed* (``ast``), never imported.
- **kubernetes-validate** ships Kubernetes' own OpenAPI definitions for 1.37
  (``kubernetes-json-schema/v1.37.0-local[-strict]/_definitions.json``); a kind's definition is
  the one whose ``x-kubernetes-group-version-kind`` names it (:attr:`ResourceInfo.schema_ref`).
- :mod:`kubelite.api.catalogue_extra` adds what neither has: short names, categories,
  generation tracking, update policies, Table columns, group order.

Versions served: kube-apiserver 1.37 serves every GA version by default and no alpha or beta one
(new betas are off by default since 1.24, and every 1.37 beta is newer), so the catalogue holds
the GA group-versions lightkube-models ships: core/v1 and ``<group>/v1`` for every group, plus
autoscaling/v1 *and* v2 (both GA; v2 preferred). The same object served at two versions
(HorizontalPodAutoscaler in autoscaling/v1 and v2; Event in core/v1 and events.k8s.io/v1) is two
ResourceInfos; converting between them is the server's business.

:func:`load_builtin_catalogue` derives all this once and caches the result as JSON under the
user's cache directory (``$KUBELITE_CACHE_DIR``, else ``$XDG_CACHE_HOME/kubelite``, else
``~/.cache/kubelite``), keyed by both packages' versions and the bytes of this module and of
``catalogue_extra``; a warm start only reads that file. The OpenAPI definitions (a 1.8 MB file)
load lazily, on the first :func:`load_schema_definitions` or :func:`schema_for`.

Table rendering (:func:`render_cell`): each :class:`Column` names a JSON path into the object
(the subset of kubectl JSONPath used by CRD ``additionalPrinterColumns``: ``.field``,
``['field']``, ``[n]``, ``[*]`` and ``[?(@.a.b==literal)]``) and a ``render`` mode: ``value``,
``age``, ``count``, ``sum`` or ``ratio`` (documented on :func:`render_cell`). A CRD printer column
maps to ``value``, except ``type: date`` columns, which CRs render as ``age``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubelite.api import catalogue_extra as extra
from kubelite.api.selectors import DEFAULT_LABELS, NOT_KNOWN, NOT_SUPPORTED, FieldLabel

if TYPE_CHECKING:  # ast and tempfile are imported only when the catalogue is derived
    import ast

__all__ = [
    "KUBERNETES_VERSION",
    "STANDARD_VERBS",
    "Catalogue",
    "CatalogueError",
    "Column",
    "GroupInfo",
    "ResourceInfo",
    "Subresource",
    "build_builtin_catalogue",
    "cache_key",
    "cache_path",
    "custom_schema",
    "default_cache_dir",
    "definition_name",
    "human_duration",
    "json_path_values",
    "load_builtin_catalogue",
    "load_schema_definitions",
    "parse_schema",
    "render_cell",
    "resolve_ref",
    "schema_for",
    "version_priority",
]

#: The Kubernetes minor version whose built-in kinds and OpenAPI definitions are served.
KUBERNETES_VERSION = "1.37"
#: Bumped whenever the cache file's shape changes.
CACHE_FORMAT = 4

#: Discovery verbs of an ordinary stored kind, in the (sorted) order kube-apiserver lists them.
STANDARD_VERBS: tuple[str, ...] = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)
_LIGHTKUBE_VERBS: dict[str, str | None] = {
    "post": "create",
    "put": "update",
    # Cluster-wide list/watch of a namespaced kind: implied by list/watch in discovery.
    "global_list": None,
    "global_watch": None,
}
#: A group-version kube-apiserver serves by default: GA only (see catalogue_extra).
SERVED_VERSION = re.compile(r"v\d+")
_MODULE_VERSION = re.compile(r"_(v\d+(?:(?:alpha|beta)\d+)?)\.py")
_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


class CatalogueError(Exception):
    """The maintained data could not be found or read, or a kind clashes with another."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a kind's ``meta.k8s.io/v1`` Table (``columnDefinitions[i]``).

    ``name``, ``type``, ``format``, ``description`` and ``priority`` go to the client as they are
    (priority 0: always shown; 1: ``-o wide``). ``json_path``, ``render`` and ``default`` say
    how :func:`render_cell` computes the cell.
    """

    name: str
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0
    json_path: str = ""
    render: str = "value"
    default: str | int | bool | None = None

    def definition(self) -> dict[str, Any]:
        """The ``TableColumnDefinition`` for this column."""
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


@dataclass(frozen=True, slots=True)
class Subresource:
    """A subresource of a kind, as discovery lists it (``deployments/scale``).

    ``group``/``version``/``kind`` are the kind the subresource speaks (``autoscaling/v1 Scale``
    for scale; the parent's own kind for status). ``served`` is False for the ones lightkube
    knows but kubelite does not route (pods/log, pods/binding, serviceaccounts/token, ...).
    """

    name: str
    group: str
    version: str
    kind: str
    verbs: tuple[str, ...]
    served: bool = True


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """Everything kubelite needs to know about one kind at one version.

    ``subresources`` holds the names of the *served* subresources (``("status", "scale")``);
    ``known_subresources`` holds the details of every subresource known, served or not. A name in
    ``subresources`` without details gets them synthesised (status: the kind itself; scale:
    autoscaling/v1 Scale), so a CRD need only say ``subresources=("status",)``.

    What a kind's writes do (generation, update and delete rules) is not declared here but in
    its strategy (:mod:`kubelite.api.kinds`).
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    singular: str = ""
    verbs: tuple[str, ...] = STANDARD_VERBS
    subresources: tuple[str, ...] = ()
    known_subresources: tuple[Subresource, ...] = ()
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    list_kind: str = ""
    table_columns: tuple[Column, ...] = ()
    schema_ref: str = ""
    builtin: bool = True
    #: Where another version of the same kind owns the objects, as kube-apiserver shares one
    #: storage between them: the group whose keys hold them (events.k8s.io/v1 Event lives in
    #: core's ``/registry/events``) and the apiVersion they are stored at (autoscaling/v1 HPAs
    #: are stored as autoscaling/v2). Empty: this version's own.
    storage_group: str | None = None
    storage_version: str = ""
    #: A custom resource's declaration beyond the flags: its version's ``openAPIV3Schema`` as
    #: JSON text (validation, defaulting, pruning, OpenAPI and explain all read it), and its
    #: scale subresource's (specReplicasPath, statusReplicasPath, labelSelectorPath).
    schema: str = ""
    scale_paths: tuple[str, str, str] | tuple[()] = ()
    #: The labels its field selectors accept, and where each value is read (kube's
    #: fieldLabelConversionFunc and GetAttrs), and the 400 text for another (``{label}``,
    #: ``{quoted}``: see :func:`kubelite.api.selectors.field_label_error`). Left empty: runtime's
    #: default, ``metadata.name`` and ``metadata.namespace`` with its "is not a known field
    #: selector" text; labels without a text: ``field label not supported: <label>``.
    field_labels: tuple[FieldLabel, ...] = ()
    field_label_error: str = ""
    #: A custom resource converted between its versions by a webhook (its CRD's conversion
    #: strategy ``Webhook``): the CRD's name, ``spec.conversion.webhook`` and the storage
    #: version's schema, as JSON text (:mod:`kubelite.api.kinds.crd_conversion`). Empty: the
    #: versions differ only in apiVersion (strategy ``None``) or the kind is built in.
    conversion: str = ""

    def __post_init__(self) -> None:
        if not self.field_label_error:
            default = NOT_SUPPORTED if self.field_labels else NOT_KNOWN
            object.__setattr__(self, "field_label_error", default)
        if not self.field_labels:
            object.__setattr__(self, "field_labels", DEFAULT_LABELS)
        if not self.singular:
            object.__setattr__(self, "singular", self.kind.lower())
        if not self.list_kind:
            object.__setattr__(self, "list_kind", self.kind + "List")
        if not self.table_columns:
            object.__setattr__(self, "table_columns", _columns(extra.DEFAULT_COLUMNS))
        known = {s.name for s in self.known_subresources}
        missing = tuple(
            self._synthesised_subresource(name) for name in self.subresources if name not in known
        )
        if missing:
            object.__setattr__(self, "known_subresources", self.known_subresources + missing)

    def _synthesised_subresource(self, name: str) -> Subresource:
        verbs = ("get", "patch", "update")
        if name == "scale":
            return Subresource(name, "autoscaling", "v1", "Scale", verbs)
        return Subresource(name, self.group, self.version, self.kind, verbs)

    @property
    def group_version(self) -> str:
        """``v1`` for the core group, else ``<group>/<version>``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` of this kind's objects (the same as :attr:`group_version`)."""
        return self.group_version

    @property
    def storage_api_version(self) -> str:
        """The ``apiVersion`` this kind's objects are stored at."""
        return self.storage_version or self.group_version

    @property
    def key_group(self) -> str:
        """The group whose storage keys hold this kind's objects."""
        return self.group if self.storage_group is None else self.storage_group

    @property
    def qualified_resource(self) -> str:
        """``configmaps`` or ``deployments.apps``: the name error messages use."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def strategic_merge(self) -> bool:
        """Whether PATCH accepts ``application/strategic-merge-patch+json`` (built-ins only)."""
        return self.builtin

    def subresource(self, name: str) -> Subresource | None:
        """The details of subresource ``name`` (served or not), or None if the kind has none."""
        for sub in self.known_subresources:
            if sub.name == name:
                return sub
        return None

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict that :meth:`from_json` turns back into an equal ResourceInfo."""
        return {
            "group": self.group,
            "version": self.version,
            "kind": self.kind,
            "plural": self.plural,
            "namespaced": self.namespaced,
            "singular": self.singular,
            "verbs": list(self.verbs),
            "subresources": list(self.subresources),
            "known_subresources": [
                [s.name, s.group, s.version, s.kind, list(s.verbs), s.served]
                for s in self.known_subresources
            ],
            "short_names": list(self.short_names),
            "categories": list(self.categories),
            "list_kind": self.list_kind,
            "table_columns": [
                [
                    c.name,
                    c.type,
                    c.format,
                    c.description,
                    c.priority,
                    c.json_path,
                    c.render,
                    c.default,
                ]
                for c in self.table_columns
            ],
            "schema_ref": self.schema_ref,
            "builtin": self.builtin,
            "storage_group": self.storage_group,
            "storage_version": self.storage_version,
            "schema": self.schema,
            "scale_paths": list(self.scale_paths),
            "field_labels": [
                [f.name, [list(path) for path in f.paths], f.zero] for f in self.field_labels
            ],
            "field_label_error": self.field_label_error,
            "conversion": self.conversion,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ResourceInfo:
        return cls(
            group=data["group"],
            version=data["version"],
            kind=data["kind"],
            plural=data["plural"],
            namespaced=data["namespaced"],
            singular=data["singular"],
            verbs=tuple(data["verbs"]),
            subresources=tuple(data["subresources"]),
            known_subresources=tuple(
                Subresource(n, g, v, k, tuple(verbs), served)
                for n, g, v, k, verbs, served in data["known_subresources"]
            ),
            short_names=tuple(data["short_names"]),
            categories=tuple(data["categories"]),
            list_kind=data["list_kind"],
            table_columns=tuple(Column(*c) for c in data["table_columns"]),
            schema_ref=data["schema_ref"],
            builtin=data["builtin"],
            storage_group=data["storage_group"],
            storage_version=data["storage_version"],
            schema=data["schema"],
            scale_paths=tuple(data["scale_paths"]),
            field_labels=tuple(
                FieldLabel(name, tuple(tuple(path) for path in paths), zero)
                for name, paths, zero in data["field_labels"]
            ),
            field_label_error=data["field_label_error"],
            conversion=data.get("conversion", ""),
        )


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """One API group: its served versions, most preferred first."""

    name: str
    versions: tuple[str, ...]

    @property
    def preferred_version(self) -> str:
        return self.versions[0]


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key putting versions in Kubernetes' priority order, most preferred first.

    GA before beta before alpha, then higher major, then higher minor (``v2, v1, v1beta2,
    v1beta1, v1alpha1``); versions not of that form last, alphabetically.
    """
    match = _VERSION.fullmatch(version)
    if match is None:
        return (3, 0, 0, version)
    major, stage, minor = match.groups()
    return ({None: 0, "beta": 1, "alpha": 2}[stage], -int(major), -int(minor or 0), "")


def _group_rank(group: str) -> tuple[int, str]:
    try:
        return (extra.GROUP_ORDER.index(group), "")
    except ValueError:
        return (len(extra.GROUP_ORDER), group)


class Catalogue:
    """The set of served kinds, looked up by resource or by kind.

    Iteration is in discovery order: groups as kube-apiserver orders them (core first; added
    groups after the built-in ones, alphabetically), versions most preferred first, resources by
    plural.
    """

    def __init__(self, infos: Iterable[ResourceInfo] = ()) -> None:
        self._by_resource: dict[tuple[str, str, str], ResourceInfo] = {}
        self._by_kind: dict[tuple[str, str, str], ResourceInfo] = {}
        self._ordered: tuple[ResourceInfo, ...] | None = None
        for info in infos:
            self.add(info)

    def add(self, info: ResourceInfo, *, replace: bool = False) -> None:
        """Serve ``info``. A kind or resource already served at that group-version is an error
        (:class:`CatalogueError`) unless ``replace``, which drops the one(s) it clashes with."""
        resource_key = (info.group, info.version, info.plural)
        kind_key = (info.group, info.version, info.kind)
        clashes = {self._by_resource.get(resource_key), self._by_kind.get(kind_key)} - {None}
        if clashes and not replace:
            raise CatalogueError(
                f"{info.kind} ({info.plural}) is already served at {info.group_version}"
            )
        for old in clashes:
            assert old is not None
            self.remove(old.group, old.version, old.plural)
        self._by_resource[resource_key] = info
        self._by_kind[kind_key] = info
        self._ordered = None

    def remove(self, group: str, version: str, plural: str) -> ResourceInfo:
        """Stop serving a resource and return it; KeyError if it is not served."""
        info = self._by_resource.pop((group, version, plural))
        del self._by_kind[(group, version, info.kind)]
        self._ordered = None
        return info

    def lookup(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        """The kind served at ``/apis/<group>/<version>/<plural>`` (``/api/v1/...`` for "")."""
        return self._by_resource.get((group, version, plural))

    def require(self, group: str, version: str, plural: str) -> ResourceInfo:
        """:meth:`lookup` of a kind the server cannot run without (ValueError if unserved)."""
        info = self.lookup(group, version, plural)
        if info is None:
            raise ValueError(f"the catalogue does not serve {plural}")
        return info

    def lookup_kind(self, group: str, version: str, kind: str) -> ResourceInfo | None:
        return self._by_kind.get((group, version, kind))

    def lookup_api_version(self, api_version: str, kind: str) -> ResourceInfo | None:
        """The kind an object's ``apiVersion`` and ``kind`` name (``"apps/v1", "Deployment"``)."""
        group, _, version = api_version.rpartition("/")
        return self._by_kind.get((group, version, kind))

    def resources(self, group: str, version: str) -> list[ResourceInfo]:
        """The kinds of one group-version, by plural (``/apis/<group>/<version>`` order)."""
        return [i for i in self if i.group == group and i.version == version]

    def groups(self) -> list[GroupInfo]:
        """Every group served, in ``/apis`` order; the core group "" comes first."""
        versions: dict[str, list[str]] = {}
        for info in self:
            listed = versions.setdefault(info.group, [])
            if info.version not in listed:
                listed.append(info.version)
        return [GroupInfo(name, tuple(vs)) for name, vs in versions.items()]

    def group(self, name: str) -> GroupInfo | None:
        for group in self.groups():
            if group.name == name:
                return group
        return None

    def _order(self) -> tuple[ResourceInfo, ...]:
        if self._ordered is None:
            self._ordered = tuple(
                sorted(
                    self._by_resource.values(),
                    key=lambda i: (_group_rank(i.group), version_priority(i.version), i.plural),
                )
            )
        return self._ordered

    def __iter__(self) -> Iterator[ResourceInfo]:
        return iter(self._order())

    def __len__(self) -> int:
        return len(self._by_resource)

    def __contains__(self, info: object) -> bool:
        return isinstance(info, ResourceInfo) and (
            self._by_resource.get((info.group, info.version, info.plural)) == info
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Catalogue):
            return NotImplemented
        return self._order() == other._order()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"<Catalogue of {len(self)} resources>"


# --- the maintained data ---------------------------------------------------------------------


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


# --- building the built-in catalogue ---------------------------------------------------------


@dataclass(slots=True)
class _Declared:
    """One class from a lightkube resources module."""

    base: str  # GlobalResource, NamespacedResourceG, NamespacedSubResource, ...
    group: str
    version: str
    kind: str
    plural: str
    verbs: tuple[str, ...]
    parent: tuple[str, str, str] | None = None
    action: str | None = None


def _literal(node: ast.expr) -> Any:
    import ast

    return ast.literal_eval(node)


def _resource_def(node: ast.expr) -> tuple[str, str, str]:
    import ast

    if not (isinstance(node, ast.Call) and len(node.args) == 3):
        raise CatalogueError(f"unexpected ResourceDef: {ast.dump(node)}")
    group, version, kind = (_literal(a) for a in node.args)
    return str(group), str(version), str(kind)


def _parse_resources_module(path: Path) -> Iterator[_Declared]:
    """The classes of one lightkube resources module, read from its source: each declares
    ``_api_info = res.ApiInfo(resource=res.ResourceDef(g, v, k), plural=..., verbs=[...],
    [parent=res.ResourceDef(...), action='status'])``."""
    import ast

    tree = ast.parse(path.read_bytes(), filename=str(path))
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not node.bases:
            continue
        base = node.bases[0]
        base_name = base.attr if isinstance(base, ast.Attribute) else ""
        for stmt in node.body:
            if not (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == "_api_info"
                and isinstance(stmt.value, ast.Call)
            ):
                continue
            kwargs = {kw.arg: kw.value for kw in stmt.value.keywords if kw.arg}
            group, version, kind = _resource_def(kwargs["resource"])
            parent = _resource_def(kwargs["parent"]) if "parent" in kwargs else None
            action = _literal(kwargs["action"]) if "action" in kwargs else None
            yield _Declared(
                base=base_name,
                group=group,
                version=version,
                kind=kind,
                plural=str(_literal(kwargs["plural"])),
                verbs=tuple(str(v) for v in _literal(kwargs["verbs"])),
                parent=parent,
                action=None if action is None else str(action),
            )


def _verbs(lightkube_verbs: Iterable[str]) -> tuple[str, ...]:
    verbs = set()
    for verb in lightkube_verbs:
        mapped = _LIGHTKUBE_VERBS.get(verb, verb)
        if mapped is not None:
            verbs.add(mapped)
    return tuple(sorted(verbs))


def _served(group: str, version: str) -> bool:
    if (group, version) in extra.UNSERVED_GROUP_VERSIONS:
        return False
    return (
        SERVED_VERSION.fullmatch(version) is not None
        or (group, version) in extra.EXTRA_SERVED_GROUP_VERSIONS
    )


def _columns(specs: Iterable[extra.ColumnSpec]) -> tuple[Column, ...]:
    return tuple(
        Column(
            name=s.name,
            type=s.type,
            format=s.format,
            description=s.description,
            priority=s.priority,
            json_path=s.json_path,
            render=s.render,
            default=s.default,
        )
        for s in specs
    )


def build_builtin_catalogue() -> Catalogue:
    """Derive the built-in catalogue from the installed packages, bypassing the cache."""
    resources_dir = _package_dir("lightkube.resources")
    served_versions = {version for _, version in extra.EXTRA_SERVED_GROUP_VERSIONS}
    declared: list[_Declared] = []
    for path in sorted(resources_dir.glob("*.py")):
        match = _MODULE_VERSION.search(path.name)
        if match is None:
            continue
        module_version = match.group(1)
        if (
            SERVED_VERSION.fullmatch(module_version) is None
            and module_version not in served_versions
        ):
            continue  # alpha/beta modules: skip without parsing
        declared.extend(_parse_resources_module(path))

    subresources: dict[tuple[str, str, str], list[Subresource]] = {}
    for d in declared:
        if d.action is not None and d.parent is not None:
            subresources.setdefault(d.parent, []).append(
                Subresource(
                    name=d.action,
                    group=d.group,
                    version=d.version,
                    kind=d.kind,
                    verbs=_verbs(d.verbs),
                    served=d.action in extra.SERVED_SUBRESOURCES,
                )
            )

    infos: list[ResourceInfo] = []
    for d in declared:
        if d.action is not None or not _served(d.group, d.version):
            continue
        key = (d.group, d.plural)
        subs = tuple(
            sorted(subresources.get((d.group, d.version, d.kind), ()), key=lambda s: s.name)
        )
        schema_ref = definition_name(d.group, d.version, d.kind)
        if schema_ref is None:
            raise CatalogueError(f"no OpenAPI definition for {d.group}/{d.version} {d.kind}")
        infos.append(
            ResourceInfo(
                group=d.group,
                version=d.version,
                kind=d.kind,
                plural=d.plural,
                namespaced=d.base.startswith("Namespaced"),
                verbs=_verbs(d.verbs),
                subresources=tuple(s.name for s in subs if s.served),
                known_subresources=subs,
                short_names=extra.SHORT_NAMES.get(key, ()),
                categories=extra.CATEGORIES.get(key, ()),
                table_columns=_columns(extra.TABLE_COLUMNS.get(key, extra.DEFAULT_COLUMNS)),
                schema_ref=schema_ref,
                storage_group=extra.SHARED_STORAGE.get(key, (None, ""))[0],
                storage_version=_storage_version(d.group, d.version, d.plural),
                field_labels=_field_labels(extra.FIELD_LABELS.get(key, ())),
                field_label_error=extra.FIELD_LABEL_ERRORS.get(key, ""),
            )
        )
    return Catalogue(infos)


def _field_labels(specs: Iterable[extra.FieldLabelSpec]) -> tuple[FieldLabel, ...]:
    return tuple(FieldLabel.at(s.name, *s.paths, zero=s.zero) for s in specs)


def _storage_version(group: str, version: str, plural: str) -> str:
    """The apiVersion a kind is stored at when another version owns it, else ''."""
    stored = extra.SHARED_STORAGE.get((group, plural))
    if stored is None:
        return ""
    owner_group, owner_version = stored
    owner = f"{owner_group}/{owner_version}" if owner_group else owner_version
    own = f"{group}/{version}" if group else version
    return "" if owner == own else owner


# --- the cache -------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    """``$KUBELITE_CACHE_DIR``, else ``$XDG_CACHE_HOME/kubelite``, else ``~/.cache/kubelite``."""
    explicit = os.environ.get("KUBELITE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "kubelite" if xdg else Path.home() / ".cache" / "kubelite"


def cache_key() -> dict[str, Any]:
    """What the cached catalogue was derived from; a cache file is used only if it matches."""
    here = Path(__file__)
    sources = hashlib.sha256()
    for path in (here, here.with_name("catalogue_extra.py")):
        sources.update(path.read_bytes())
    return {
        "format": CACHE_FORMAT,
        "kubernetes": KUBERNETES_VERSION,
        "lightkube-models": _distribution_version(
            _package_dir("lightkube.resources").parent, "lightkube-models"
        ),
        "kubernetes-validate": _distribution_version(
            _package_dir("kubernetes_validate"), "kubernetes-validate"
        ),
        "sources": sources.hexdigest(),
    }


def cache_path(
    cache_dir: str | os.PathLike[str] | None = None, key: dict[str, Any] | None = None
) -> Path:
    """The cache file :func:`load_builtin_catalogue` reads and writes for the installed data
    (``key``: :func:`cache_key`, computed if not given)."""
    digest = hashlib.sha256(json.dumps(key or cache_key(), sort_keys=True).encode()).hexdigest()
    directory = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return directory / f"catalogue-{digest[:20]}.json"


def load_builtin_catalogue(cache_dir: str | os.PathLike[str] | None = None) -> Catalogue:
    """The catalogue of every built-in kind, from the cache when it matches the installed
    packages (a few milliseconds), else derived afresh and cached (tens of milliseconds).

    Each call returns a new Catalogue, so a server may add CRDs to its own. A cache that cannot
    be read or written is ignored: the catalogue is then derived on every start.
    """
    key = cache_key()
    path = cache_path(cache_dir, key)
    try:
        with path.open("rb") as f:
            document = json.load(f)
        if document.get("key") == key:
            return Catalogue(ResourceInfo.from_json(r) for r in document["resources"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # absent, unreadable, corrupt or stale: derive it again
    catalogue = build_builtin_catalogue()
    document = {"key": key, "resources": [info.to_json() for info in catalogue]}
    import tempfile

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".catalogue-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(document, f, separators=(",", ":"))
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only home: serve without caching
    return catalogue


# --- Table cells -----------------------------------------------------------------------------

_PATH_TOKEN = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_$-]+)
      | \[(?P<index>-?\d+)\]
      | \[(?P<star>\*)\]
      | \[(?P<quote>['"])(?P<quoted>.*?)(?P=quote)\]
      | \[\?\(@(?P<filter>(?:\.[A-Za-z0-9_$-]+)+)\s*==\s*(?P<literal>[^)]+?)\s*\)\]""",
    re.VERBOSE,
)


@functools.cache
def _parse_path(path: str) -> tuple[tuple[str, Any], ...]:
    tokens: list[tuple[str, Any]] = []
    position = 0
    path = path.strip()
    while position < len(path):
        match = _PATH_TOKEN.match(path, position)
        if match is None:
            raise ValueError(f"unsupported JSON path {path!r} at {position}")
        if match["field"] is not None:
            tokens.append(("field", match["field"]))
        elif match["index"] is not None:
            tokens.append(("index", int(match["index"])))
        elif match["star"] is not None:
            tokens.append(("star", None))
        elif match["quote"] is not None:
            tokens.append(("field", match["quoted"]))
        else:
            literal = match["literal"]
            if literal[:1] == "'" and literal[-1:] == "'":
                value: Any = literal[1:-1]
            else:
                value = json.loads(literal)
            tokens.append(("filter", (tuple(match["filter"].split(".")[1:]), value)))
        position = match.end()
    return tuple(tokens)


def json_path_values(path: str, obj: Any) -> list[Any]:
    """Every value ``path`` matches in ``obj``; missing branches match nothing.

    The path is a subset of kubectl JSONPath without braces: ``.field``, ``['field']``,
    ``[n]`` (negative from the end), ``[*]`` (every item of a list or value of a map) and
    ``[?(@.a.b==literal)]`` (the list items whose ``a.b`` equals a JSON or quoted literal).
    """
    current = [obj]
    for op, arg in _parse_path(path):
        found: list[Any] = []
        for node in current:
            if op == "field":
                if isinstance(node, dict) and arg in node and node[arg] is not None:
                    found.append(node[arg])
            elif op == "index":
                if isinstance(node, list) and -len(node) <= arg < len(node):
                    found.append(node[arg])
            elif op == "star":
                if isinstance(node, list):
                    found.extend(node)
                elif isinstance(node, dict):
                    found.extend(node.values())
            elif isinstance(node, list):  # filter
                keys, expected = arg
                for item in node:
                    value = item
                    for key in keys:
                        value = value.get(key) if isinstance(value, dict) else None
                    if value == expected and type(value) is type(expected):
                        found.append(item)
        current = found
    return current


def human_duration(seconds: float) -> str:
    """A duration as kubectl's AGE column shows it (apimachinery ``duration.HumanDuration``):
    ``45s``, ``2m10s``, ``15m``, ``3h12m``, ``20h``, ``4d3h``, ``120d``, ``3y10d``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = hours // 24
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{hours // 24 // 365}y"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _ratio_side(path: str, obj: Any) -> int | float:
    values = json_path_values(path, obj)
    if values and all(_is_number(v) for v in values):
        total: int | float = sum(values)
        return total
    return len(values)


def _scalar(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return value


def render_cell(column: Column, obj: dict[str, Any], now: datetime | None = None) -> Any:
    """The Table cell ``column`` shows for ``obj`` (a JSON string, number, bool or null).

    By ``column.render``:

    - ``value``: the value at ``json_path``; several matches are joined with ``,``; none gives
      ``column.default``. Maps and lists are rendered as compact JSON.
    - ``age``: the RFC 3339 time at ``json_path`` as :func:`human_duration` of ``now - time``
      (``now`` defaults to the current time); absent or unparseable gives ``column.default``.
    - ``count``: how many nodes the comma-separated paths match together; a path without
      brackets that ends at a map or list counts its entries (``.data,.binaryData`` counts keys;
      ``.secrets[*]`` counts items; ``[?(...)]`` counts the items that pass).
    - ``sum``: the sum of the numbers matched (0 if none).
    - ``ratio``: ``json_path`` is ``<a>/<b>``; the cell is ``"<a>/<b>"`` where each side is the
      sum of its matches if they are numbers, else how many there are (``0`` if none).
    """
    render = column.render
    if render == "value":
        values = json_path_values(column.json_path, obj)
        if not values:
            return column.default
        if len(values) == 1:
            return _scalar(values[0])
        return ",".join(str(_scalar(v)) for v in values)
    if render == "age":
        values = json_path_values(column.json_path, obj)
        if not values or not isinstance(values[0], str):
            return column.default
        try:
            then = datetime.fromisoformat(values[0].replace("Z", "+00:00"))
        except ValueError:
            return column.default
        if then.tzinfo is None:
            then = then.replace(tzinfo=UTC)
        current = now if now is not None else datetime.now(UTC)
        return human_duration((current - then).total_seconds())
    if render == "count":
        total = 0
        for path in column.json_path.split(","):
            for value in json_path_values(path, obj):
                bare = "[" not in path  # a path to a map or list itself counts its entries
                total += len(value) if bare and isinstance(value, dict | list) else 1
        return total
    if render == "sum":
        return sum(v for v in json_path_values(column.json_path, obj) if _is_number(v))
    if render == "ratio":
        numerator, _, denominator = column.json_path.partition("/")
        return f"{_ratio_side(numerator, obj)}/{_ratio_side(denominator, obj)}"
    raise ValueError(f"unknown render mode {render!r} for column {column.name!r}")
