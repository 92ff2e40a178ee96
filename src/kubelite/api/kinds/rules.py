"""Built-in kinds' defaults and validation, as kube-apiserver applies them (``SetDefaults_*`` in
pkg/apis/*/v1/defaults.go, ``Validate*`` in pkg/apis/*/validation), in tables by kind.

Each rule module of this package exports ``DEFAULTERS`` and/or ``VALIDATORS``: dicts from
``(group, kind)`` to functions. A defaulter fills an object in place; a validator returns the
causes of a 422 (kube's field paths and texts) for an object, given the stored one on update
(None on create). :class:`BuiltinStrategy`, the base of every built-in kind's strategy, runs the
ones of the kind it is asked about; the tables are merged here, so adding a rule never touches
the strategies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import Cause
from kubelite.api.machinery.strategy import Strategy

Obj = dict[str, Any]
Defaulter = Callable[[Obj], None]
Validator = Callable[[Obj, Obj | None], list[Cause]]
Kind = tuple[str, str]  # (group, kind)

#: The rule modules' tables, merged (several modules may add rules for one kind).
DEFAULTERS: dict[Kind, list[Defaulter]] = {}
VALIDATORS: dict[Kind, list[Validator]] = {}


def register(
    defaulters: Mapping[Kind, Defaulter] | None = None,
    validators: Mapping[Kind, Validator] | None = None,
) -> None:
    """Add a rule module's tables (called once per module, from ``kinds/__init__``)."""
    for kind, defaulter in (defaulters or {}).items():
        DEFAULTERS.setdefault(kind, []).append(defaulter)
    for kind, validator in (validators or {}).items():
        VALIDATORS.setdefault(kind, []).append(validator)


class BuiltinStrategy(Strategy):
    """A built-in kind's strategy: the flags and hooks of :class:`Strategy`, plus the kind's
    defaulters and validators from the tables. A subclass that overrides :meth:`default` or
    :meth:`validate` calls ``super()`` to keep them.

    Rules are written for decoded objects (the decoder refuses wrong types first); an object
    stored before that (of any shape) must still never turn a request into a 500, so a rule
    that fails on an odd shape is skipped, and logged."""

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        for defaulter in DEFAULTERS.get((info.group, info.kind), ()):
            try:
                defaulter(obj)
            except _ODD_SHAPE:
                log.warning("%s defaults skipped for an odd object shape", info.kind)

    def validate(self, info: ResourceInfo, obj: Obj) -> list[Cause]:
        return _run(info, obj, None)

    def validate_update(self, info: ResourceInfo, new: Obj, old: Obj) -> list[Cause]:
        return _run(info, new, old)


_ODD_SHAPE = (TypeError, AttributeError, KeyError, IndexError, ValueError)
log = logging.getLogger(__name__)


def _run(info: ResourceInfo, obj: Obj, old: Obj | None) -> list[Cause]:
    causes: list[Cause] = []
    for validator in VALIDATORS.get((info.group, info.kind), ()):
        try:
            causes += validator(obj, old)
        except _ODD_SHAPE:
            log.warning("%s validation skipped for an odd object shape", info.kind)
    return causes
