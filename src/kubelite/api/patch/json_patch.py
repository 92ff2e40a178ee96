"""JSON patch (RFC 6902, ``application/json-patch+json``) with kube-apiserver's bound on what
``copy`` operations may add.

The operations are python-json-patch's. kube-apiserver applies every JSON patch (a PATCH body,
a mutating webhook's answer, a MutatingAdmissionPolicy's JSONPatch) with evanphx/json-patch,
whose ``AccumulatedCopySizeLimit`` it sets to ``JSONPatchMaxCopyBytes``, 3 MiB
(k8s.io/apiserver ``pkg/server/config.go``): the serialized sizes of the values the ``copy``
operations of one patch copy add up, and the operation that takes the sum past the limit fails
before it copies. Without it a kilobyte of ``copy`` operations, each copying a value into
itself, doubles the document twenty or thirty times over.

The size of a copied value is measured as Go's ``json.Marshal`` writes it (compact, ``<``, ``>``,
``&``, U+2028 and U+2029 escaped; numbers as orjson writes them), by serializing that value
alone: the document is copied once, not once per operation, and the work of all measuring is
bounded by the limit.
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import jsonpointer
import orjson

from kubelite.api.encoding import jsoncodec

__all__ = ["MAX_COPY_BYTES", "CopyLimitExceeded", "apply"]

#: ``JSONPatchMaxCopyBytes`` (k8s.io/apiserver pkg/server/config.go), json-patch's
#: ``AccumulatedCopySizeLimit``
MAX_COPY_BYTES = 3 * 1024 * 1024

#: the bytes Go's encoder writes as six-byte escapes (``\u003c``...): each adds five
_HTML = (b"<", b">", b"&")
#: U+2028 and U+2029, three bytes of UTF-8 that Go writes as six-byte escapes
_SEPARATORS = ("\u2028".encode(), "\u2029".encode())


class CopyLimitExceeded(jsonpatch.JsonPatchException):
    """A patch whose ``copy`` operations add more than :data:`MAX_COPY_BYTES`, with
    evanphx/json-patch v4's text (``errors.go``, ``AccumulatedCopySizeError``)."""

    def __init__(self, accumulated: int, limit: int = MAX_COPY_BYTES) -> None:
        super().__init__(
            "Unable to complete the copy, the accumulated size increase of copy is "
            f"{accumulated}, exceeding the limit {limit}"
        )
        self.accumulated = accumulated


def apply(doc: Any, operations: Any, *, limit: int = MAX_COPY_BYTES) -> Any:
    """``doc`` patched by ``operations`` (``doc`` is not changed). Raises python-json-patch's
    errors (every operation is checked before the first is applied), ``JsonPointerException``
    for a malformed pointer, and :class:`CopyLimitExceeded`."""
    patch = jsonpatch.JsonPatch(operations)
    patched = jsoncodec.clone(doc)
    copied = 0
    for operation in patch:
        name = operation["op"]
        if name == "copy":
            copied += _copied_size(patched, operation.get("from"))
            if copied > limit:
                raise CopyLimitExceeded(copied, limit)
        step = patch.operations[name](operation, pointer_cls=patch.pointer_cls)
        patched = step.apply(patched)
    return patched


def _copied_size(doc: Any, pointer: Any) -> int:
    """The size of the value a ``copy`` reads at ``pointer``, as Go's encoder writes it; 0 when
    there is none (the operation then fails on its own)."""
    if not isinstance(pointer, str):
        return 0
    try:
        value = jsonpointer.resolve_pointer(doc, pointer)
        data = jsoncodec.dumps(value)
    except (jsonpointer.JsonPointerException, orjson.JSONEncodeError, TypeError):
        return 0  # a missing member or item ("-" resolves to no value), or a bad pointer
    escaped = sum(data.count(char) for char in _HTML)
    separators = sum(data.count(char) for char in _SEPARATORS)
    return len(data) + 5 * escaped + 3 * separators
