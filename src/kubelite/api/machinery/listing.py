"""Lists: one list request read page by page from one storage snapshot, and the continue
tokens that resume it (kube-apiserver's format: base64 JSON with the revision and the next key).
Each page is read at the requested version through the kind's
:class:`~kubelite.api.encoding.stored.Codec` (a kind converted by a webhook: the whole page in one
call)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.encoding import resourceversion as rv
from kubelite.api.encoding.stored import Codec, Obj, storage_prefix
from kubelite.api.errors import APIError, Cause
from kubelite.api.machinery.selectors import for_kind
from kubelite.storage import Compacted, FutureRevision, ListResult, Store


@dataclass(frozen=True, slots=True)
class ListOptions:
    """A list request's query parameters. ``label_selector`` matches the label and the field
    selector together; None when the request has neither (a list "without selectors", the only
    kind whose pages report ``remainingItemCount``). ``send_initial_events`` is None when absent:
    any value is refused on a list."""

    label_selector: Callable[[Obj], bool] | None = None
    limit: int = 0
    continue_token: str = ""
    resource_version: str | None = None
    resource_version_match: str = ""
    send_initial_events: bool | None = None


# The resourceVersionMatch values a list accepts, in the order kube-apiserver names them.
RESOURCE_VERSION_MATCHES = ("Exact", "NotOlderThan", "")
# How long a list or get with resourceVersion=N waits for the store to reach N (kube's cacher).
WAIT_FOR_REVISION_SECONDS = 3.0


def validate_list_options(opts: ListOptions) -> None:
    """apimachinery's ValidateListOptions for a list (a watch has its own rules): the 422
    ``ListOptions.meta.k8s.io "" is invalid: ...`` for parameters that contradict each other.
    :class:`ListScan` calls it before anything is read, so every list path refuses them alike."""
    causes = _list_option_problems(opts)
    if causes:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", causes)


def _list_option_problems(opts: ListOptions) -> list[Cause]:
    """Every problem, in kube-apiserver's order (its message lists them all)."""
    causes: list[Cause] = []
    match = opts.resource_version_match
    if match:
        if not opts.resource_version:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if opts.continue_token:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match not in RESOURCE_VERSION_MATCHES:
            supported = ", ".join(_quote(value) for value in RESOURCE_VERSION_MATCHES)
            causes.append(
                Cause(
                    "FieldValueNotSupported",
                    f"Unsupported value: {_quote(match)}: supported values: {supported}",
                    "resourceVersionMatch",
                )
            )
        if match == "Exact" and opts.resource_version == "0":
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if opts.send_initial_events is not None:
        causes.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return causes


