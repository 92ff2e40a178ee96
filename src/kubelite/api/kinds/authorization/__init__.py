"""The review kinds of authentication.k8s.io and authorization.k8s.io (kube's
``pkg/registry/authentication`` and ``pkg/registry/authorization``): questions the server
answers and never stores (:mod:`.reviews`)."""

from __future__ import annotations

from kubelite.api.kinds.authorization import reviews
from kubelite.api.kinds.resource import Resource

RESOURCES: tuple[Resource, ...] = reviews.RESOURCES
