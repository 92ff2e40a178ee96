"""Objects whose free-form part is nested deep: kube-apiserver reads JSON nested up to 10000
levels (encoding/json's scanner) and keeps a RawExtension's or a preserve-unknown-fields value as
it was sent, so such an object is created, read, listed, watched, updated and patched like any
other; one level deeper is 400. Never a 500, and the server stays up."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from harness import Server

CR = "/apis/apps/v1/namespaces/{ns}/controllerrevisions"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
BLOBS = "/apis/example.org/v1/namespaces/{ns}/blobs"
#: a body 10,000 levels deep takes the server seconds to decode, validate and store, and many
#: times that on two cores shared with three other test workers: each answer may take this long,
#: each test five times that
DEEP_SECONDS = 120.0
pytestmark = pytest.mark.timeout(5 * DEEP_SECONDS)


def deep(server: Server, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
    return server.request(method, path, *args, timeout=DEEP_SECONDS, **kwargs)


@pytest.fixture(autouse=True)
def deep_client() -> Iterator[None]:
    """The test's own JSON reading (the standard library's) of the server's deep answers."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(40000)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def nested(levels: int) -> bytes:
    """``levels`` objects nested in one another, innermost ``{"a":1}``."""
    return b'{"a":' * (levels - 1) + b'{"a":1' + b"}" * levels


def depth_of(value: Any) -> int:
    """How many objects are nested in ``value`` along its "a" keys (no recursion)."""
    levels = 0
    while isinstance(value, dict):
        levels, value = levels + 1, value.get("a")
    return levels


def revision(name: str, levels: int, number: int = 1) -> bytes:
    """A ControllerRevision whose ``data`` holds ``levels`` nested objects: the body is nested
    ``levels + 1`` deep."""
    head = b'{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"%s"},' % (
        name.encode()
    )
    return head + b'"revision":%d,"data":' % number + nested(levels) + b"}"


@pytest.mark.parametrize("levels", [300, 1000, 9990])
def test_a_deep_raw_extension_is_served_like_any_object(server: Server, levels: int) -> None:
    name = f"deep-{levels}"
    code, made = deep(server, "POST", CR, raw=revision(name, levels))
    assert code == 201, made
    assert depth_of(made["data"]) == levels
    assert made["metadata"]["managedFields"][0]["manager"]
    code, got = deep(server, "GET", f"{CR}/{name}")
    assert code == 200, got
    assert depth_of(got["data"]) == levels
    code, listed = deep(server, "GET", CR)
    assert code == 200, listed
    [item] = listed["items"]
    assert depth_of(item["data"]) == levels
    code, updated = deep(server, "PUT", f"{CR}/{name}", raw=revision(name, levels, 2))
    assert code == 200, updated
    assert updated["revision"] == 2
    code, patched = deep(
        server,
        "PATCH",
        f"{CR}/{name}",
        {"metadata": {"labels": {"x": "y"}}, "data": {"b": 2}},
        content_type="application/merge-patch+json",
    )
    assert code == 200, patched
    assert patched["metadata"]["labels"] == {"x": "y"}
    assert patched["data"]["b"] == 2
    assert depth_of(patched["data"]) == levels
    since = made["metadata"]["resourceVersion"]
    reader, events = server.watch_lines(f"{CR}?watch=1&resourceVersion={since}", 1)
    reader.join()
    assert [event["type"] for event in events] == ["MODIFIED", "MODIFIED"]
    assert depth_of(events[-1]["object"]["data"]) == levels
    code, _ = deep(server, "DELETE", f"{CR}/{name}")
    assert code == 200


def test_nesting_past_10000_is_400_and_the_limit_is_read(server: Server) -> None:
    code, made = deep(server, "POST", CR, raw=revision("limit", 9999))  # 10000 levels in all
    assert code == 201, made
    assert depth_of(made["data"]) == 9999
    code, status = deep(server, "POST", CR, raw=revision("over", 10000))
    assert (code, status["reason"], status["message"]) == (
        400,
        "BadRequest",
        "the object provided is unrecognized (must be of type ControllerRevision): couldn't get "
        "version/kind; json parse error: invalid character '{' exceeded max depth "
        '({"apiVersion":"apps/v1","kind" ...)',
    )
    code, _ = deep(server, "GET", f"{CR}/over")
    assert code == 404
    code, _ = deep(server, "GET", f"{CR}/limit")  # still up
    assert code == 200


def test_a_deep_preserved_custom_field_is_served(server: Server) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.example.org"},
        "spec": {
            "group": "example.org",
            "scope": "Namespaced",
            "names": {"plural": "blobs", "kind": "Blob"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    code, created = deep(server, "POST", CRDS, crd)
    assert code == 201, created
    for levels in (300, 1000, 9990):
        name = f"b{levels}"
        body = (
            b'{"apiVersion":"example.org/v1","kind":"Blob","metadata":{"name":"%s"},"spec":'
            % name.encode()
            + nested(levels)
            + b"}"
        )
        code, made = deep(server, "POST", BLOBS, raw=body)
        assert code == 201, made
        assert depth_of(made["spec"]) == levels
        code, patched = deep(
            server,
            "PATCH",
            f"{BLOBS}/{name}",
            {"spec": {"b": 1}},
            content_type="application/merge-patch+json",
        )
        assert code == 200, patched
        assert (patched["spec"]["b"], depth_of(patched["spec"])) == (1, levels)
    code, listed = deep(server, "GET", BLOBS)
    assert code == 200, listed
    assert sorted(depth_of(item["spec"]) for item in listed["items"]) == [300, 1000, 9990]
    code, status = deep(
        server,
        "POST",
        BLOBS,
        raw=b'{"apiVersion":"example.org/v1","kind":"Blob","metadata":{"name":"x"},"spec":'
        + nested(10000)
        + b"}",
    )
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"].startswith(
        "the object provided is unrecognized (must be of type Blob): couldn't get version/kind; "
        "json parse error: invalid character '{' exceeded max depth"
    )


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"NaN", "unexpected character, expected a JSON value"),
        (b"-Infinity", "unexpected character, expected a JSON value"),
        (b"1e400", "number is infinity when parsed as double"),
        (b'"\\ud800"', "no low surrogate in string"),
    ],
)
def test_what_json_refuses_is_400_at_any_depth(server: Server, value: bytes, reason: str) -> None:
    """A deep body is read by another parser than a shallow one: it refuses the same things."""
    body = revision("odd", 1500)[:-1] + b',"odd":' + value + b"}"
    status, answer = deep(server, "POST", CR, raw=body)
    assert status == 400, answer
    assert str(answer["message"]).startswith("couldn't decode the request body as JSON: ")
    assert reason in str(answer["message"])
    shallow = revision("odd", 3)[:-1] + b',"odd":' + value + b"}"
    status, answer = deep(server, "POST", CR, raw=shallow)
    assert status == 400, answer
    status, _ = deep(server, "GET", f"{CR}/odd")
    assert status == 404
