"""The built-in catalogue, generated from maintained data, not written by hand:

- **lightkube-models** (its ``lightkube/resources/*.py``) gives each resource's group, version,
  kind, plural, scope, verbs and subresources. Those modules import ``lightkube.core``, which the
  models package does not ship, so they are *parsed* (``ast``), never imported.
- **kubernetes-validate** ships Kubernetes' own OpenAPI definitions
  (:mod:`kubelite.api.catalogue.schemas`).
- :mod:`kubelite.api.catalogue.extra` adds what neither has: short names, categories,
  generation tracking, update policies, Table columns, group order.

:func:`load_builtin_catalogue` derives all this once and caches the result as JSON under the
user's cache directory (``$KUBELITE_CACHE_DIR``, else ``$XDG_CACHE_HOME/kubelite``, else
``~/.cache/kubelite``), keyed by both packages' versions and the bytes of the modules the
derivation reads; a warm start only reads that file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubelite.api.catalogue import extra
from kubelite.api.catalogue.fieldlabels import FieldLabel
from kubelite.api.catalogue.schemas import _distribution_version, _package_dir, definition_name
from kubelite.api.catalogue.types import (
    KUBERNETES_VERSION,
    Catalogue,
    CatalogueError,
    ResourceInfo,
    Subresource,
    _columns,
)

if TYPE_CHECKING:  # ast and tempfile are imported only when the catalogue is derived
    import ast

#: Bumped whenever the cache file's shape changes.
CACHE_FORMAT = 4
_LIGHTKUBE_VERBS: dict[str, str | None] = {
    "post": "create",
    "put": "update",
    # Cluster-wide list/watch of a namespaced kind: implied by list/watch in discovery.
    "global_list": None,
    "global_watch": None,
}
#: A group-version kube-apiserver serves by default: GA only (see catalogue.extra).
SERVED_VERSION = re.compile(r"v\d+")
_MODULE_VERSION = re.compile(r"_(v\d+(?:(?:alpha|beta)\d+)?)\.py")


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
    for name in ("builtin.py", "extra.py", "fieldlabels.py", "types.py"):
        sources.update(here.with_name(name).read_bytes())
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
