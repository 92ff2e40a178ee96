"""kubelite's Python client: a Kubernetes client for kubelite and for any real cluster.

- :class:`Client` (blocking, urllib3) and :class:`AsyncClient` (asyncio, aiohttp; or in process
  through an ASGI app) share one sans-I/O core, so they behave alike: generic resources by
  apiVersion and kind found through discovery, get/list (auto-paging)/create/update/patch/
  apply (server-side)/delete/watch on plain dicts, and errors raised from the server's Status as
  one exception tree.
- Conflict-safe writes: :func:`retry_on_conflict` with client-go's :data:`DEFAULT_RETRY`,
  ``client.update(ref, mutate)`` (read, mutate, write, retried on 409) and
  ``client.update_three_way(base, mine)``.
- :class:`Informer` (list then watch, a local cache with indexers, handlers, relist on 410) and
  :class:`Controller` (a keyed, rate-limited work queue and N workers).

It never imports kubelite's server or storage: the in-process mode takes the ASGI app object the
caller built.
"""

from kubelite.client.async_client import AsyncClient, AsyncWatch
from kubelite.client.cache import Indexer, by_namespace
from kubelite.client.controller import Controller
from kubelite.client.core import WatchEvent
from kubelite.client.discovery import ALL_NAMESPACES, ResourceType
from kubelite.client.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Expired,
    FieldChange,
    Forbidden,
    Gone,
    Invalid,
    MergeConflict,
    MethodNotAllowed,
    NotFound,
    ResourceNotFound,
    ServerError,
    ServerTimeout,
    TooManyRequests,
    Unauthorized,
    UnsupportedMediaType,
    error_from_status,
)
from kubelite.client.informer import Informer, InformerStats
from kubelite.client.kubeconfig import Connection, KubeconfigError, load_kubeconfig
from kubelite.client.merge import three_way_merge
from kubelite.client.objects import (
    Object,
    Ref,
    annotations_of,
    key_of,
    labels_of,
    name_of,
    namespace_of,
    ref_of,
    resource_version,
    split_key,
)
from kubelite.client.retry import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRY,
    Backoff,
    retry_on_conflict,
    retry_on_conflict_async,
)
from kubelite.client.sync_client import Client, Watch
from kubelite.client.workqueue import ExponentialBackoff, QueueShutDown, RateLimiter, WorkQueue

__all__ = [
    "ALL_NAMESPACES",
    "DEFAULT_BACKOFF",
    "DEFAULT_RETRY",
    "AlreadyExists",
    "ApiError",
    "AsyncClient",
    "AsyncWatch",
    "Backoff",
    "BadRequest",
    "Client",
    "Conflict",
    "Connection",
    "Controller",
    "Expired",
    "ExponentialBackoff",
    "FieldChange",
    "Forbidden",
    "Gone",
    "Indexer",
    "Informer",
    "InformerStats",
    "Invalid",
    "KubeconfigError",
    "MergeConflict",
    "MethodNotAllowed",
    "NotFound",
    "Object",
    "QueueShutDown",
    "RateLimiter",
    "Ref",
    "ResourceNotFound",
    "ResourceType",
    "ServerError",
    "ServerTimeout",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "Watch",
    "WatchEvent",
    "WorkQueue",
    "annotations_of",
    "by_namespace",
    "error_from_status",
    "key_of",
    "labels_of",
    "load_kubeconfig",
    "name_of",
    "namespace_of",
    "ref_of",
    "resource_version",
    "retry_on_conflict",
    "retry_on_conflict_async",
    "split_key",
    "three_way_merge",
]
