"""A small kopf operator for the Widget CRD (tests/server/data/widgets-crd.yaml), run by
tests/server/test_kopf.py as ``kopf run --standalone -A`` against a real kubelite server.

create: records the size it saw (kopf stores the return value in ``status.created``) and sets
``status.phase``; update: sets ``status.phase`` and counts its calls in ``status.updates``; delete:
logs, which kopf runs before it removes its finalizer from the object.
"""

import kopf


@kopf.on.create("example.com", "v1", "widgets")
def created(spec, patch, **_):
    patch.status["phase"] = "Created"
    return {"size": spec.get("size")}


@kopf.on.update("example.com", "v1", "widgets")
def updated(spec, status, patch, **_):
    patch.status["phase"] = "Updated"
    patch.status["updates"] = int(status.get("updates", 0)) + 1
    patch.status["size"] = spec.get("size")


@kopf.on.delete("example.com", "v1", "widgets")
def deleted(name, logger, **_):
    logger.info(f"deleting widget {name}")
