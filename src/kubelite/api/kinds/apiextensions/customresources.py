"""Custom objects: the strategy apiextensions-apiserver applies to every write of a custom
resource.

- unknown fields are pruned, nulls dropped where the field is not nullable, defaults applied
  (:meth:`CustomResourceStrategy.default`), then the schema and its CEL rules are checked
  (:mod:`kubelite.api.apiextensions.schema`); failures are one 422 ``<Kind>.<group> "<name>" is
  invalid: ...`` with a cause per field;
- generation moves on any change outside metadata; no unconditional update, no create-on-update;
- a kind whose CRD is being deleted refuses creates (405), as kube-apiserver does, while its
  objects can still be read, updated (their finalizers removed) and deleted;
- ``/status`` keeps everything but ``status`` as stored, metadata included, and checks the
  whole object against the schema.
"""

from __future__ import annotations

from kubelite.api import errors
from kubelite.api.apiextensions import schema as crschema
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding.stored import clone
from kubelite.api.errors import Cause
from kubelite.api.machinery.strategy import Obj, StatusStrategy, Strategy, content_changed


class CustomResourceStrategy(Strategy):
    def __init__(self) -> None:
        super().__init__(tracks_generation=True, allow_unconditional_update=False)
        #: (group, plural) of kinds whose CRD is being deleted
        self.terminating: set[tuple[str, str]] = set()

    def prepare_for_create(self, info: ResourceInfo, obj: Obj) -> None:
        if (info.group, info.plural) in self.terminating:
            raise errors.APIError(
                405,
                "MethodNotAllowed",
                "create not allowed while custom resource definition is terminating",
            )
        super().prepare_for_create(info, obj)

    def generation_changed(self, old: Obj, new: Obj) -> bool:
        return content_changed(old, new)

    def default(self, info: ResourceInfo, obj: Obj) -> None:
        schema = crschema.compiled(info.schema)
        schema.prune(obj)
        schema.default(obj)

    def validate(self, info: ResourceInfo, obj: Obj) -> list[Cause]:
        return crschema.compiled(info.schema).errors(obj, None)

    def validate_update(self, info: ResourceInfo, new: Obj, old: Obj) -> list[Cause]:
        return crschema.compiled(info.schema).errors(new, old)

    def status_strategy(self) -> StatusStrategy:
        return CustomResourceStatusStrategy(self)


class CustomResourceStatusStrategy(StatusStrategy):
    """apiextensions' status strategy: the stored object with the request's ``status``."""

    def prepare_for_update(self, info: ResourceInfo, new: Obj, old: Obj) -> None:
        status = new.get("status")
        has_status = "status" in new
        managed_fields = new["metadata"].get("managedFields")  # this write's, already tracked
        new.clear()
        new.update(clone({key: value for key, value in old.items() if key != "status"}))
        new["metadata"].pop("resourceVersion", None)
        new["metadata"].pop("managedFields", None)
        if managed_fields is not None:
            new["metadata"]["managedFields"] = managed_fields
        if has_status:
            new["status"] = status

    def reset_fields(self, info: ResourceInfo) -> tuple[str, ...]:
        return ("metadata", "spec")

    def validate_update(self, info: ResourceInfo, new: Obj, old: Obj) -> list[Cause]:
        return self.main.validate_update(info, new, old)
