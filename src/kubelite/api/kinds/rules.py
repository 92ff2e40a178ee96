"""The base strategy of every built-in kind: kube's flags and hooks (:class:`Strategy`), plus the
kind's defaulters and validators, as kube-apiserver applies them (``SetDefaults_*`` in
pkg/apis/*/v1/defaults.go, ``Validate*`` in pkg/apis/*/validation).

A defaulter fills an object in place; a validator returns the causes of a 422 (kube's field paths
and texts) for an object, given the stored one on update (None on create). Each resource's module
(``kinds/<group>/<resource>.py``) names its own, on its strategy (the ``defaulters`` and
``validators`` class attributes, or the constructor's arguments).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import Cause
from kubelite.api.machinery.strategy import Strategy

Obj = dict[str, Any]
Defaulter = Callable[[Obj], None]
Validator = Callable[[Obj, Obj | None], list[Cause]]


class BuiltinStrategy(Strategy):
    """A built-in kind's strategy: the flags and hooks of :class:`Strategy`, plus the kind's
    defaulters and validators, run in order. A subclass that overrides :meth:`default` or
    :meth:`validate` calls ``super()`` to keep them.

    Rules are written for decoded objects (the decoder refuses wrong types first); an object
    stored before that (of any shape) must still never turn a request into a 500, so a rule
    that fails on an odd shape is skipped, and logged."""

    defaulters: Sequence[Defaulter] = ()
    validators: Sequence[Validator] = ()

    def __init__(
        self,
        *,
        defaulters: Sequence[Defaulter] | None = None,
        validators: Sequence[Validator] | None = None,
        **flags: Any,
    ) -> None:
        super().__init__(**flags)
        if defaulters is not None:
            self.defaulters = tuple(defaulters)
        if validators is not None:
            self.validators = tuple(validators)

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        for defaulter in self.defaulters:
            try:
                defaulter(obj)
            except _ODD_SHAPE:
                log.warning("%s defaults skipped for an odd object shape", info.kind)

    def validate(self, info: ResourceInfo, obj: Obj) -> list[Cause]:
        return self._run(info, obj, None)

    def validate_update(self, info: ResourceInfo, new: Obj, old: Obj) -> list[Cause]:
        return self._run(info, new, old)

    def _run(self, info: ResourceInfo, obj: Obj, old: Obj | None) -> list[Cause]:
        causes: list[Cause] = []
        for validator in self.validators:
            try:
                causes += validator(obj, old)
            except _ODD_SHAPE:
                log.warning("%s validation skipped for an odd object shape", info.kind)
        return causes


_ODD_SHAPE = (TypeError, AttributeError, KeyError, IndexError, ValueError)
log = logging.getLogger(__name__)
