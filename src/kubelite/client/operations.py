"""Every client operation, written once as a sans-I/O generator (see :mod:`kubelite.client.core`).

:class:`Operations` holds what the operations share (the discovery cache, the default namespace,
the field manager); each method returns an :data:`~kubelite.client.core.Op` that a driver runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubelite.client.core import PATCH_TYPES, ApiRequest, Op, call, decode, encode, sleep
from kubelite.client.discovery import ALL_NAMESPACES, Discovery, ResourceType, group_version_path
from kubelite.client.errors import Conflict, Expired, NotFound, ResourceNotFound
from kubelite.client.merge import three_way_merge
from kubelite.client.objects import Object, Ref, deep_copy, metadata, ref_of
from kubelite.client.retry import DEFAULT_RETRY, Backoff

Mutate = Callable[[Object], Object | None]
Query = list[tuple[str, str]]
LIST_PAGE = 500


def _selectors(label_selector: str | None, field_selector: str | None) -> Query:
    query: Query = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    return query


class Operations:
    def __init__(self, namespace: str = "default", field_manager: str | None = None) -> None:
        self.discovery = Discovery()
        self.namespace = namespace
        self.field_manager = field_manager

    # -- discovery -------------------------------------------------------------------------

    def resolve(self, api_version: str, kind: str) -> Op[ResourceType]:
        """The resource for apiVersion and kind (or plural); a miss fetches the group-version's
        discovery document again, so kinds of CRDs created meanwhile are found."""
        found = self.discovery.lookup(api_version, kind)
        if found is not None:
            return found
        try:
            document = decode((yield from call(ApiRequest("GET", group_version_path(api_version)))))
        except NotFound:
            raise ResourceNotFound(f"the server does not serve {api_version}")
        self.discovery.load(api_version, document)
        found = self.discovery.lookup(api_version, kind)
        if found is None:
            raise ResourceNotFound(f"the server has no resource of kind {kind!r} in {api_version}")
        return found

    def _namespace(self, resource: ResourceType, namespace: str | None) -> str | None:
        if not resource.namespaced:
            return None
        return namespace or self.namespace

    def _write_query(self, dry_run: bool, field_manager: str | None = None) -> Query:
        query: Query = []
        manager = field_manager or self.field_manager
        if manager:
            query.append(("fieldManager", manager))
        if dry_run:
            query.append(("dryRun", "All"))
        return query

    # -- verbs -----------------------------------------------------------------------------

    def request(
        self, method: str, path: str, query: Query | None = None, body: Any = None
    ) -> Op[Any]:
        """Any JSON request by path (kubelite's admin calls, paths the verbs do not cover)."""
        data = None if body is None else encode(body)
        return decode((yield from call(ApiRequest(method, path, tuple(query or ()), data))))

    def get(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Op[Object]:
        resource = yield from self.resolve(api_version, kind)
        path = resource.path(self._namespace(resource, namespace), name, subresource)
        result: Object = decode((yield from call(ApiRequest("GET", path))))
        return result

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int = LIST_PAGE,
    ) -> Op[Object]:
        """Every matching object, read ``limit`` at a time from one snapshot; returns one List
        whose ``metadata.resourceVersion`` is the snapshot's. Items get apiVersion and kind. If
        a continue token expires mid-way the list starts over unpaged, as client-go's pager
        does. ``namespace`` ``"*"`` lists across namespaces."""
        resource = yield from self.resolve(api_version, kind)
        path = resource.path(self._namespace(resource, namespace))
        base = _selectors(label_selector, field_selector)
        items: list[Object] = []
        token = ""
        page_limit: int | None = limit if limit > 0 else None
        while True:
            query = list(base)
            if page_limit:
                query.append(("limit", str(page_limit)))
            if token:
                query.append(("continue", token))
            try:
                page = decode((yield from call(ApiRequest("GET", path, tuple(query)))))
            except Expired:
                if not token:
                    raise
                items, token, page_limit = [], "", None
                continue
            items.extend(page.get("items") or ())
            token = str(metadata(page).get("continue") or "")
            if not token:
                break
        for item in items:
            item.setdefault("apiVersion", resource.api_version)
            item.setdefault("kind", resource.kind)
        return {
            "apiVersion": resource.api_version,
            "kind": f"{resource.kind}List",
            "metadata": {"resourceVersion": str(metadata(page).get("resourceVersion", ""))},
            "items": items,
        }

    def create(
        self, obj: Mapping[str, Any], namespace: str | None = None, dry_run: bool = False
    ) -> Op[Object]:
        resource = yield from self.resolve(str(obj.get("apiVersion")), str(obj.get("kind")))
        namespace = self._namespace(resource, metadata(obj).get("namespace") or namespace)
        request = ApiRequest(
            "POST", resource.path(namespace), tuple(self._write_query(dry_run)), encode(obj)
        )
        result: Object = decode((yield from call(request)))
        return result

    def replace(
        self, obj: Mapping[str, Any], subresource: str | None = None, dry_run: bool = False
    ) -> Op[Object]:
        """PUT: a conditional update when the object carries a resourceVersion."""
        ref = ref_of(obj)
        resource = yield from self.resolve(ref.api_version, ref.kind)
        path = resource.path(self._namespace(resource, ref.namespace), ref.name, subresource)
        request = ApiRequest("PUT", path, tuple(self._write_query(dry_run)), encode(obj))
        result: Object = decode((yield from call(request)))
        return result

    def patch(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> Op[Object]:
        """``patch_type``: ``merge`` (RFC 7386), ``json`` (RFC 6902, a list of operations),
        ``strategic`` (built-in kinds only) or ``apply`` (server-side apply, which needs a
        field manager; see :meth:`apply`). ``field_manager`` overrides the client's."""
        if patch_type not in PATCH_TYPES:
            raise ValueError(f"patch_type must be one of {', '.join(PATCH_TYPES)}")
        resource = yield from self.resolve(api_version, kind)
        path = resource.path(self._namespace(resource, namespace), name, subresource)
        query = self._write_query(dry_run, field_manager)
        if force is not None:
            query.append(("force", "true" if force else "false"))
        request = ApiRequest("PATCH", path, tuple(query), encode(patch), PATCH_TYPES[patch_type])
        result: Object = decode((yield from call(request)))
        return result

    def apply(
        self,
        obj: Mapping[str, Any],
        *,
        field_manager: str,
        force: bool = False,
        dry_run: bool = False,
        subresource: str | None = None,
    ) -> Op[Object]:
        """Server-side apply: PATCH ``obj`` (apiVersion, kind, metadata.name, and only the
        fields this manager has an opinion on) as ``application/apply-patch+yaml`` to the
        object's URL. The object is created if it does not exist. The server records
        ``field_manager`` as the owner of every field in ``obj``; fields it owned before and
        ``obj`` no longer names are removed (unless another manager owns them too).

        Setting a field another manager owns, to a different value, raises
        :class:`~kubelite.client.errors.Conflict` (409), whose ``causes`` name each field and
        its owner (``{"reason": "FieldManagerConflict", "field": ".data.k",
        "message": 'conflict with "alice"'}``); ``force=True`` takes those fields over instead.
        The namespace is ``metadata.namespace``, else the client's default (namespaced kinds).
        ``field_manager`` is required: a ``ValueError`` is raised before anything is sent."""
        if not field_manager:
            raise ValueError("apply needs a field_manager (the name that owns the fields)")
        ref = ref_of(obj)
        result: Object = yield from self.patch(
            ref.api_version,
            ref.kind,
            ref.name,
            obj,
            ref.namespace,
            patch_type="apply",
            subresource=subresource,
            force=force,
            dry_run=dry_run,
            field_manager=field_manager,
        )
        return result

    def delete(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
        preconditions: Mapping[str, str] | None = None,
        dry_run: bool = False,
    ) -> Op[Object]:
        """Returns what the server answers: a Status, or the object when deletion is pending
        (finalizers) or the kind returns it."""
        resource = yield from self.resolve(api_version, kind)
        path = resource.path(self._namespace(resource, namespace), name)
        options: Object = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if preconditions:
            options["preconditions"] = dict(preconditions)
        if dry_run:
            options["dryRun"] = ["All"]
        result: Object = decode((yield from call(ApiRequest("DELETE", path, (), encode(options)))))
        return result

    def watch_request(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        name: str | None = None,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = False,
        send_initial_events: bool | None = None,
    ) -> Op[ApiRequest]:
        """The request that opens a watch. ``send_initial_events=True`` asks for a watch-list
        (the current objects as ADDED, then a BOOKMARK annotated
        ``k8s.io/initial-events-end``), which needs ``resourceVersionMatch=NotOlderThan``."""
        resource = yield from self.resolve(api_version, kind)
        path = resource.path(self._namespace(resource, namespace))
        query: Query = [("watch", "true")]
        if name:
            field_selector = ",".join(filter(None, [f"metadata.name={name}", field_selector]))
        query += _selectors(label_selector, field_selector)
        if resource_version is not None:
            query.append(("resourceVersion", resource_version))
        if timeout_seconds is not None:
            query.append(("timeoutSeconds", str(timeout_seconds)))
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if send_initial_events is not None:
            query.append(("sendInitialEvents", "true" if send_initial_events else "false"))
            query.append(("resourceVersionMatch", "NotOlderThan"))
        return ApiRequest("GET", path, tuple(query))

    # -- conflict-safe updates -------------------------------------------------------------

    def update_with(
        self,
        target: Ref | Mapping[str, Any],
        mutate: Mutate,
        backoff: Backoff = DEFAULT_RETRY,
        subresource: str | None = None,
    ) -> Op[Object]:
        """Read, ``mutate`` (in place, or return a new object), write with the resourceVersion
        read; on 409 read again and re-apply ``mutate``, at most ``backoff.steps`` attempts.
        A mutate that changes nothing writes nothing and returns the object read."""
        ref = target if isinstance(target, Ref) else ref_of(target)
        delays = backoff.delays()
        while True:
            current = yield from self.get(*ref[:3], ref.namespace, subresource)
            desired = deep_copy(current)
            returned = mutate(desired)
            if returned is not None:
                desired = returned
            if desired == current:
                return current
            try:
                return (yield from self.replace(desired, subresource))
            except Conflict:
                delay = next(delays, None)
                if delay is None:
                    raise
            yield from sleep(delay)

    def update_three_way(
        self,
        base: Mapping[str, Any],
        mine: Mapping[str, Any],
        backoff: Backoff = DEFAULT_RETRY,
    ) -> Op[Object]:
        """Write ``mine`` (an edit of ``base``, which carries base's resourceVersion). On 409,
        read the latest object and apply the change base -> mine onto it
        (:func:`~kubelite.client.merge.three_way_merge`); raises
        :class:`~kubelite.client.errors.MergeConflict` if someone else changed one of the same
        fields differently, and Conflict when the attempts run out."""
        ref = ref_of(mine)
        candidate: Mapping[str, Any] = mine
        delays = backoff.delays()
        while True:
            try:
                return (yield from self.replace(candidate))
            except Conflict:
                delay = next(delays, None)
                if delay is None:
                    raise
            yield from sleep(delay)
            latest = yield from self.get(*ref[:3], ref.namespace)
            candidate = three_way_merge(base, mine, latest)


__all__ = ["ALL_NAMESPACES", "Mutate", "Operations"]