def _forbidden(field: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", field)


def _quote(value: str) -> str:
    """A string value as Go's ``%q`` shows it (JSON's quoting agrees for the usual values)."""
    return orjson.dumps(value).decode()


def too_large_resource_version(requested: int, current: int) -> APIError:
    """The 504 for a resourceVersion the store has not reached; its cause and Retry-After make
    client-go retry, and reflectors relist from the latest revision."""
    return errors.timeout(
        f"Too large resource version: {requested}, current: {current}",
        [Cause("ResourceVersionTooLarge", "Too large resource version")],
        retry_after=1,
    )


async def wait_for_revision(store: Store, revision: int, seconds: float | None = None) -> None:
    """Return once the store has reached ``revision``, else raise the 504
    :func:`too_large_resource_version` after ``seconds`` (default
    ``WAIT_FOR_REVISION_SECONDS``, read at each call so tests can shorten it). Not
    ``asyncio.timeout``: the 504 names the last revision seen.

    A client may hold a revision this server has not seen yet (another server over the same etcd
    wrote it); kube-apiserver's cache then waits rather than answer older data or fail at once.
    Polls :meth:`Store.current_revision` from every few milliseconds up to every quarter second,
    so a revision that is nearly there costs little delay and a missing one little load."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (WAIT_FOR_REVISION_SECONDS if seconds is None else seconds)
    delay = 0.005
    while (current := await store.current_revision()) < revision:
        left = deadline - loop.time()
        if left <= 0:
            raise too_large_resource_version(revision, current)
        await asyncio.sleep(min(delay, left))
        delay = min(delay * 2, 0.25)


class ListScan:
    """One list request, read page by page from one storage snapshot, so that a large list
    can be sent as it is read instead of held whole. ``metadata`` (resourceVersion, continue,
    remainingItemCount) is complete once :meth:`pages` is exhausted."""

    PAGE = 500

    def __init__(
        self,
        store: Store,
        info: ResourceInfo,
        namespace: str | None,
        opts: ListOptions,
        codec: Codec | None = None,
    ) -> None:
        validate_list_options(opts)
        self.codec = codec if codec is not None else Codec(info)
        # the kind's field labels, checked after the list options as kube-apiserver does
        self.matches = for_kind(opts.label_selector, info.field_labels, info.field_label_error)
        self.store = store
        self.info = info
        self.opts = opts
        self.prefix = storage_prefix(info, namespace)
        self.revision: int | None = None  # the snapshot; None until the first read: the latest
        self.start_after: str | None = None
        self.min_revision = 0  # resourceVersion=N: the first read waits for the store to reach N
        self.metadata: dict[str, Any] = {}
        self.limit = opts.limit if opts.limit > 0 else None
        if opts.continue_token:
            self._resume(opts.continue_token)
        else:
            self._start()
        self._resumed_after = self.start_after  # where an expired token's fresh one resumes
        # kube counts what is left from etcd's count, which is exact only without selectors.
        self.count_remaining = self.limit is not None and opts.label_selector is None

    def _resume(self, token: str) -> None:
        """Continue a list: at the token's revision, or at the latest one for ``rv: -1``."""
        if self.opts.resource_version not in (None, "", "0"):
            raise errors.bad_request(
                "specifying resource version is not allowed when using continue"
            )
        revision, self.start_after = _decode_continue(token, self.prefix)
        self.revision = revision if revision > 0 else None

    def _start(self) -> None:
        """The first page's revision from resourceVersion and resourceVersionMatch (§6)."""
        opts = self.opts
        if opts.resource_version == "0":
            self.limit = None  # kube-apiserver serves RV=0 from its cache, ignoring limit
            return
        requested = parse_rv_query(opts.resource_version)
        if not requested:
            return
        match = opts.resource_version_match
        if match == "Exact" or (self.limit is not None and match != "NotOlderThan"):
            self.revision = requested
        self.min_revision = requested

    async def pages(self) -> AsyncGenerator[list[Obj], None]:
        """Pages of matching objects; raises APIError 410/504 for compacted or future RVs."""
        limit, sent = self.limit, 0
        try:
            while True:
                # With a selector a page may match fewer than asked: ask only for what is left,
                # so a list never holds more than ``limit`` items (kube may return fewer).
                page = self.PAGE if limit is None else min(self.PAGE, limit - sent)
                # Without selectors, the read that fills the limit is the last: count there only.
                count = self.count_remaining and limit is not None and page == limit - sent
                result = await self._read(page, count)
                self.revision = result.revision
                matched = await self.codec.decode_all(result.items)
                if self.matches is not None:
                    matched = [obj for obj in matched if self.matches(obj)]
                sent += len(matched)
                if result.items:
                    self.start_after = result.items[-1].key
                more = result.more
                if matched:
                    yield matched
                if not more or (limit is not None and sent >= limit):
                    break
        except Compacted:
            raise self._expired()
        except FutureRevision as exc:
            raise too_large_resource_version(exc.requested_revision, exc.current_revision)
        self._finish(result, more)

    async def _read(self, page: int, count: bool) -> ListResult:
        """One page from the store. The first read of a list asked for resourceVersion=N waits
        for the store to reach N when it has not: a not-older-than list must not answer older
        data, and an exact one gets its snapshot if it arrives within the wait."""
        minimum, self.min_revision = self.min_revision, 0
        try:
            result = await self._list(page, count)
            if result.revision >= minimum:
                return result
        except FutureRevision:
            if not minimum:  # a continue token's revision: kube answers the 504 at once
                raise
        await wait_for_revision(self.store, minimum)
        return await self._list(page, count)

    async def _list(self, page: int, count: bool) -> ListResult:
        return await self.store.list(
            self.prefix, self.revision, page, self.start_after, count=count
        )

    def _expired(self) -> APIError:
        """The 410 for a snapshot compacted away. A continued list also gets a fresh token that
        resumes from the same key at the latest revision (kube's ``rv: -1``), for a client that
        accepts an inconsistent remainder over starting again."""
        if not self.opts.continue_token:
            return errors.expired("The resourceVersion for the provided list is too old.")
        fresh = _encode_continue(-1, self._resumed_after or self.prefix, self.prefix)
        return errors.expired(CONTINUE_EXPIRED, {"continue": fresh})

    def _finish(self, last: ListResult, more: bool) -> None:
        """``metadata`` once the last page is read: a continue token (and, when counted, how
        many items are left) only when the limit stopped the list before its end."""
        assert self.revision is not None
        self.metadata = {"resourceVersion": str(self.revision)}
        if self.limit is None or not more:
            return
        last_key = self.start_after or self.prefix
        self.metadata["continue"] = _encode_continue(self.revision, last_key, self.prefix)
        if last.remaining is not None:
            self.metadata["remainingItemCount"] = last.remaining


CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


def _encode_continue(revision: int, last_key: str, prefix: str) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": revision, "start": last_key[len(prefix) :] + "\x00"}
    return base64.urlsafe_b64encode(orjson.dumps(token)).decode().rstrip("=")


def _decode_continue(token: str, prefix: str) -> tuple[int, str]:
    """The token's revision and the key to continue after. A negative revision (kube writes -1
    into the token of an expired list's 410) means the latest; 0 is invalid, as in kube."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        revision, start = int(data["rv"]), str(data["start"])
        if data.get("v") != "meta.k8s.io/v1" or not start.endswith("\x00") or not revision:
            raise ValueError
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise errors.bad_request(
            "invalid continue token: continue key is not valid: the continue token is invalid"
        )
    return revision, prefix + start[:-1]


def parse_rv_query(value: str | None) -> int:
    """A ``resourceVersion`` query parameter; 400 with kube-apiserver's text if malformed."""
    try:
        return rv.parse(value)
    except rv.BadResourceVersion:
        raise errors.bad_request(f"invalid resource version: {value}")
