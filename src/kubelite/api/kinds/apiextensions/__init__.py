"""The apiextensions.k8s.io group and what it serves (kube's apiextensions-apiserver):
CustomResourceDefinitions (:mod:`.customresourcedefinitions`: the strategy and the storage,
with :mod:`.crdvalidation`'s defaults, validation and status), the custom resources they define
(:mod:`.customresources`: one strategy for them all, with the structural schema's pruning,
defaulting and validation, and :mod:`.crdrules`' CEL rules), and conversion between a custom
kind's versions (:mod:`.crdconversion`, :mod:`.webhookconversion`). The CRD resource joins the
kind table with the server's catalogue (:meth:`.customresourcedefinitions.CRDStorages.resource`).
"""
