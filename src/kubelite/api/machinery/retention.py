"""The history retention policy of ``kubelite serve --history-retention``: which resources keep
their past versions beyond compaction, and for how long.

The flag names resources as kubectl does (``configmaps``, ``configmap``, ``cm``, ``ConfigMap``,
``deployments.apps``) with a limit each: a count of versions per object (``deployments=100``)
or an age (``configmaps=7d``; units s, m, h, d). Naming a resource twice gives it both limits,
and a version goes as soon as either says so. The policy reaches the store as key prefixes
(:class:`kubelite.storage.Retention` per prefix), the store knowing keys only; the kind table
serves ``<resource>/history`` (:mod:`kubelite.api.machinery.history`) on every resource whose prefix
is retained.

A ``plural.group`` whose group no built-in kind has names a custom resource (its CRD may be
created later): ``widgets.example.com=30``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kubelite.api.catalogue import Catalogue, ResourceInfo
from kubelite.api.encoding.stored import storage_prefix
from kubelite.storage import Retention

#: The resource spelling as given -> its limits.
RetentionSpec = dict[str, Retention]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_LIMIT = re.compile(r"(\d+)([smhd]?)")


def parse_retention(text: str) -> RetentionSpec:
    """``configmaps=7d,deployments=100`` by resource spelling; ValueError saying what is wrong."""
    spec: RetentionSpec = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, limit = item.partition("=")
        name = name.strip()
        match = _LIMIT.fullmatch(limit.strip())
        if not sep or not name or match is None or int(match[1]) == 0:
            raise ValueError(
                f"invalid history retention {item!r}: expected RESOURCE=N (versions per object) "
                "or RESOURCE=AGE (e.g. 7d, 12h, 30m, 90s)"
            )
        count, unit = int(match[1]), match[2]
        before = spec.get(name, Retention())
        if unit:
            spec[name] = Retention(count * _UNITS[unit], before.max_versions)
        else:
            spec[name] = Retention(before.max_age_seconds, count)
    return spec


def _matches(info: ResourceInfo, resource: str) -> bool:
    return resource in (info.plural, info.singular, info.kind.lower()) or (
        resource in info.short_names
    )


def resolve(spelling: str, catalogue: Catalogue) -> str:
    """The key prefix of the resource ``spelling`` names, the first served in discovery order
    (the core group first, as kubectl prefers). ValueError when none is, or it is not stored."""
    resource, _, group = spelling.lower().partition(".")
    builtin_groups = {g.name for g in catalogue.groups()}
    if group and group not in builtin_groups:
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", resource):
            raise ValueError(f"history retention: {spelling!r} is not a resource name")
        return f"/registry/{group}/{resource}/"  # a custom resource's keys (kinds/custom)
    for info in catalogue:
        if (not group or info.group == group) and _matches(info, resource):
            if "get" not in info.verbs or "create" not in info.verbs:
                raise ValueError(f"history retention: {spelling!r} objects are not stored")
            return storage_prefix(info, None)
    raise ValueError(f'history retention: the server doesn\'t have a resource type "{spelling}"')


def resolve_retention(spec: Mapping[str, Retention], catalogue: Catalogue) -> dict[str, Retention]:
    """The policy by key prefix. Two spellings of one resource combine their limits."""
    policy: dict[str, Retention] = {}
    for spelling, retention in spec.items():
        prefix = resolve(spelling, catalogue)
        before = policy.get(prefix, Retention())
        policy[prefix] = Retention(
            retention.max_age_seconds or before.max_age_seconds,
            retention.max_versions or before.max_versions,
        )
    return policy
