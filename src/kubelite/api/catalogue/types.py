"""What the catalogue holds: a kind as one :class:`ResourceInfo` (group, version, names, scope,
verbs, subresources, Table columns, field labels, schema), its group, and the :class:`Catalogue`
of every kind a server serves, built-in and custom alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kubelite.api.catalogue import extra
from kubelite.api.catalogue.fieldlabels import DEFAULT_LABELS, NOT_KNOWN, NOT_SUPPORTED, FieldLabel

#: The Kubernetes minor version whose built-in kinds and OpenAPI definitions are served.
KUBERNETES_VERSION = "1.37"

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
    #: ``{quoted}``: see :func:`kubelite.api.machinery.selectors.field_label_error`). Left empty:
    #: runtime's default, ``metadata.name`` and ``metadata.namespace`` with its "is not a known
    #: field selector" text; labels without a text: ``field label not supported: <label>``.
    field_labels: tuple[FieldLabel, ...] = ()
    field_label_error: str = ""
    #: A custom resource converted between its versions by a webhook (its CRD's conversion
    #: strategy ``Webhook``): the CRD's name, ``spec.conversion.webhook`` and the storage
    #: version's schema, as JSON text (:mod:`kubelite.api.kinds.apiextensions.crdconversion`).
    #: Empty: the versions differ only in apiVersion (strategy ``None``) or the kind is built
    #: in.
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
