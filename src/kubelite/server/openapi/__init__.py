"""OpenAPI documents generated from the catalogue: v3 (``/openapi/v3`` and one document per served
group-version, ``/openapi/v3/api/v1``, ``/openapi/v3/apis/<group>/<version>``) and v2
(``/openapi/v2``, one Swagger 2.0 document for everything, as JSON or as gnostic's protobuf).

Both are built from one model of the paths kube-apiserver serves for each resource, so that
OpenAPI tools load them and kubectl finds what it looks for:

- **Paths and operations.** Per resource: the collection (``get`` = list, with ``watch`` as a
  query parameter; ``post`` = create; ``delete`` = deletecollection), the item (``get``,
  ``put``, ``patch``, ``delete``), the all-namespaces list of a namespaced kind, and each served
  subresource (``status``, ``scale``, ``binding``...) with its verbs. Each path declares its path
  parameters (``name``, ``namespace``: ``in: path``, required) and ``pretty``; each operation
  its query parameters, request body, responses, ``operationId`` (``patchCoreV1NamespacedPod``),
  ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind``. Only the verbs a kind has get
  operations (a TokenReview is create-only).
- **Default validation** (``create -f``, ``apply``, ``replace``, ``edit``): kubectl 1.29+ looks,
  in the group-version's v3 document, for a ``patch`` operation carrying the kind's
  ``x-kubernetes-group-version-kind`` and a ``fieldValidation`` parameter; kubectl 1.27/1.28 (and
  1.29+ for a kind missing from v3, such as a custom resource whose CRD is in the same file) do
  the same in v2. Finding one, kubectl sends ``fieldValidation=Strict`` and leaves validation to
  the server (:mod:`kubelite.api.machinery.validation`); else it validates against the v2
  definitions itself, skipping kinds v2 does not define, so applying a CRD and its objects from one
  file ends on kubectl's own ``resource mapping not found ... ensure CRDs are installed first``.
- **patch** declares its request body's content types (JSON patch, merge patch, apply; strategic
  merge for built-in kinds only, as kube-apiserver): kubectl 1.27+ computes the strategic merge
  patch of ``apply`` from v3 when the kind's ``patch`` accepts it, else from v2.
- **explain** finds the kind's schema by its ``x-kubernetes-group-version-kind``
  (``components.schemas`` in v3, ``definitions`` in v2 for ``--output plaintext-openapiv2`` and
  kubectl 1.27/1.28) and follows ``$ref``/``allOf`` from there.

Schemas come from kubernetes-validate's JSON Schema 2020-12 definitions
(:func:`kubelite.api.catalogue.load_schema_definitions`). For v3 they are converted to OpenAPI 3.0
style: refs ``#/$defs/X`` become ``#/components/schemas/X`` (wrapped in ``allOf`` when the ref
has siblings, as kube-apiserver publishes them), ``type: [t, "null"]`` becomes ``type: t``. For v2
refs become ``#/definitions/X`` (siblings kept, as kube's v2 has them), IntOrString and Quantity
become kube's v2 ``type: string`` (``format: int-or-string``), and a custom resource's schema goes
through apiextensions' v2 conversion (no ``allOf``/``oneOf``/``anyOf``/``not``; nullable and
preserve-unknown-fields nodes lose what kubectl's v2 parser cannot take). A v3 document holds only
the definitions reachable from its kinds (plus their List kinds, ``Status``, ``DeleteOptions``
and ``Patch``); the v2 document those of every kind. A kind without a built-in definition (a
CRD's) gets the schema ``schema_source`` returns for it (else its ResourceInfo's, else an open
object), with ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta) declared as kube does, and a
List kind of its own. Documents are cached in memory, keyed by the ResourceInfos (and custom
schemas), so adding a CRD yields fresh documents.

The v2 protobuf form (``Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf``, the
only form client-go's ``OpenAPISchema`` asks for, in every kubectl from 1.27 to 1.37) is gnostic's
``openapi.v2.Document`` (github.com/google/gnostic-models, openapiv2/OpenAPIv2.proto), encoded by
hand below as kube-openapi's ``ToProtoBinary`` produces it: vendor extensions, defaults, enums
and examples are ``Any`` messages whose ``yaml`` field holds the value (JSON text, which YAML
parsers read). Both forms carry the same ETag, the SHA-512 of the JSON form, as kube-openapi's
handler does.

Modules: :mod:`.parameters` (query parameters and content types), :mod:`.schemas` (schema
conversion), :mod:`.model` (paths and operations), :mod:`.v3`, :mod:`.v2` and :mod:`.gnostic`
(the v2 protobuf encoding).
"""

from __future__ import annotations

from kubelite.server.openapi import v2, v3
from kubelite.server.openapi.gnostic import swagger_protobuf
from kubelite.server.openapi.model import SchemaSource, group_version_path
from kubelite.server.openapi.schemas import convert_schema
from kubelite.server.openapi.v2 import V2_JSON, V2_PATH, V2_PROTOBUF, Swagger, negotiate_v2, swagger
from kubelite.server.openapi.v3 import (
    ROOT_PATH,
    V3_JSON,
    V3Document,
    group_version_document,
    negotiate_v3,
    openapi_document,
    root,
)

__all__ = [
    "ROOT_PATH",
    "V2_JSON",
    "V2_PATH",
    "V2_PROTOBUF",
    "V3_JSON",
    "SchemaSource",
    "Swagger",
    "V3Document",
    "clear_cache",
    "convert_schema",
    "group_version_document",
    "group_version_path",
    "negotiate_v2",
    "negotiate_v3",
    "openapi_document",
    "root",
    "swagger",
    "swagger_protobuf",
]


def clear_cache() -> None:
    """Forget every generated document (tests; documents are otherwise keyed by content)."""
    v3.clear_cache()
    v2.clear_cache()
