"""What a request asks, computed once from its method and path (kube-apiserver's RequestInfo)
and read by every later step: authorization, audit, admission and the handlers.

The server parses the HTTP request into a :class:`RequestInfo` (``kubelite.server.requestinfo``);
the API layer only reads it. ``verb`` is kube's: ``get``, ``list``, ``watch``, ``create``,
``update``, ``patch``, ``delete``, ``deletecollection`` for resource requests, and the lower-case
HTTP method for the others (``get`` for ``/version``).
"""

from __future__ import annotations

from typing import NamedTuple


class RequestInfo(NamedTuple):
    """One request's target, as kube-apiserver's ``request.RequestInfo`` (a NamedTuple: made on
    every request, and cheap to make).

    ``namespace`` follows kube: for ``/api/v1/namespaces/<n>`` (the namespace itself) it is the
    namespace's name, as RBAC expects. ``namespace_path`` tells whether the path had a
    ``namespaces/<n>/`` segment in front of another resource, so a cluster-scoped resource asked
    for under a namespace can be refused.
    """

    path: str
    verb: str
    is_resource_request: bool = False
    api_prefix: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace_path: bool = False
    #: the path was the legacy ``/api/v1/watch/...`` form
    legacy_watch: bool = False
