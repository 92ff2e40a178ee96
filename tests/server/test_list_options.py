"""LIST options over HTTP, as kube-apiserver answers them (api-semantics.md §6):
remainingItemCount, the ListOptions 422s, a future resourceVersion's wait and 504, and the fresh
continue token in an expired token's 410."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import urllib.error
import urllib.request
from email.message import Message
from typing import Any

import pytest
from harness import ROOT_CA, Server

NS = "/api/v1/namespaces"
CM = NS + "/{ns}/configmaps"
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)

Obj = dict[str, Any]


def with_configmaps(server: Server, names: str) -> None:
    """The test's namespace holding one ConfigMap per letter of ``names``, and the root CA
    ConfigMap (``kube-root-ca.crt``, listed after ``e``) every namespace gets."""
    for name in names:
        assert server.request("POST", CM, {"metadata": {"name": name}})[0] == 201


def get(server: Server, path: str) -> tuple[int, Obj]:
    code, body = server.request("GET", path)
    return code, body


def page(server: Server, query: str) -> tuple[list[str], Obj]:
    code, body = get(server, f"{CM}?{query}")
    assert code == 200, body
    return [item["metadata"]["name"] for item in body["items"]], body["metadata"]


def token_fields(token: str) -> Obj:
    data: Obj = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return data


def get_with_headers(server: Server, path: str) -> tuple[int, Message, Obj]:
    req = urllib.request.Request(server.url + server.path(path))
    req.add_header("Authorization", f"Bearer {server.token}")
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    try:
        with urllib.request.urlopen(req, timeout=60, context=context) as resp:
            return resp.status, resp.headers, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, err.headers, json.loads(err.read())


# -- remainingItemCount -------------------------------------------------------------------


def test_paged_list_reports_the_remaining_item_count(server: Server) -> None:
    with_configmaps(server, "abcde")
    names, meta = page(server, "limit=2")
    assert (names, meta["remainingItemCount"]) == (["a", "b"], 4)
    names, meta = page(server, f"limit=2&continue={meta['continue']}")
    assert (names, meta["remainingItemCount"]) == (["c", "d"], 2)
    names, meta = page(server, f"limit=2&continue={meta['continue']}")
    assert names == ["e", ROOT_CA]
    assert list(meta) == ["resourceVersion"]  # the last page: no continue, no count


def test_selector_list_has_no_remaining_item_count(server: Server) -> None:
    with_configmaps(server, "abcde")
    for query in (
        "labelSelector=!missing",
        f"fieldSelector=metadata.namespace%3D{server.namespace}",
    ):
        names, meta = page(server, f"limit=2&{query}")
        assert names == ["a", "b"]
        assert "continue" in meta
        assert "remainingItemCount" not in meta


# -- ListOptions validation ---------------------------------------------------------------

HEAD = 'ListOptions.meta.k8s.io "" is invalid: '


def test_resource_version_match_without_resource_version_is_422(server: Server) -> None:
    code, body = get(server, f"{CM}?resourceVersionMatch=NotOlderThan")
    assert code == 422
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": HEAD + "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden "
        "unless resourceVersion is provided",
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


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
            'resourceVersion "0"',
        ),
        (
            "resourceVersion=1&resourceVersionMatch=exact",
            'resourceVersionMatch: Unsupported value: "exact": supported values: "Exact", '
            '"NotOlderThan", ""',
        ),
        (
            "resourceVersion=1&resourceVersionMatch=NotOlderThan&continue=abc",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue "
            "is provided",
        ),
    ],
    ids=["exact-at-0", "unsupported", "with-continue"],
)
def test_contradictory_list_options_are_422(server: Server, query: str, message: str) -> None:
    code, body = get(server, f"{CM}?{query}")
    assert (code, body["reason"], body["message"]) == (422, "Invalid", HEAD + message)


def test_delete_collection_validates_its_list_options(server: Server) -> None:
    with_configmaps(server, "a")
    code, body = server.request("DELETE", f"{CM}?resourceVersionMatch=Exact")
    assert (code, body["reason"]) == (422, "Invalid")
    assert get(server, f"{CM}/a")[0] == 200  # nothing was deleted


# -- a resourceVersion the server has not reached -----------------------------------------


def test_list_at_a_future_resource_version_waits_then_answers_504(server: Server) -> None:
    _, listing = get(server, CM)
    current = int(listing["metadata"]["resourceVersion"])
    future = current + 1_000_000  # never reached, even on an etcd other tests write to
    code, headers, body = get_with_headers(server, f"{CM}?resourceVersion={future}")
    assert code == 504
    assert headers["Retry-After"] == "1"
    assert body["message"].startswith(f"Timeout: Too large resource version: {future}, current: ")
    assert int(body["message"].rsplit(" ", 1)[1]) >= current
    assert (body["reason"], body["code"], body["details"]) == (
        "Timeout",
        504,
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def test_list_waits_for_a_resource_version_that_arrives(server: Server) -> None:
    with_configmaps(server, "a")
    _, listing = get(server, CM)
    target = int(listing["metadata"]["resourceVersion"]) + 1
    answers: list[tuple[int, Obj]] = []
    waiting = threading.Thread(
        target=lambda: answers.append(get(server, f"{CM}?resourceVersion={target}"))
    )
    waiting.start()
    try:
        assert server.request("POST", CM, {"metadata": {"name": "late"}})[0] == 201
    finally:
        waiting.join(60)
    [(code, body)] = answers
    assert code == 200
    assert int(body["metadata"]["resourceVersion"]) >= target  # not the older data at once


# -- expired continue tokens --------------------------------------------------------------


@pytest.mark.fresh_server  # it compacts the store
def test_expired_continue_token_gets_a_fresh_token_at_the_latest_revision(
    server: Server,
) -> None:
    with_configmaps(server, "abcde")
    _, meta = page(server, "limit=2")
    old = meta["continue"]
    _, changed = server.request(
        "PATCH", f"{CM}/c", {"data": {"v": "1"}}, "application/merge-patch+json"
    )
    latest = int(changed["metadata"]["resourceVersion"])
    code, _ = server.request("POST", f"/kubelite/v1/compact?revision={latest}")
    assert code == 200

    code, body = get(server, f"{CM}?limit=2&continue={old}")
    assert code == 410
    fresh = body["metadata"]["continue"]
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {"continue": fresh},
        "status": "Failure",
        "message": CONTINUE_EXPIRED,
        "reason": "Expired",
        "code": 410,
    }
    assert token_fields(fresh) == {**token_fields(old), "rv": -1}

    # The fresh token lists the rest from the same key at the latest revision...
    code, body = get(server, f"{CM}?limit=2&continue={fresh}")
    assert code == 200
    assert [(i["metadata"]["name"], i.get("data")) for i in body["items"]] == [
        ("c", {"v": "1"}),
        ("d", None),
    ]
    meta = body["metadata"]
    assert int(meta["resourceVersion"]) >= latest
    assert meta["remainingItemCount"] == 2
    # ...and pages on at the revision it was read at.
    assert token_fields(meta["continue"])["rv"] == int(meta["resourceVersion"])
    names, last = page(server, f"limit=2&continue={meta['continue']}")
    assert (names, last["resourceVersion"]) == (["e", ROOT_CA], meta["resourceVersion"])
