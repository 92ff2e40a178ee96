"""Custom objects: the strategy apiextensions-apiserver applies to every write of a custom
resource, on top of the registry's generic path.

- unknown fields are pruned, nulls dropped where the field is not nullable, defaults applied,
  then the schema and its CEL rules are checked (:mod:`kubelite.api.crschema`); failures are one
  422 ``<Kind>.<group> "<name>" is invalid: ...`` with a cause per field;
- a kind whose CRD is being deleted refuses creates (405), as kube-apiserver does, while its
  objects can still be read, updated (their finalizers removed) and deleted.

Generation (bumped on any change outside metadata), no unconditional update and no
create-on-update come from the ResourceInfo flags every CRD version gets (:func:`crds.infos`).
"""

from __future__ import annotations

from kubelite.api import crschema, errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.hooks import KindHooks, Obj


class CustomResourceHooks(KindHooks):
    def __init__(self) -> None:
        #: (group, plural) of kinds whose CRD is being deleted
        self.terminating: set[tuple[str, str]] = set()

    def on_create(self, info: ResourceInfo, obj: Obj) -> None:
        if (info.group, info.plural) in self.terminating:
            raise errors.APIError(
                405,
                "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating",
            )
        self._check(info, obj, None)

    def on_update(self, info: ResourceInfo, current: Obj, new: Obj, subresource: str) -> None:
        self._check(info, new, current)

    @staticmethod
    def _check(info: ResourceInfo, obj: Obj, old: Obj | None) -> None:
        schema = crschema.compiled(info.schema)
        schema.prune(obj)
        schema.default(obj)
        causes = schema.errors(obj, old)
        if causes:
            name = str((obj.get("metadata") or {}).get("name", ""))
            raise errors.invalid(info.kind, info.group, name, causes)
