"""ListScan over a real SQLite store: remainingItemCount, the list options' 422s, waiting for a
future resourceVersion (and its 504), and the fresh continue token of an expired one's 410."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import orjson
import pytest

from kubelite.api.catalogue import ResourceInfo, load_builtin_catalogue
from kubelite.api.encoding.stored import encode, storage_key
from kubelite.api.errors import APIError, status_body
from kubelite.api.machinery import listing
from kubelite.api.machinery.listing import (
    CONTINUE_EXPIRED,
    ListOptions,
    ListScan,
    wait_for_revision,
)
from kubelite.storage import Store

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def cm(tmp_path_factory: pytest.TempPathFactory) -> ResourceInfo:
    catalogue = load_builtin_catalogue(tmp_path_factory.mktemp("cache"))
    found = catalogue.lookup("", "v1", "configmaps")
    assert found is not None
    return found


async def put(store: Store, cm: ResourceInfo, name: str, value: str = "0") -> int:
    """Create or overwrite a ConfigMap in ``default`` straight in the store; its revision."""
    key = storage_key(cm, "default", name)
    body = encode({"kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}}, cm)
    current = await store.get(key)
    if current is None:
        return await store.create(key, body)
    return await store.update(key, body, current.mod_revision)


async def scan(store: Store, cm: ResourceInfo, **options: Any) -> tuple[list[str], Obj]:
    """One list request: the names it returned and its metadata."""
    listed = ListScan(store, cm, "default", ListOptions(**options))
    names = [obj["metadata"]["name"] async for page in listed.pages() for obj in page]
    return names, listed.metadata


def token_fields(token: str) -> Obj:
    data: Obj = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return data


def make_token(rv: int, start: str = "b\x00", version: str = "meta.k8s.io/v1") -> str:
    raw = orjson.dumps({"v": version, "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


async def raised(store: Store, cm: ResourceInfo, **options: Any) -> APIError:
    with pytest.raises(APIError) as info:
        await scan(store, cm, **options)
    return info.value


# -- remainingItemCount -------------------------------------------------------------------


async def test_remaining_item_count_counts_the_items_after_each_page(
    store: Store, cm: ResourceInfo
) -> None:
    for name in "abcde":
        await put(store, cm, name)
    names, meta = await scan(store, cm, limit=2)
    assert (names, meta["remainingItemCount"]) == (["a", "b"], 3)
    names, meta = await scan(store, cm, limit=2, continue_token=meta["continue"])
    assert (names, meta["remainingItemCount"]) == (["c", "d"], 1)
    names, meta = await scan(store, cm, limit=2, continue_token=meta["continue"])
    assert names == ["e"]
    assert list(meta) == ["resourceVersion"]  # the last page: no continue, no count


async def test_remaining_item_count_is_left_out_with_a_selector_or_without_a_limit(
    store: Store, cm: ResourceInfo
) -> None:
    for name in "abcde":
        await put(store, cm, name)
    _, meta = await scan(store, cm, limit=2, label_selector=lambda obj: True)
    assert "continue" in meta
    assert "remainingItemCount" not in meta  # etcd's count would include non-matching items
    _, meta = await scan(store, cm)
    assert list(meta) == ["resourceVersion"]
    _, meta = await scan(store, cm, limit=2, resource_version="0")  # limit ignored at RV 0
    assert list(meta) == ["resourceVersion"]


async def test_remaining_item_count_when_a_limit_spans_several_store_reads(
    store: Store, cm: ResourceInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ListScan, "PAGE", 2)
    for name in "abcdefghi":
        await put(store, cm, name)
    names, meta = await scan(store, cm, limit=5)
    assert names == list("abcde")
    assert meta["remainingItemCount"] == 4


# -- list options -------------------------------------------------------------------------

HEAD = 'ListOptions.meta.k8s.io "" is invalid: '
NO_RV = (
    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion "
    "is provided"
)
WITH_CONTINUE = (
    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"
)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"resource_version_match": "NotOlderThan"}, NO_RV),
        ({"resource_version_match": "Exact", "resource_version": ""}, NO_RV),
        (
            {"resource_version_match": "NotOlderThan", "continue_token": make_token(5)},
            f"[{NO_RV}, {WITH_CONTINUE}]",
        ),
        (
            {"resource_version_match": "Exact", "resource_version": "0"},
            'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
            'resourceVersion "0"',
        ),
        (
            {"resource_version_match": "Newest", "resource_version": "5"},
            'resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", '
            '"NotOlderThan", ""',
        ),
        (
            {"send_initial_events": False},
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
        ),
    ],
    ids=["no-rv", "empty-rv", "no-rv-and-continue", "exact-at-0", "unsupported", "initial-events"],
)
async def test_invalid_list_options_are_a_422(
    store: Store, cm: ResourceInfo, options: Obj, message: str
) -> None:
    error = await raised(store, cm, **options)
    assert (error.code, error.reason, error.message) == (422, "Invalid", HEAD + message)


async def test_list_options_422_details_name_the_list_options(
    store: Store, cm: ResourceInfo
) -> None:
    error = await raised(store, cm, resource_version_match="NotOlderThan")
    assert status_body(error) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": HEAD + NO_RV,
        "reason": "Invalid",
        "details": {
            "group": "meta.k8s.io",
            "kind": "ListOptions",
            "causes": [
                {
                    "reason": "FieldValueForbidden",
                    "message": "Forbidden: resourceVersionMatch is forbidden unless "
                    "resourceVersion is provided",
                    "field": "resourceVersionMatch",
                }
            ],
        },
        "code": 422,
    }


async def test_valid_resource_version_matches_are_accepted(store: Store, cm: ResourceInfo) -> None:
    first = await put(store, cm, "a")
    await put(store, cm, "b")
    for rv, match, expected in [
        ("0", "NotOlderThan", ["a", "b"]),
        (str(first), "NotOlderThan", ["a", "b"]),
        (str(first), "Exact", ["a"]),
    ]:
        names, _ = await scan(store, cm, resource_version=rv, resource_version_match=match)
        assert names == expected


# -- a resourceVersion the store has not reached ------------------------------------------


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wait far longer than any test needs: a stalled machine must not turn it into a 504."""
    monkeypatch.setattr(listing, "WAIT_FOR_REVISION_SECONDS", 60.0)


