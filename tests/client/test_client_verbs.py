"""Every verb of Client and AsyncClient, each run against a real server over HTTPS
and against the same server app through the in-process ASGI transport."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from client_harness import NOT_ROOT_CA

from kubelite.client import (
    ALL_NAMESPACES,
    AlreadyExists,
    AsyncClient,
    Client,
    Conflict,
    Expired,
    Invalid,
    NotFound,
    Ref,
    ResourceNotFound,
    name_of,
    resource_version,
)


def configmap(name: str, namespace: str | None = None, **data: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": {"app": "demo"}}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web-server"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
        },
    },
}


async def test_async_crud_roundtrip(aclient: AsyncClient) -> None:
    created = await aclient.create(configmap("a", x="1"))
    assert created["metadata"]["namespace"] == "default"
    assert resource_version(created)
    got = await aclient.get("v1", "ConfigMap", "a")
    assert got["data"] == {"x": "1"}
    assert resource_version(got) == resource_version(created)

    got["data"]["x"] = "2"
    updated = await aclient.update(got)
    assert updated["data"] == {"x": "2"}
    assert int(resource_version(updated)) > int(resource_version(created))

    with pytest.raises(Conflict) as conflict:
        await aclient.update(got)  # the resourceVersion it carries is stale now
    assert conflict.value.code == 409
    assert conflict.value.status["reason"] == "Conflict"
    assert "the object has been modified" in conflict.value.message

    with pytest.raises(AlreadyExists):
        await aclient.create(configmap("a"))

    deleted = await aclient.delete("v1", "ConfigMap", "a")
    assert deleted["kind"] == "Status"
    with pytest.raises(NotFound) as missing:
        await aclient.get("v1", "ConfigMap", "a")
    assert missing.value.status["details"]["name"] == "a"


async def test_async_patch_types(aclient: AsyncClient) -> None:
    await aclient.create(DEPLOYMENT)
    merged = await aclient.patch(
        "apps/v1", "Deployment", "web-server", {"spec": {"replicas": 3}}, patch_type="merge"
    )
    assert merged["spec"]["replicas"] == 3
    patched = await aclient.patch(
        "apps/v1",
        "Deployment",
        "web-server",
        [{"op": "replace", "path": "/spec/replicas", "value": 4}],
        patch_type="json",
    )
    assert patched["spec"]["replicas"] == 4
    strategic = await aclient.patch(
        "apps/v1",
        "Deployment",
        "web-server",
        {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}},
        patch_type="strategic",
    )
    containers = strategic["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("web", "nginx:2")]
    with pytest.raises(Invalid):  # a failed JSON Patch test is a 422 Invalid
        await aclient.patch(
            "apps/v1",
            "Deployment",
            "web-server",
            [{"op": "test", "path": "/spec/replicas", "value": 99}],
            patch_type="json",
        )
    with pytest.raises(ValueError, match="patch_type"):
        await aclient.patch("apps/v1", "Deployment", "web-server", {}, patch_type="yaml")


async def test_async_strategic_patch_on_scale_subresource(aclient: AsyncClient) -> None:
    await aclient.create(DEPLOYMENT)
    scale = await aclient.patch(
        "apps/v1", "Deployment", "web-server", {"spec": {"replicas": 5}}, subresource="scale"
    )
    assert scale["kind"] == "Scale"
    assert (await aclient.get("apps/v1", "Deployment", "web-server"))["spec"]["replicas"] == 5


async def test_async_list_pages_through_one_snapshot(aclient: AsyncClient) -> None:
    await asyncio.gather(*(aclient.create(configmap(f"cm-{i:02}", n=str(i))) for i in range(23)))
    await aclient.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    await aclient.create(configmap("elsewhere", "other"))
    listing = await aclient.list("v1", "ConfigMap", limit=5)
    names = sorted(name_of(item) for item in listing["items"])
    assert names[:23] == [f"cm-{i:02}" for i in range(23)]
    assert "elsewhere" not in names
    assert listing["kind"] == "ConfigMapList"
    assert all(item["kind"] == "ConfigMap" for item in listing["items"])
    assert int(listing["metadata"]["resourceVersion"]) >= max(
        int(resource_version(item)) for item in listing["items"]
    )
    everywhere = await aclient.list("v1", "ConfigMap", ALL_NAMESPACES, limit=7)
    assert "elsewhere" in {name_of(item) for item in everywhere["items"]}
    selected = await aclient.list("v1", "ConfigMap", field_selector="metadata.name=cm-07")
    assert [name_of(item) for item in selected["items"]] == ["cm-07"]
    labelled = await aclient.list("v1", "ConfigMap", "other", label_selector="app=demo")
    assert [name_of(item) for item in labelled["items"]] == ["elsewhere"]


async def test_async_watch_from_a_resource_version(aclient: AsyncClient) -> None:
    first = await aclient.create(configmap("w", x="1"))
    events = aclient.watch("v1", "ConfigMap", resource_version=resource_version(first))
    seen: list[tuple[str, str]] = []

    async def write() -> None:
        await aclient.update(Ref("v1", "ConfigMap", "w"), lambda cm: cm["data"].update(x="2"))
        await aclient.delete("v1", "ConfigMap", "w")

    async with events:
        writer = asyncio.ensure_future(write())
        async for event in events:
            seen.append((event.type, event.object["data"]["x"]))
            if event.type == "DELETED":
                break
        await writer
    assert seen == [("MODIFIED", "2"), ("DELETED", "2")]


async def test_async_watch_of_a_compacted_revision_raises_expired(aclient: AsyncClient) -> None:
    first = await aclient.create(configmap("old"))
    for value in ("1", "2"):  # the watch from `first` needs the first of these
        latest = await aclient.update(
            Ref("v1", "ConfigMap", "old"), lambda cm, v=value: cm.update(data={"v": v})
        )
    await aclient.request("POST", "/kubelite/v1/compact", [("revision", resource_version(latest))])
    with pytest.raises(Expired) as expired:
        async for _ in aclient.watch("v1", "ConfigMap", resource_version=resource_version(first)):
            pass
    assert expired.value.code == 410


async def test_async_unknown_kind_is_a_clear_error(aclient: AsyncClient) -> None:
    with pytest.raises(ResourceNotFound, match="Widget"):
        await aclient.get("v1", "Widget", "x")
    with pytest.raises(ResourceNotFound, match=r"example\.com/v1"):
        await aclient.get("example.com/v1", "Widget", "x")


async def test_async_resource_lookup_by_kind_and_plural(aclient: AsyncClient) -> None:
    by_kind = await aclient.resource("apps/v1", "Deployment")
    assert by_kind == await aclient.resource("apps/v1", "deployments")
    assert by_kind.namespaced
    assert "scale" in by_kind.subresources
    assert not (await aclient.resource("v1", "Namespace")).namespaced


def test_sync_verbs(client: Client) -> None:
    created = client.create(configmap("s", x="1"))
    assert client.get("v1", "ConfigMap", "s")["data"] == {"x": "1"}
    stale = dict(created)
    after = client.update(Ref("v1", "ConfigMap", "s"), lambda cm: cm["data"].update(x="2"))
    assert after["data"] == {"x": "2"}
    with pytest.raises(Conflict):
        client.update(stale | {"data": {"x": "3"}})
    merged = client.patch("v1", "ConfigMap", "s", {"data": {"y": "1"}})
    assert merged["data"] == {"x": "2", "y": "1"}
    listed = client.list("v1", "ConfigMap", limit=1, field_selector=NOT_ROOT_CA)
    assert [name_of(i) for i in listed["items"]] == ["s"]
    with client.watch("v1", "ConfigMap", resource_version=resource_version(merged)) as events:
        client.delete("v1", "ConfigMap", "s")
        event = next(iter(events))
    assert (event.type, name_of(event.object)) == ("DELETED", "s")
    with pytest.raises(NotFound):
        client.delete("v1", "ConfigMap", "s")


WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
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
                                "properties": {"size": {"type": "integer", "minimum": 1}},
                            }
                        },
                    }
                },
            }
        ],
    },
}


async def test_async_custom_resources_are_served_once_their_crd_is(aclient: AsyncClient) -> None:
    """Over HTTPS and in process alike (both servers come from one assembly function): a CRD
    written through the client is established and its kind served at once."""
    crd = await aclient.create(WIDGET_CRD)
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions["Established"] == "True"
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    created = await aclient.create({**widget, "spec": {"size": 3}})
    assert created["metadata"]["generation"] == 1
    with pytest.raises(Invalid):
        await aclient.create({**widget, "metadata": {"name": "tiny"}, "spec": {"size": 0}})
    got = await aclient.get("example.com/v1", "Widget", "w")
    assert got["spec"] == {"size": 3}
