"""Controllers inside kubelite: each an informer on the watch cache (or a store watch), a
loop, and conflict-checked writes through the registry, like any controller."""
