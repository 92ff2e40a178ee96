"""Custom resources' schemas at work (k8s.io/apiextensions-apiserver ``pkg/apiserver/schema``):
structural defaulting, pruning and validation with CEL rules (:mod:`.schema`), and the jsonschema
half of the check (:mod:`.validator`). The CRD kinds and custom resource storages live in
``kubelite.api.kinds``; the CRD controller in ``kubelite.api.controllers``.
"""
