"""The REST surface over raw HTTP: auth, discovery, the verbs' status codes and Status texts."""

from __future__ import annotations

import json
import os
import ssl
import urllib.error
import urllib.request

import pytest
from harness import ROOT_CA, Server

CM = "/api/v1/namespaces/{ns}/configmaps"


def configmap(name: str, **data: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


# the shared server's /healthz fails its log check when no one asked for two minutes
@pytest.mark.fresh_server
def test_requests_without_a_token_are_anonymous_and_only_health_and_version_are_open(
    server: Server,
) -> None:
    code, body = server.request("GET", CM, token=None)
    assert code == 403
    assert body["kind"] == "Status"
    assert body["reason"] == "Forbidden"
    assert 'User "system:anonymous" cannot list resource "configmaps"' in str(body["message"])
    assert server.request("GET", CM, token="wrong")[0] == 401
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    for path in ("/healthz", "/livez", "/readyz"):
        with urllib.request.urlopen(server.url + path, context=context) as resp:
            assert resp.read() == b"ok"
    code, version = server.request("GET", "/version/", token=None)
    assert code == 200
    assert (version["major"], version["minor"]) == ("1", "37")  # the catalogue's Kubernetes
    assert str(version["gitVersion"]).startswith("v1.37.0+kubelite.")


def test_an_invalid_token_is_401_on_every_path(server: Server) -> None:
    """A bearer token is checked wherever it is sent, health and /version included; without one,
    RBAC lets the anonymous user reach only those public paths."""
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    for path in ("/healthz", "/livez", "/readyz", "/version", "/api", CM):
        request = urllib.request.Request(server.url + server.path(path))
        request.add_header("Authorization", "Bearer not-a-token")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, context=context)
        assert refused.value.code == 401, path
        body = json.loads(refused.value.read())
        assert (body["reason"], body["code"]) == ("Unauthorized", 401)
    assert server.request("GET", "/api", token=None)[0] == 403
    assert server.request("GET", "/version", token=None)[0] == 200
    assert server.request("GET", "/version", token="default")[0] == 200


def test_json_bodies_end_with_a_newline_as_kube_encodes_them(server: Server) -> None:
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    for path, expected in ((CM + "/missing", 404), (CM, 200), ("/version", 200)):
        request = urllib.request.Request(server.url + server.path(path))
        request.add_header("Authorization", f"Bearer {server.token}")
        try:
            with urllib.request.urlopen(request, context=context) as resp:
                code, raw = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            code, raw = err.code, err.read()
        assert code == expected, path
        assert raw.endswith(b"}\n"), (path, raw[-20:])
        assert not raw.endswith(b"\n\n"), (path, raw[-20:])


def test_token_file_is_private_and_kubeconfig_is_complete(server: Server) -> None:
    assert os.stat(server.data_dir / "token").st_mode & 0o777 == 0o600
    config = json.loads(server.kubeconfig.read_text())
    assert config["current-context"] == "kubelite"
    assert config["clusters"][0]["cluster"]["server"] == server.url
    assert config["users"][0]["user"]["token"] == server.token


def test_discovery_lists_core_and_groups_with_subresources(server: Server) -> None:
    code, api = server.request("GET", "/api/")
    assert (code, api["versions"]) == (200, ["v1"])
    _, core = server.request("GET", "/api/v1")
    names = {r["name"]: r for r in core["resources"]}  # type: ignore[union-attr, index]
    assert names["configmaps"]["namespaced"] is True
    assert "cm" in names["configmaps"]["shortNames"]
    assert names["namespaces"]["namespaced"] is False
    _, groups = server.request("GET", "/apis")
    group_names = {g["name"] for g in groups["groups"]}  # type: ignore[union-attr, index]
    assert {"apps", "batch", "rbac.authorization.k8s.io", "coordination.k8s.io"} <= group_names
    _, apps = server.request("GET", "/apis/apps/v1")
    entries = {r["name"]: r for r in apps["resources"]}  # type: ignore[union-attr, index]
    assert "deployments/status" in entries
    assert entries["deployments/scale"]["kind"] == "Scale"
    assert entries["deployments/scale"]["group"] == "autoscaling"


def test_create_get_update_delete_with_kube_texts(server: Server) -> None:
    code, created = server.request("POST", CM, configmap("a", k="1"))
    assert code == 201
    meta = created["metadata"]
    assert isinstance(meta, dict)
    assert meta["uid"]
    assert meta["creationTimestamp"]
    assert meta["resourceVersion"]
    assert "generation" not in meta

    code, body = server.request("POST", CM, configmap("a"))
    assert (code, body["reason"]) == (409, "AlreadyExists")
    assert body["message"] == 'configmaps "a" already exists'

    stale = {**created, "data": {"k": "2"}}
    code, updated = server.request("PUT", CM + "/a", stale)
    assert code == 200
    code, body = server.request("PUT", CM + "/a", {**created, "data": {"k": "3"}})
    assert (code, body["reason"]) == (409, "Conflict")
    assert body["message"] == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    # No-op update: same resourceVersion back, nothing written.
    code, again = server.request("PUT", CM + "/a", updated)
    assert code == 200
    assert again["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]  # type: ignore[index]

    code, gone = server.request("DELETE", CM + "/a")
    assert code == 200
    assert gone == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "a", "kind": "configmaps", "uid": meta["uid"]},
    }
    code, body = server.request("GET", CM + "/a")
    assert (code, body["message"]) == (404, 'configmaps "a" not found')


