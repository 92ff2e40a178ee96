"""Kubernetes semantics without HTTP: the resource catalogue, object metadata, the generic
registry that turns verbs into storage calls, patching, selectors and the one mapping from errors
to ``Status`` bodies."""
