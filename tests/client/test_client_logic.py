"""The client's pure logic, without a server: the Status -> exception mapping, client-go's
backoff, the three-way merge, the watch line decoder, discovery and request building, the
informer's cache and the work queue."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import orjson
import pytest

from kubelite.client import (
    DEFAULT_BACKOFF,
    DEFAULT_RETRY,
    AlreadyExists,
    ApiError,
    Backoff,
    Conflict,
    Expired,
    ExponentialBackoff,
    Gone,
    Indexer,
    Invalid,
    MergeConflict,
    NotFound,
    QueueShutDown,
    ResourceNotFound,
    ServerError,
    ServerTimeout,
    TooManyRequests,
    WorkQueue,
    by_namespace,
    error_from_status,
    retry_on_conflict,
    retry_on_conflict_async,
    three_way_merge,
)
from kubelite.client.core import ApiRequest, ApiResponse, Sleep, WatchDecoder
from kubelite.client.operations import Operations


def status(code: int, reason: str = "", message: str = "m", **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "status": "Failure"}
    body.update(code=code, message=message)
    if reason:
        body["reason"] = reason
    if details:
        body["details"] = details
    return body


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (409, "", Conflict),  # client-go: a 409 with an unknown reason is a conflict
        (410, "Expired", Expired),
        (410, "Gone", Expired),
        (422, "Invalid", Invalid),
        (429, "TooManyRequests", TooManyRequests),
        (500, "", ServerError),
        (504, "Timeout", ServerTimeout),
        (503, "", ServerError),
        (418, "", ApiError),
    ],
)
def test_status_maps_to_one_exception_class(
    code: int, reason: str, expected: type[ApiError]
) -> None:
    body = status(code, reason, "the message", name="x", causes=[{"field": "f"}])
    error = error_from_status(code, body)
    assert type(error) is expected
    assert error.status == body
    assert (error.code, error.reason, error.message) == (code, reason, "the message")
    assert error.causes == [{"field": "f"}]


def test_already_exists_is_not_a_conflict_and_gone_is_expired() -> None:
    assert not issubclass(AlreadyExists, Conflict)
    assert Gone is Expired
    assert issubclass(ServerTimeout, ServerError)


def test_a_body_that_is_not_a_status_still_maps_by_code() -> None:
    error = error_from_status(409, "upstream said no")
    assert isinstance(error, Conflict)
    assert error.message == "upstream said no"
    assert error.status["code"] == 409


def test_retry_after_is_read_from_the_details() -> None:
    error = error_from_status(429, status(429, "TooManyRequests", retryAfterSeconds=3))
    assert error.retry_after == 3


# -- backoff and retry_on_conflict ------------------------------------------------------------


def test_default_retry_is_client_gos() -> None:
    assert (DEFAULT_RETRY.steps, DEFAULT_RETRY.duration) == (5, 0.010)
    assert (DEFAULT_RETRY.factor, DEFAULT_RETRY.jitter) == (1.0, 0.1)
    delays = list(DEFAULT_RETRY.delays(random.Random(1)))
    assert len(delays) == 4  # 5 attempts, 4 sleeps
    assert all(0.010 <= d <= 0.011 for d in delays)


def test_default_backoff_grows_by_its_factor_with_bounded_jitter() -> None:
    delays = list(DEFAULT_BACKOFF.delays(random.Random(2)))
    for delay, base in zip(delays, [0.010, 0.050, 0.250], strict=True):
        assert base <= delay <= base * 1.1
    capped = list(Backoff(steps=5, duration=1.0, factor=3.0, jitter=0.0, cap=4.0).delays())
    assert capped == [1.0, 3.0, 4.0, 4.0]


def test_retry_on_conflict_retries_conflicts_only_and_at_most_steps_times() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 5:
            raise error_from_status(409, status(409, "Conflict"))
        return "done"

    assert retry_on_conflict(flaky) == "done"
    assert len(calls) == 5

    calls.clear()

    def always() -> str:
        calls.append(1)
        raise error_from_status(409, status(409, "Conflict", message=f"try {len(calls)}"))

    with pytest.raises(Conflict, match="try 3"):
        retry_on_conflict(always, Backoff(steps=3, duration=0.001))
    assert len(calls) == 3

    calls.clear()

    def exists() -> str:
        calls.append(1)
        raise error_from_status(409, status(409, "AlreadyExists"))

    with pytest.raises(AlreadyExists):
        retry_on_conflict(exists)
    assert len(calls) == 1


async def test_retry_on_conflict_async() -> None:
    calls: list[int] = []

    async def flaky() -> int:
        calls.append(1)
        if len(calls) < 3:
            raise error_from_status(409, status(409, "Conflict"))
        return len(calls)

    assert await retry_on_conflict_async(flaky) == 3


# -- three-way merge --------------------------------------------------------------------------

BASE = {
    "metadata": {"name": "web", "resourceVersion": "10", "labels": {"a": "1"}},
    "spec": {"replicas": 3, "template": {"image": "nginx:1.25", "ports": [80]}},
}


def edit(obj: dict[str, Any], **changes: Any) -> dict[str, Any]:
    import copy

    result = copy.deepcopy(obj)
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = result
        for key in parents:
            target = target.setdefault(key, {})
        if value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return result


def test_disjoint_changes_merge() -> None:
    mine = edit(BASE, spec__replicas=5)
    latest = edit(BASE, spec__template__image="nginx:1.27", metadata__resourceVersion="11")
    merged = three_way_merge(BASE, mine, latest)
    assert merged["spec"] == {"replicas": 5, "template": {"image": "nginx:1.27", "ports": [80]}}
    assert merged["metadata"]["resourceVersion"] == "11"


def test_same_field_changed_differently_is_reported() -> None:
    mine = edit(BASE, spec__replicas=5, metadata__labels={"a": "1", "b": "2"})
    latest = edit(BASE, spec__replicas=7, metadata__resourceVersion="11")
    with pytest.raises(MergeConflict) as conflict:
        three_way_merge(BASE, mine, latest)
    assert conflict.value.fields == ["spec.replicas"]


def test_same_change_on_both_sides_is_no_conflict() -> None:
    mine = edit(BASE, spec__replicas=5)
    latest = edit(BASE, spec__replicas=5, metadata__resourceVersion="11")
    assert three_way_merge(BASE, mine, latest)["spec"]["replicas"] == 5


def test_removals_and_additions_merge_and_lists_are_one_field() -> None:
    mine = edit(BASE, metadata__labels=None, spec__paused=True)
    latest = edit(BASE, spec__template__ports=[80, 443])
    merged = three_way_merge(BASE, mine, latest)
    assert "labels" not in merged["metadata"]
    assert merged["spec"]["paused"] is True
    assert merged["spec"]["template"]["ports"] == [80, 443]
    with pytest.raises(MergeConflict) as conflict:
        three_way_merge(BASE, edit(BASE, spec__template__ports=[81]), latest)
    assert conflict.value.fields == ["spec.template.ports"]


def test_a_field_whose_parent_the_other_side_removed_conflicts() -> None:
    latest = edit(BASE, spec__template=None)
    with pytest.raises(MergeConflict) as conflict:
        three_way_merge(BASE, edit(BASE, spec__template__image="x"), latest)
    assert conflict.value.fields == ["spec.template.image"]


def test_merge_result_shares_nothing_with_its_inputs() -> None:
    mine = edit(BASE, spec__extra={"k": ["v"]})
    merged = three_way_merge(BASE, mine, BASE)
    merged["spec"]["extra"]["k"].append("w")
    assert mine["spec"]["extra"] == {"k": ["v"]}


# -- watch decoding ---------------------------------------------------------------------------


def test_watch_decoder_joins_lines_split_across_chunks() -> None:
    decoder = WatchDecoder()
    assert decoder.feed(b'{"type":"ADDED","object":{"metadata":{"resourceV') == []
    events = decoder.feed(b'ersion":"5"}}}\n{"type":"BOOKMARK","object":{"metadata":{}}}\n{"ty')
    assert [(e.type, e.resource_version) for e in events] == [("ADDED", "5"), ("BOOKMARK", "")]
    assert [e.type for e in decoder.feed(b'pe":"DELETED","object":{}}\n')] == ["DELETED"]


def test_watch_error_event_raises_its_status() -> None:
    line = b'{"type":"ERROR","object":' + (
        b'{"kind":"Status","status":"Failure","reason":"Expired","code":410,'
        b'"message":"too old resource version: 5 (9)"}}\n'
    )
    with pytest.raises(Expired, match="too old resource version: 5"):
        WatchDecoder().feed(line)


def test_events_before_an_error_in_the_same_chunk_are_handed_out_first() -> None:
    # a server batches what is ready into one chunk: a watch-list's initial-events-end bookmark
    # and the 410 that follows it (kubelite serve --inject watch-drops=P sends exactly this)
    decoder = WatchDecoder()
    chunk = (
        b'{"type":"ADDED","object":{"metadata":{"resourceVersion":"4"}}}\n'
        b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"5"}}}\n'
        b'{"type":"ERROR","object":{"kind":"Status","status":"Failure","reason":"Expired",'
        b'"code":410,"message":"too old resource version: 5 (6)"}}\n'
    )
    assert [e.type for e in decoder.feed(chunk)] == ["ADDED", "BOOKMARK"]
    with pytest.raises(Expired, match=r"too old resource version: 5 \(6\)"):
        decoder.raise_error()
    with pytest.raises(Expired):
        decoder.feed(b"")


# -- discovery and requests -------------------------------------------------------------------

APPS_V1 = {
    "kind": "APIResourceList",
    "groupVersion": "apps/v1",
    "resources": [
        {"name": "deployments", "kind": "Deployment", "namespaced": True, "verbs": ["get"]},
        {"name": "deployments/scale", "kind": "Scale", "group": "autoscaling", "namespaced": True},
        {"name": "deployments/status", "kind": "Deployment", "namespaced": True},
    ],
}


def drive(
    op: Any, answers: list[tuple[int, Any]], sleeps: list[float] | None = None
) -> tuple[Any, list[ApiRequest]]:
    """Run an operation by hand, answering its requests in order (no transport) and noting
    the sleeps it asks for."""
    sent: list[ApiRequest] = []
    try:
        step = next(op)
        while True:
            if isinstance(step, Sleep):
                (sleeps if sleeps is not None else []).append(step.seconds)
                step = op.send(None)
                continue
            sent.append(step)
            code, body = answers.pop(0)
            step = op.send(ApiResponse(code, orjson.dumps(body)))
    except StopIteration as stop:
        return stop.value, sent


def test_discovery_is_cached_and_fetched_again_on_a_miss() -> None:
    ops = Operations(namespace="team")
    found, sent = drive(ops.resolve("apps/v1", "Deployment"), [(200, APPS_V1)])
    assert [r.path for r in sent] == ["/apis/apps/v1"]
    assert found.subresources == {"scale", "status"}
    scale = "/apis/apps/v1/namespaces/team/deployments/web/scale"
    assert found.path("team", "web", "scale") == scale
    assert found.path(None) == "/apis/apps/v1/deployments"
    _, sent = drive(ops.resolve("apps/v1", "deployments"), [])
    assert sent == []  # cached, by kind and by plural
    with_sets = {**APPS_V1, "resources": [*APPS_V1["resources"], {"name": "statefulsets",
                 "kind": "StatefulSet", "namespaced": True}]}  # fmt: skip
    found, sent = drive(ops.resolve("apps/v1", "StatefulSet"), [(200, with_sets)])
    assert (found.plural, len(sent)) == ("statefulsets", 1)  # a miss asked again
    with pytest.raises(ResourceNotFound):
        drive(ops.resolve("apps/v1", "Nope"), [(200, APPS_V1)])
    with pytest.raises(ResourceNotFound):
        drive(ops.resolve("example.com/v1", "Widget"), [(404, status(404, "NotFound"))])


def test_patch_and_watch_requests_carry_kubernetes_parameters() -> None:
    ops = Operations(namespace="team", field_manager="me")
    ops.discovery.load("apps/v1", APPS_V1)
    _, sent = drive(
        ops.patch("apps/v1", "Deployment", "web", {"spec": {}}, patch_type="apply", force=True),
        [(200, {})],
    )
    assert sent[0].method == "PATCH"
    assert sent[0].content_type == "application/apply-patch+yaml"
    assert sent[0].query == (("fieldManager", "me"), ("force", "true"))
    request, _ = drive(
        ops.watch_request(
            "apps/v1",
            "Deployment",
            "*",
            name="web",
            resource_version="",
            allow_bookmarks=True,
            send_initial_events=True,
        ),
        [],
    )
    assert request.target == (
        "/apis/apps/v1/deployments?watch=true&fieldSelector=metadata.name%3Dweb"
        "&resourceVersion=&allowWatchBookmarks=true&sendInitialEvents=true"
        "&resourceVersionMatch=NotOlderThan"
    )


def test_retry_after_is_honoured_up_to_ten_times() -> None:
    ops = Operations()
    ops.discovery.load("apps/v1", APPS_V1)
    busy = (429, status(429, "TooManyRequests", retryAfterSeconds=2))
    sleeps: list[float] = []
    result, sent = drive(ops.get("apps/v1", "Deployment", "web"), [busy, busy, (200, {"a": 1})],
                         sleeps)  # fmt: skip
    assert (result, len(sent), sleeps) == ({"a": 1}, 3, [2.0, 2.0])
    with pytest.raises(TooManyRequests):
        drive(ops.get("apps/v1", "Deployment", "web"), [busy] * 11)
    with pytest.raises(ServerError):  # a 500 without Retry-After is not retried
        drive(ops.get("apps/v1", "Deployment", "web"), [(500, status(500))])


def test_list_restarts_unpaged_when_its_continue_token_expires() -> None:
    ops = Operations()
    ops.discovery.load("apps/v1", APPS_V1)
    item = {"metadata": {"name": "a"}}
    pages = [
        (200, {"metadata": {"resourceVersion": "5", "continue": "t1"}, "items": [item]}),
        (410, status(410, "Expired")),
        (200, {"metadata": {"resourceVersion": "9"}, "items": [item, item]}),
    ]
    listing, sent = drive(ops.list("apps/v1", "Deployment", limit=1), pages)
    assert [r.query for r in sent] == [
        (("limit", "1"),),
        (("limit", "1"), ("continue", "t1")),
        (),
    ]
    assert listing["metadata"]["resourceVersion"] == "9"
    assert len(listing["items"]) == 2
    assert listing["items"][0]["kind"] == "Deployment"


# -- the informer's cache ---------------------------------------------------------------------


def cm(name: str, namespace: str, rv: str, team: str) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "resourceVersion": rv, "labels": {"team": team}}
    return {"metadata": meta}


def test_indexer_keeps_its_indexes_true_through_writes_and_relists() -> None:
    cache = Indexer(
        {"namespace": by_namespace, "team": lambda o: [o["metadata"]["labels"]["team"]]}
    )
    cache.upsert(cm("a", "x", "1", "red"))
    cache.upsert(cm("b", "x", "2", "blue"))
    cache.upsert(cm("a", "x", "3", "blue"))  # moves from red to blue
    assert [o["metadata"]["name"] for o in cache.by_index("team", "blue")] == ["a", "b"]
    assert cache.index_values("team") == ["blue"]
    added, updated, removed = cache.replace(
        {o["metadata"]["namespace"] + "/" + o["metadata"]["name"]: o
         for o in [cm("a", "x", "3", "blue"), cm("b", "x", "4", "red"), cm("c", "y", "5", "red")]}
    )  # fmt: skip
    assert [o["metadata"]["name"] for o in added] == ["c"]
    assert [(old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"])
            for old, new in updated] == [("2", "4")]  # fmt: skip
    assert removed == []
    assert cache.keys() == ["x/a", "x/b", "y/c"]
    _, _, removed = cache.replace({"y/c": cm("c", "y", "5", "red")})
    assert sorted(o["metadata"]["name"] for o in removed) == ["a", "b"]
    assert cache.index_values("namespace") == ["y"]
    assert cache.by_index("team", "blue") == []


# -- the work queue ---------------------------------------------------------------------------


async def test_work_queue_deduplicates_and_serialises_per_key() -> None:
    queue = WorkQueue()
    for key in ["a", "b", "a", "a"]:
        queue.add(key)
    assert len(queue) == 2
    first = await queue.get()
    assert first == "a"
    queue.add("a")  # changed again while being processed: not handed to another worker
    assert await queue.get() == "b"
    getter = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0.01)
    assert not getter.done()
    queue.done("a")  # now it may go again
    assert await asyncio.wait_for(getter, 1) == "a"


async def test_work_queue_shutdown_hands_out_queued_keys_then_stops_workers() -> None:
    queue = WorkQueue()
    queue.add("a")
    queue.add_after("later", 30)
    queue.shutdown()
    queue.add("b")  # ignored
    assert await queue.get() == "a"
    with pytest.raises(QueueShutDown):
        await queue.get()
    with pytest.raises(QueueShutDown):  # every worker is told, not only the first
        await queue.get()


async def test_add_after_keeps_the_earliest_time() -> None:
    queue = WorkQueue()
    queue.add_after("k", 30)
    queue.add_after("k", 0.01)
    queue.add_after("k", 60)
    assert await asyncio.wait_for(queue.get(), 2) == "k"


def test_exponential_backoff_doubles_per_key_until_forgotten() -> None:
    limiter = ExponentialBackoff(base=0.005, cap=0.1)
    assert [limiter.when("a") for _ in range(7)] == [0.005, 0.01, 0.02, 0.04, 0.08, 0.1, 0.1]
    assert limiter.when("b") == 0.005
    assert limiter.failures("a") == 7
    limiter.forget("a")
    assert limiter.when("a") == 0.005
    assert ExponentialBackoff().when("x") == 0.005  # client-go's default base