def test_bad_input_gets_a_status_and_changes_nothing(server: Server) -> None:
    assert server.request("POST", CM, raw=b'{"metadata": {"name": "x"')[0] == 400
    assert server.request("POST", CM, raw=b"[1, 2]")[0] == 400
    code, body = server.request("POST", CM, configmap("Bad_Name"))
    assert (code, body["reason"]) == (422, "Invalid")
    assert str(body["message"]).startswith('ConfigMap "Bad_Name" is invalid: metadata.name: ')
    code, body = server.request("POST", CM, raw=b'{"data": {"a": "' + b"x" * (4 << 20) + b'"}}')
    assert (code, body["reason"], body["message"]) == (
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",  # handlers/rest.go limitedReadBody
    )
    code, body = server.request("POST", "/api/v1/namespaces/nope/configmaps", configmap("a"))
    assert (code, body["message"]) == (404, 'namespaces "nope" not found')
    code, listing = server.request("GET", CM)
    assert code == 200
    assert [i["metadata"]["name"] for i in listing["items"]] == [ROOT_CA]  # type: ignore[union-attr, index]


def test_list_pages_with_continue_over_one_snapshot(server: Server) -> None:
    for i in range(5):
        server.request("POST", CM, configmap(f"cm{i}"))
    code, first = server.request("GET", CM + "?limit=2")
    assert code == 200
    token = first["metadata"]["continue"]  # type: ignore[index]
    server.request("POST", CM, configmap("cm9"))
    names = [i["metadata"]["name"] for i in first["items"]]  # type: ignore[union-attr, index]
    while token:
        _, page = server.request("GET", f"{CM}?limit=2&continue={token}")
        names += [i["metadata"]["name"] for i in page["items"]]  # type: ignore[union-attr, index]
        token = page["metadata"].get("continue")  # type: ignore[union-attr]
    assert names == [*(f"cm{i}" for i in range(5)), ROOT_CA]


def test_json_patch_failed_test_is_422(server: Server) -> None:
    server.request("POST", CM, configmap("p", k="1"))
    patch = [{"op": "test", "path": "/data/k", "value": "nope"}]
    code, body = server.request("PATCH", CM + "/p", patch, "application/json-patch+json")
    assert (code, body["reason"], body["details"]) == (422, "Invalid", {})
    patch = [{"op": "replace", "path": "/data/k", "value": "2"}]
    code, body = server.request("PATCH", CM + "/p", patch, "application/json-patch+json")
    assert (code, body["data"]) == (200, {"k": "2"})
    code, body = server.request(
        "PATCH", CM + "/p", {"data": {"j": "3"}}, "application/merge-patch+json"
    )
    assert (code, body["data"]) == (200, {"k": "2", "j": "3"})
    code, body = server.request("PATCH", CM + "/p", {"data": {}}, "text/plain")
    assert code == 415


def test_strict_field_validation_finds_repeated_keys(server: Server) -> None:
    raw = b'{"metadata": {"name": "dup"}, "data": {"a": "1", "a": "2"}}'
    code, body = server.request("POST", CM + "?fieldValidation=Strict", raw=raw)
    assert code == 400
    assert body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "data.a"'
    )
    code, _ = server.request(
        "POST", CM + "?fieldValidation=Strict", raw=raw.replace(b'"a": "2"', b'"b": "2"')
    )
    assert code == 201


def test_list_with_a_selector_never_returns_more_than_limit(server: Server) -> None:
    for i in range(6):
        labels = {"pick": "yes"} if i else {"pick": "no"}
        server.request("POST", CM, {"metadata": {"name": f"s{i}", "labels": labels}})
    names: list[str] = []
    token = ""
    while True:
        query = f"?labelSelector=pick%3Dyes&limit=2{'&continue=' + token if token else ''}"
        code, page = server.request("GET", CM + query)
        assert code == 200
        assert len(page["items"]) <= 2  # type: ignore[arg-type]
        names += [i["metadata"]["name"] for i in page["items"]]  # type: ignore[union-attr, index]
        token = page["metadata"].get("continue", "")  # type: ignore[union-attr]
        if not token:
            break
    assert names == ["s1", "s2", "s3", "s4", "s5"]


def test_a_list_longer_than_a_page_is_streamed_whole(server: Server) -> None:
    """Lists are read and sent 500 objects at a time; the client sees one ordinary List."""
    import concurrent.futures

    names = [f"bulk{i:04d}" for i in range(1100)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(
            pool.map(lambda n: server.request("POST", CM, {"metadata": {"name": n}})[0], names)
        )
    assert set(codes) == {201}
    code, listing = server.request("GET", CM)
    assert code == 200
    assert listing["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in listing["items"]] == [*names, ROOT_CA]  # type: ignore[union-attr, index]
    assert "continue" not in listing["metadata"]  # type: ignore[operator]
    last = max(int(i["metadata"]["resourceVersion"]) for i in listing["items"])  # type: ignore[union-attr, index]
    assert int(listing["metadata"]["resourceVersion"]) >= last  # type: ignore[index]
