"""Field ownership (k8s.io/apimachinery ``pkg/util/managedfields`` and structured-merge-diff):
``metadata.managedFields`` on every write (:mod:`.managedfields`), server-side apply
(:mod:`.apply`), field sets (:mod:`.fieldpath`) computed over a kind's shape (:mod:`.shapes`,
:mod:`.typed`), and the causes of a stale write's 409 (:mod:`.conflictcauses`).
"""
