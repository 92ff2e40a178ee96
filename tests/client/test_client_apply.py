"""``apply()``, server-side apply through Client and AsyncClient, against a real ``kubelite
serve`` over HTTPS and against the same server app in process: create and update, fields shared
by two managers, conflicts (``Conflict`` with the server's causes), ``force``, ``dry_run``, the
status subresource, and the field manager the client insists on."""

from __future__ import annotations

from typing import Any

import pytest

from kubelite.client import AsyncClient, Client, Conflict, NotFound, resource_version


def configmap(name: str, namespace: str | None = None, **data: str) -> dict[str, Any]:
    """An apply configuration: only the fields the caller has an opinion on."""
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def owned(obj: dict[str, Any]) -> dict[str, list[str]]:
    """manager -> the ``data`` keys it owns, from ``metadata.managedFields``."""
    return {
        entry["manager"]: sorted(f[2:] for f in entry["fieldsV1"].get("f:data", {}) if f != ".")
        for entry in obj["metadata"].get("managedFields", [])
    }


def conflict_with(manager: str, *keys: str) -> list[dict[str, str]]:
    message = f'conflict with "{manager}"'
    return [
        {"reason": "FieldManagerConflict", "message": message, "field": f".data.{key}"}
        for key in keys
    ]


async def test_async_apply_creates_then_updates(aclient: AsyncClient) -> None:
    created = await aclient.apply(configmap("a", k1="1", k2="2"), field_manager="alice")
    assert created["metadata"]["uid"]
    assert resource_version(created)
    assert created["metadata"]["namespace"] == "default"  # the client's default namespace
    assert created["data"] == {"k1": "1", "k2": "2"}
    [entry] = created["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"]) == ("alice", "Apply")
    assert owned(created) == {"alice": ["k1", "k2"]}
    assert (await aclient.get("v1", "ConfigMap", "a"))["data"] == created["data"]

    updated = await aclient.apply(configmap("a", k1="10", k3="3"), field_manager="alice")
    assert updated["data"] == {"k1": "10", "k3": "3"}  # k2, no longer applied, is removed
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(resource_version(updated)) > int(resource_version(created))
    assert owned(updated) == {"alice": ["k1", "k3"]}

    again = await aclient.apply(configmap("a", k1="10", k3="3"), field_manager="alice")
    assert resource_version(again) == resource_version(updated)  # nothing to change: no write

    elsewhere = await aclient.apply(configmap("a", "kube-public", k="v"), field_manager="alice")
    assert elsewhere["metadata"]["namespace"] == "kube-public"  # metadata.namespace wins
    assert (await aclient.get("v1", "ConfigMap", "a"))["data"] == {"k1": "10", "k3": "3"}


async def test_async_two_managers_share_an_object(aclient: AsyncClient) -> None:
    await aclient.apply(configmap("shared", k1="1", k2="2"), field_manager="alice")
    # bob sets k2 to the value it has: no conflict, the two own it together
    shared = await aclient.apply(configmap("shared", k2="2", k3="3"), field_manager="bob")
    assert shared["data"] == {"k1": "1", "k2": "2", "k3": "3"}
    assert owned(shared) == {"alice": ["k1", "k2"], "bob": ["k2", "k3"]}

    # alice stops applying k2: bob still owns it, so it stays; and bob's k3 was never hers
    after = await aclient.apply(configmap("shared", k1="1"), field_manager="alice")
    assert after["data"] == {"k1": "1", "k2": "2", "k3": "3"}
    assert owned(after) == {"alice": ["k1"], "bob": ["k2", "k3"]}


async def test_async_conflict_raises_with_causes_and_force_takes_over(aclient: AsyncClient) -> None:
    await aclient.apply(configmap("c", k1="1", k2="2"), field_manager="alice")
    with pytest.raises(Conflict) as caught:
        await aclient.apply(configmap("c", k2="x", k3="3"), field_manager="bob")
    assert (caught.value.code, caught.value.reason) == (409, "Conflict")
    assert caught.value.causes == conflict_with("alice", "k2")
    assert 'conflict with "alice": .data.k2' in str(caught.value)
    with pytest.raises(Conflict):
        await aclient.apply(configmap("c", k2="x"), field_manager="bob", force=False)
    assert (await aclient.get("v1", "ConfigMap", "c"))["data"] == {"k1": "1", "k2": "2"}

    forced = await aclient.apply(configmap("c", k2="x", k3="3"), field_manager="bob", force=True)
    assert forced["data"] == {"k1": "1", "k2": "x", "k3": "3"}
    assert owned(forced) == {"alice": ["k1"], "bob": ["k2", "k3"]}
    with pytest.raises(Conflict) as caught:  # now alice is the one who would overwrite
        await aclient.apply(configmap("c", k1="1", k2="2"), field_manager="alice")
    assert caught.value.causes == conflict_with("bob", "k2")


