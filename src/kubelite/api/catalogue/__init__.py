"""The resource catalogue: every kind kubelite serves, each declared once.

A kind is one :class:`ResourceInfo` (:mod:`.types`). Routes, discovery, OpenAPI, Table output,
strategic merge keys and strict field validation are all generated from it, for built-in kinds
and CustomResourceDefinitions alike: a CRD becomes a ResourceInfo passed to :meth:`Catalogue.add`.

- :mod:`.types`: ResourceInfo, its columns and subresources, GroupInfo, the Catalogue;
- :mod:`.fieldlabels`: the field labels a kind's field selectors accept;
- :mod:`.builtin`: the built-in kinds derived from lightkube-models and the OpenAPI
  definitions, with :mod:`.extra` (what that data lacks), cached per installed version;
- :mod:`.schemas`: Kubernetes' OpenAPI definitions of the built-in kinds, loaded lazily;
- :mod:`.jsonpath`: values at a printer column's or scale path's JSON path.

Versions served: kube-apiserver 1.37 serves every GA version by default and no alpha or beta one
(new betas are off by default since 1.24, and every 1.37 beta is newer), so the catalogue holds
the GA group-versions lightkube-models ships: core/v1 and ``<group>/v1`` for every group, plus
autoscaling/v1 *and* v2 (both GA; v2 preferred). The same object served at two versions
(HorizontalPodAutoscaler in autoscaling/v1 and v2; Event in core/v1 and events.k8s.io/v1) is two
ResourceInfos; converting between them is the server's business.

Table rendering of the columns belongs to the server (``kubelite.server.table``).
"""

from __future__ import annotations

from kubelite.api.catalogue.builtin import (
    SERVED_VERSION,
    build_builtin_catalogue,
    cache_key,
    cache_path,
    default_cache_dir,
    load_builtin_catalogue,
)
from kubelite.api.catalogue.jsonpath import json_path_values
from kubelite.api.catalogue.schemas import (
    custom_schema,
    definition_name,
    load_schema_definitions,
    parse_schema,
    resolve_ref,
    schema_for,
)
from kubelite.api.catalogue.types import (
    KUBERNETES_VERSION,
    STANDARD_VERBS,
    Catalogue,
    CatalogueError,
    Column,
    GroupInfo,
    ResourceInfo,
    Subresource,
    version_priority,
)

__all__ = [
    "KUBERNETES_VERSION",
    "SERVED_VERSION",
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
    "json_path_values",
    "load_builtin_catalogue",
    "load_schema_definitions",
    "parse_schema",
    "resolve_ref",
    "schema_for",
    "version_priority",
]
