"""Kubernetes semantics without HTTP, in the order a request meets them.

The packages, from the bottom up (each imports only those below it; import-linter contracts in
``pyproject.toml`` keep it so):

- :mod:`.errors` (the one error tree and its ``Status`` bodies), :mod:`.memo`,
  :mod:`.shufflesharding`: shared by every layer;
- :mod:`.catalogue`: every kind served, declared once as a ``ResourceInfo``;
- :mod:`.encoding`: objects as bytes and versions (JSON and YAML bodies, Go-style decoding,
  quantities, resourceVersion, the stored form, conversion between served versions);
- :mod:`.fieldmanager`: ``metadata.managedFields`` and server-side apply over typed field sets;
- :mod:`.patch`: JSON patch, merge patch and strategic merge patch;
- :mod:`.machinery`: the generic store and its optimistic loop, strategies, the registry, object
  metadata, deletion, dry-run, lists, selectors, the watch cache, the admission seam;
- :mod:`.auth` (authentication, RBAC, the authorizer) and :mod:`.cel` (CEL as kube has it);
- :mod:`.admission` (webhooks and admission policies) and :mod:`.apiextensions` (custom
  resources' schemas);
- :mod:`.kinds`: each kind's strategy, storages and the kind table;
- :mod:`.controllers`: the controllers kube-controller-manager runs, writing through the registry.
"""
