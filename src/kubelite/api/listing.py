"""Lists: one list request read page by page from one storage snapshot, and the continue
tokens that resume it (kube-apiserver's format: base64 JSON with the revision and the next key)."""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from kubelite.api import errors
from kubelite.api import resourceversion as rv
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.errors import Cause
from kubelite.api.stored import Obj, decode, storage_prefix
from kubelite.storage import Compacted, FutureRevision, Store


@dataclass(frozen=True, slots=True)
class ListOptions:
    label_selector: Callable[[Obj], bool] | None = None
    limit: int = 0
    continue_token: str = ""
    resource_version: str | None = None
    resource_version_match: str = ""


class ListScan:
    """One list request, read page by page from one storage snapshot, so that a large list
    can be sent as it is read instead of held whole. ``metadata`` (resourceVersion, continue) is
    complete once :meth:`pages` is exhausted."""

    PAGE = 500

    def __init__(
        self, store: Store, info: ResourceInfo, namespace: str | None, opts: ListOptions
    ) -> None:
        self.store = store
        self.info = info
        self.opts = opts
        self.prefix = storage_prefix(info, namespace)
        self.revision: int | None = None
        self.start_after: str | None = None
        self.metadata: dict[str, Any] = {}
        if opts.continue_token:
            if opts.resource_version not in (None, "", "0"):
                raise errors.bad_request(
                    "specifying resource version is not allowed when using continue"
                )
            self.revision, self.start_after = _decode_continue(opts.continue_token, self.prefix)
        else:
            requested = parse_rv_query(opts.resource_version)
            exact = opts.resource_version_match == "Exact" or (
                requested and opts.limit and opts.resource_version_match != "NotOlderThan"
            )
            if requested and exact:
                self.revision = requested
        self.limit = opts.limit if opts.limit > 0 else None
        if opts.resource_version == "0" and not opts.continue_token:
            self.limit = None  # kube-apiserver serves RV=0 from its cache, ignoring limit

    async def pages(self) -> AsyncGenerator[list[Obj], None]:
        """Pages of matching objects; raises APIError 410/504 for compacted or future RVs."""
        opts, limit, sent = self.opts, self.limit, 0
        try:
            while True:
                # With a selector a page may match fewer than asked: ask only for what is left,
                # so a list never holds more than ``limit`` items (kube may return fewer).
                page = self.PAGE if limit is None else min(self.PAGE, limit - sent)
                result = await self.store.list(self.prefix, self.revision, page, self.start_after)
                self.revision = result.revision
                matched = [decode(kv, self.info) for kv in result.items]
                if opts.label_selector is not None:
                    matched = [obj for obj in matched if opts.label_selector(obj)]
                sent += len(matched)
                if result.items:
                    self.start_after = result.items[-1].key
                more = result.more
                if matched:
                    yield matched
                if not more or (limit is not None and sent >= limit):
                    break
        except Compacted:
            if opts.continue_token:
                raise errors.expired(CONTINUE_EXPIRED)
            raise errors.expired("The resourceVersion for the provided list is too old.")
        except FutureRevision as exc:
            raise errors.timeout(
                f"Too large resource version: {exc.requested_revision}, "
                f"current: {exc.current_revision}",
                [Cause("ResourceVersionTooLarge", "Too large resource version")],
                retry_after=1,
            )
        assert self.revision is not None
        self.metadata = {"resourceVersion": str(self.revision)}
        if limit is not None and more:
            last_key = self.start_after or self.prefix
            self.metadata["continue"] = _encode_continue(self.revision, last_key, self.prefix)


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
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        revision, start = int(data["rv"]), str(data["start"])
        if data.get("v") != "meta.k8s.io/v1" or not start.endswith("\x00") or revision < 1:
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