async def test_async_conflict_with_an_ordinary_writer(aclient: AsyncClient) -> None:
    """A PUT or PATCH takes ownership of the fields it changes (operation Update); applying
    another value to them then conflicts with that writer."""
    await aclient.apply(configmap("u", k1="1", k2="2"), field_manager="alice")
    patched = await aclient.patch(
        "v1", "ConfigMap", "u", {"data": {"k1": "edited", "k2": "edited"}}, field_manager="editor"
    )
    assert owned(patched) == {"editor": ["k1", "k2"]}
    with pytest.raises(Conflict) as caught:
        await aclient.apply(configmap("u", k1="1", k2="2"), field_manager="alice")
    assert [(c["field"], c["message"]) for c in caught.value.causes] == [
        (".data.k1", 'conflict with "editor" using v1'),
        (".data.k2", 'conflict with "editor" using v1'),
    ]


async def test_async_dry_run_stores_nothing(aclient: AsyncClient) -> None:
    preview = await aclient.apply(configmap("d", k="v"), field_manager="alice", dry_run=True)
    assert preview["data"] == {"k": "v"}
    assert owned(preview) == {"alice": ["k"]}
    with pytest.raises(NotFound):
        await aclient.get("v1", "ConfigMap", "d")

    stored = await aclient.apply(configmap("d", k="v"), field_manager="alice")
    with pytest.raises(Conflict):  # a dry run reports conflicts as the real apply would
        await aclient.apply(configmap("d", k="w"), field_manager="bob", dry_run=True)
    preview = await aclient.apply(
        configmap("d", k="w"), field_manager="bob", force=True, dry_run=True
    )
    assert preview["data"] == {"k": "w"}
    assert owned(preview) == {"bob": ["k"]}
    assert await aclient.get("v1", "ConfigMap", "d") == stored


async def test_async_apply_to_the_status_subresource(aclient: AsyncClient) -> None:
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }
    await aclient.apply(deployment, field_manager="deployer")
    status = {"observedGeneration": 1, "replicas": 2}
    only_status = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
    applied = await aclient.apply(
        only_status | {"status": status}, field_manager="rollout", subresource="status"
    )
    assert applied["status"] == status
    assert applied["spec"]["replicas"] == 2
    assert {(e["manager"], e.get("subresource")) for e in applied["metadata"]["managedFields"]} == {
        ("deployer", None),
        ("rollout", "status"),
    }


async def test_async_apply_needs_a_field_manager(aclient: AsyncClient) -> None:
    with pytest.raises(ValueError, match="field_manager"):
        await aclient.apply(configmap("f", k="v"), field_manager="")
    with pytest.raises(TypeError):
        await aclient.apply(configmap("f", k="v"))  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"metadata\.name"):
        await aclient.apply({"apiVersion": "v1", "kind": "ConfigMap"}, field_manager="alice")
    with pytest.raises(NotFound):  # nothing was sent
        await aclient.get("v1", "ConfigMap", "f")


def test_sync_apply(client: Client) -> None:
    with pytest.raises(ValueError, match="field_manager"):
        client.apply(configmap("s", k1="1"), field_manager="")

    created = client.apply(configmap("s", k1="1", k2="2"), field_manager="alice")
    assert created["metadata"]["uid"]
    assert created["metadata"]["namespace"] == "default"
    assert owned(created) == {"alice": ["k1", "k2"]}
    updated = client.apply(configmap("s", k1="1", k2="20"), field_manager="alice")
    assert updated["data"] == {"k1": "1", "k2": "20"}
    assert int(resource_version(updated)) > int(resource_version(created))

    shared = client.apply(configmap("s", k1="1", k3="3"), field_manager="bob")
    assert owned(shared) == {"alice": ["k1", "k2"], "bob": ["k1", "k3"]}
    with pytest.raises(Conflict) as caught:
        client.apply(configmap("s", k2="x"), field_manager="bob")
    assert caught.value.causes == conflict_with("alice", "k2")

    preview = client.apply(configmap("s", k2="x"), field_manager="bob", force=True, dry_run=True)
    assert preview["data"]["k2"] == "x"
    assert client.get("v1", "ConfigMap", "s")["data"]["k2"] == "20"

    forced = client.apply(configmap("s", k1="1", k2="x", k3="3"), field_manager="bob", force=True)
    assert forced["data"] == {"k1": "1", "k2": "x", "k3": "3"}
    assert owned(forced) == {"alice": ["k1"], "bob": ["k1", "k2", "k3"]}
