"""``/openapi/v3`` over HTTP as kube-openapi's handler3 serves it: the root's hashed URLs, the
ETag, immutable caching with a current hash, a 301 from a stale hash, 304, 404 and 406."""

from __future__ import annotations

import http.client
import json
import ssl
import time
import urllib.parse
from typing import Any

from harness import Server

WIDGETS = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }
        ],
    },
}


def get(
    server: Server, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """One request, redirects not followed."""
    url = urllib.parse.urlsplit(server.url)
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    conn = http.client.HTTPSConnection(url.hostname or "", url.port, context=context, timeout=30)
    try:
        conn.request(
            method, path, headers={"Authorization": f"Bearer {server.token}", **(headers or {})}
        )
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def root_url(server: Server, key: str) -> str:
    status, _, body = get(server, "/openapi/v3")
    assert status == 200
    paths: dict[str, Any] = json.loads(body)["paths"]
    return str(paths[key]["serverRelativeURL"])


def test_a_current_hash_is_cached_immutably(server: Server) -> None:
    url = root_url(server, "apis/apps/v1")
    digest = url.split("hash=")[1]
    status, headers, body = get(server, url)
    assert status == 200
    assert headers["etag"] == f'"{digest}"'
    assert headers["content-type"] == "application/json"
    assert headers["cache-control"] == "public, immutable"
    assert headers["vary"] == "Accept"
    assert "expires" in headers
    assert "last-modified" in headers
    document = json.loads(body)
    assert document["openapi"] == "3.0.0"
    assert "io.k8s.api.apps.v1.Deployment" in document["components"]["schemas"]
    # without a hash: the same document and ETag, not marked immutable
    status, headers, again = get(server, "/openapi/v3/apis/apps/v1")
    assert (status, again) == (200, body)
    assert headers["etag"] == f'"{digest}"'
    assert "cache-control" not in headers
    status, headers, body = get(server, url, {"If-None-Match": f'"{digest}"'})
    assert (status, body) == (304, b"")
    status, _, body = get(server, url, method="HEAD")
    assert (status, body) == (200, b"")


def test_a_stale_hash_redirects_to_the_current_one(server: Server) -> None:
    stale = root_url(server, "apis/apiextensions.k8s.io/v1").replace("hash=", "hash=0")
    status, headers, body = get(server, stale)
    assert status == 301
    current = root_url(server, "apis/apiextensions.k8s.io/v1")
    assert headers["location"] == current
    assert body == f'<a href="{current}">Moved Permanently</a>.\n\n'.encode()
    # a CRD adds a group-version; its hash follows the CRD's schema
    status, created = server.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGETS
    )
    assert status == 201, created
    deadline = time.monotonic() + 30
    while True:
        status, _, body = get(server, "/openapi/v3")
        if "apis/example.com/v1" in json.loads(body)["paths"]:
            break
        assert time.monotonic() < deadline, "the CRD's group-version was never listed"
        time.sleep(0.05)
    url = root_url(server, "apis/example.com/v1")
    status, headers, body = get(server, url)
    assert status == 200
    assert "com.example.v1.Widget" in json.loads(body)["components"]["schemas"]


def test_unknown_group_versions_and_unacceptable_types(server: Server) -> None:
    status, headers, body = get(server, "/openapi/v3/apis/nope.example.com/v1")
    assert (status, body) == (404, b"")
    status, _, body = get(
        server,
        "/openapi/v3/api/v1",
        {"Accept": "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"},
    )
    assert (status, body) == (406, b"")
    status, headers, _ = get(
        server, "/openapi/v3/api/v1", {"Accept": "application/json;q=0.9, */*;q=0.1"}
    )
    assert status == 200
    assert headers["content-type"] == "application/json"
