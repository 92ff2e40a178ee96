"""Object metadata on every write, whatever the kind (kube-apiserver's ``rest.BeforeCreate``,
``rest.BeforeUpdate`` and apimachinery's ``ValidateObjectMetaUpdate``): the fields the server
owns, the body's type and namespace checked against the request, and the rules for finalizers
of an object that is being deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import resourceversion as rv
from kubelite.api.encoding.stored import clone, meta_of, now
from kubelite.api.errors import Cause, go_quote
from kubelite.api.machinery.rest import ObjectUpdate

Obj = dict[str, Any]
NameCheck = Callable[[str], list[str]]

#: Fields a client may not set on create: the server fills or clears them.
_SERVER_SET_ON_CREATE = ("uid", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
#: Fields an update keeps from the stored object, whatever the body says (and the uid, when
#: the body has none: a changed one is refused as immutable).
_KEPT_ON_UPDATE = ("creationTimestamp", "namespace", "name")
_DELETION_FIELDS = ("deletionTimestamp", "deletionGracePeriodSeconds")


def check_type_meta(info: ResourceInfo, obj: Obj) -> None:
    """400 when the body names another apiVersion or kind than the request's resource."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version and api_version != info.group_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({info.group_version})"
        )
    if kind and kind != info.kind:
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({info.kind})"
        )


def check_name_and_namespace(
    info: ResourceInfo, namespace: str | None, name: str, obj: Obj
) -> None:
    """A PUT's body against its URL (kube's handlers/rest.go checkName)."""
    meta = meta_of(obj)
    if meta.get("name", name) != name:
        raise errors.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on the URL "
            f"({name})"
        )
    if info.namespaced and meta.get("namespace", namespace) != namespace:
        raise errors.bad_request(
            f"the namespace of the object ({meta.get('namespace')}) does not match the "
            f"namespace on the request ({namespace})"
        )


def prepare_new(info: ResourceInfo, namespace: str | None, obj: Obj, names: NameCheck) -> None:
    """A new object's metadata, in place: type meta set, resourceVersion refused (a number) or
    dropped, namespace from the request, a name or generateName required and the name valid,
    uid and creationTimestamp the server's."""
    check_type_meta(info, obj)
    meta = meta_of(obj)
    body_rv = meta.get("resourceVersion")
    if isinstance(body_rv, str) and body_rv not in ("", "0") and body_rv.isdigit():
        # kube's storage answers this text as a 500 (etcd3 store.go Create); a client's
        # mistake, so a 400 here (docs/guarantees.md)
        raise errors.bad_request("resourceVersion should not be set on objects to be created")
    meta.pop("resourceVersion", None)
    _set_namespace(info, namespace, meta)
    name = meta.get("name") or ""
    if not name:
        meta.pop("name", None)
        if not meta.get("generateName"):
            raise errors.invalid(
                info.kind,
                info.group,
                "",
                [
                    Cause(
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                        "metadata.name",
                    )
                ],
            )
    else:
        _check_name(info, name, names)
    for key in _SERVER_SET_ON_CREATE:
        meta.pop(key, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = now()
    obj["apiVersion"], obj["kind"] = info.group_version, info.kind


def _check_name(info: ResourceInfo, name: str, names: NameCheck) -> None:
    problems = names(name)
    if problems:
        raise errors.invalid(
            info.kind,
            info.group,
            name,
            [
                Cause("FieldValueInvalid", f'Invalid value: "{name}": {p}', "metadata.name")
                for p in problems
            ],
        )


def _set_namespace(info: ResourceInfo, namespace: str | None, meta: dict[str, Any]) -> None:
    if not info.namespaced:
        meta.pop("namespace", None)
        return
    if meta.get("namespace") and meta["namespace"] != namespace:
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    meta["namespace"] = namespace


def prepare_update(info: ResourceInfo, new: Obj, old: Obj) -> None:
    """An updated object's metadata, in place: type meta set, identity and deletion state kept
    from the stored object, no resourceVersion (the store stamps it)."""
    new["apiVersion"], new["kind"] = info.group_version, info.kind
    meta = meta_of(new)
    old_meta = old["metadata"]
    for key in _KEPT_ON_UPDATE:
        if key in old_meta:
            meta[key] = old_meta[key]
    if not meta.get("uid") and "uid" in old_meta:
        meta["uid"] = old_meta["uid"]
    for key in _DELETION_FIELDS:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    meta.pop("resourceVersion", None)


def update_causes(new: Obj, old: Obj) -> list[Cause]:
    """What ValidateObjectMetaUpdate refuses beyond the kept fields: a changed uid (a patch's;
    a PUT's is a precondition), new finalizers on an object that is being deleted."""
    causes: list[Cause] = []
    uid = new["metadata"].get("uid")
    if uid != old["metadata"].get("uid"):
        shown = go_quote(uid) if isinstance(uid, str) else str(uid)
        causes.append(
            Cause(
                "FieldValueInvalid",
                f"Invalid value: {shown}: field is immutable",
                "metadata.uid",
            )
        )
    if not old["metadata"].get("deletionTimestamp"):
        return causes
    before = set(_strings(old["metadata"].get("finalizers")))
    added = sorted(set(_strings(new["metadata"].get("finalizers"))) - before)
    if not added:
        return causes
    listed = ", ".join(f'"{name}"' for name in added)
    causes.append(
        Cause(
            "FieldValueForbidden",
            "Forbidden: no new finalizers can be added if the object is being deleted, found new "
            f"finalizers []string{{{listed}}}",
            "metadata.finalizers",
        )
    )
    return causes


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def precondition_failure(meta: dict[str, Any], uid: str, resource_version: str) -> str:
    """kube's storage precondition text for the first of ``uid`` and ``resource_version`` (when
    given) that ``meta`` does not match, else "" (storage.Preconditions.Check)."""
    for field, key, wanted in (
        ("UID", "uid", uid),
        ("ResourceVersion", "resourceVersion", resource_version),
    ):
        have = meta.get(key)
        if wanted and wanted != have:
            return (
                f"Precondition failed: {field} in precondition: {wanted}, {field} in object "
                f"meta: {have}"
            )
    return ""


def requested_version(obj: Obj) -> int:
    """The resourceVersion a body or patched object asks to update (0: none); a value that is
    not a number is 400 with kube's ``strconv.ParseUint`` text (kube's store answers it as a
    500: docs/guarantees.md)."""
    try:
        return rv.parse(meta_of(obj).get("resourceVersion") or "")
    except rv.BadResourceVersion as exc:
        raise errors.bad_request(str(exc))


def replacement(info: ResourceInfo, namespace: str | None, name: str, body: Obj) -> ObjectUpdate:
    """A PUT's update: the body, whatever is stored (its name and namespace checked against the
    request first, as kube's handler does before calling the storage; its type is checked by
    the store, against the kind the storage writes)."""
    check_name_and_namespace(info, namespace, name, body)

    async def put(current: Obj | None) -> Obj:
        return clone(body)

    return put
