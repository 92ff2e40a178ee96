"""The generic request machinery, the same for every kind (k8s.io/apiserver ``pkg/registry`` and
``pkg/endpoints/handlers``): the verbs a storage serves (:mod:`.rest`), the generic store with its
one optimistic loop (:mod:`.generic`, :mod:`.dryrun`) and the hooks and strategies kinds plug in
(:mod:`.writehooks`, :mod:`.strategy`), object metadata on every write (:mod:`.objectmeta`,
:mod:`.metavalidation`, :mod:`.names`), the ObjectUpdates of PUT, PATCH and apply
(:mod:`.updates`, :mod:`.patching`), deletion, lists and selectors, the watch cache, subresources
and Scale, field validation, the registry that finds each resource's storage, the admission seam
(:mod:`.admission`), the request and its user, and the informer-like follower (:mod:`.following`).

Nothing here knows a kind: kinds plug in through the kind table (``kubelite.api.kinds``).
"""