@pytest.mark.usefixtures("patient")
async def test_not_older_than_list_waits_for_a_future_revision(
    store: Store, cm: ResourceInfo
) -> None:
    current = await put(store, cm, "a")
    listed = asyncio.ensure_future(scan(store, cm, resource_version=str(current + 1)))
    await asyncio.sleep(0.05)
    assert not listed.done()  # before the change it answered the data at `current` at once
    later = await put(store, cm, "b")
    names, meta = await listed
    assert names == ["a", "b"]
    assert int(meta["resourceVersion"]) >= later


@pytest.mark.usefixtures("patient")
async def test_exact_list_waits_for_a_future_revision(store: Store, cm: ResourceInfo) -> None:
    current = await put(store, cm, "a")
    listed = asyncio.ensure_future(
        scan(store, cm, resource_version=str(current + 1), resource_version_match="Exact")
    )
    await asyncio.sleep(0.05)
    await put(store, cm, "b")
    await put(store, cm, "c")
    names, meta = await listed
    assert (names, meta["resourceVersion"]) == (["a", "b"], str(current + 1))


async def test_future_revision_list_is_a_504_after_the_wait(
    store: Store, cm: ResourceInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "WAIT_FOR_REVISION_SECONDS", 0.2)
    current = await put(store, cm, "a")
    for match in ("", "NotOlderThan", "Exact"):
        error = await raised(
            store, cm, resource_version=str(current + 10), resource_version_match=match
        )
        assert error.code == 504
        assert error.retry_after == 1
        body = status_body(error)
        assert body["message"] == (
            f"Timeout: Too large resource version: {current + 10}, current: {current}"
        )
        assert (body["reason"], body["details"]) == (
            "Timeout",
            {
                "causes": [
                    {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                ],
                "retryAfterSeconds": 1,
            },
        )


async def test_wait_for_revision_returns_once_the_store_reaches_it(store: Store) -> None:
    await wait_for_revision(store, 0, seconds=0)  # already there: no wait at all
    current = await store.current_revision()
    waiting = asyncio.ensure_future(wait_for_revision(store, current + 2, seconds=30))
    await store.create("/w/a", b"1")
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await store.create("/w/b", b"1")
    await waiting


async def test_wait_for_revision_gives_up_with_the_504(store: Store) -> None:
    current = await store.create("/w/a", b"1")
    with pytest.raises(APIError) as info:
        await wait_for_revision(store, current + 1, seconds=0.1)
    assert info.value.code == 504
    assert info.value.message == (
        f"Timeout: Too large resource version: {current + 1}, current: {current}"
    )


# -- expired continue tokens --------------------------------------------------------------


async def test_expired_continue_token_410_carries_a_token_for_the_latest_revision(
    store: Store, cm: ResourceInfo
) -> None:
    for name in "abcde":
        await put(store, cm, name)
    _, meta = await scan(store, cm, limit=2)
    old = meta["continue"]
    await put(store, cm, "c", "changed")
    await store.compact(await put(store, cm, "f"))

    error = await raised(store, cm, limit=2, continue_token=old)
    body = status_body(error)
    assert (body["code"], body["reason"], body["message"]) == (410, "Expired", CONTINUE_EXPIRED)
    fresh = body["metadata"]["continue"]
    assert list(body["metadata"]) == ["continue"]
    assert token_fields(fresh) == {**token_fields(old), "rv": -1}

    # The fresh token continues after the same key, at the latest revision, and its own
    # continue token names the revision it was read at.
    latest = await store.current_revision()
    listed = ListScan(store, cm, "default", ListOptions(limit=2, continue_token=fresh))
    objects = [obj async for page in listed.pages() for obj in page]
    assert [(o["metadata"]["name"], o["data"]["v"]) for o in objects] == [
        ("c", "changed"),
        ("d", "0"),
    ]
    assert listed.metadata["resourceVersion"] == str(latest)
    assert listed.metadata["remainingItemCount"] == 2
    assert token_fields(listed.metadata["continue"])["rv"] == latest
    names, meta = await scan(store, cm, limit=5, continue_token=listed.metadata["continue"])
    assert (names, meta["resourceVersion"]) == (["e", "f"], str(latest))


async def test_other_errors_keep_an_empty_status_metadata(store: Store, cm: ResourceInfo) -> None:
    await put(store, cm, "a")
    first = await put(store, cm, "a", "1")
    await store.compact(await put(store, cm, "a", "2"))
    error = await raised(store, cm, resource_version=str(first), resource_version_match="Exact")
    assert error.code == 410
    assert status_body(error)["metadata"] == {}


@pytest.mark.parametrize(
    "token",
    [
        make_token(0),
        make_token(5, start="b"),
        make_token(5, version="meta.k8s.io/v2"),
        "not-a-token",
        base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":5}').decode(),
    ],
    ids=["rv-0", "start-unterminated", "wrong-version", "not-base64-json", "no-start"],
)
async def test_invalid_continue_tokens_are_still_a_400(
    store: Store, cm: ResourceInfo, token: str
) -> None:
    error = await raised(store, cm, continue_token=token)
    assert (error.code, error.message) == (
        400,
        "invalid continue token: continue key is not valid: the continue token is invalid",
    )
