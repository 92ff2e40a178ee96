"""The admission seam of the generic store: where plugins run (after defaults, before the kind's
prepare and validation; validating last), what they see (the stored object unchanged by the
write, the dry-run flag), and that every verb calls them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubelite.api.catalogue import Catalogue, ResourceInfo, load_builtin_catalogue
from kubelite.api.errors import APIError
from kubelite.api.kinds import BuiltinKinds, new_registry
from kubelite.api.machinery.admission import CREATE, DELETE, UPDATE, Attributes
from kubelite.api.machinery.registry import Registry
from kubelite.api.machinery.rest import Context, Creater, DeleteOptions, Warnings, WriteOptions
from kubelite.storage import Store

Obj = dict[str, Any]
MERGE = "application/merge-patch+json"


class Recorder:
    """A mutating and validating plugin: records what it sees (copies), and on UPDATE of a
    Deployment sets ``spec.paused`` as a mutating webhook might."""

    def __init__(self) -> None:
        self.admitted: list[tuple[str, Obj | None, bool]] = []
        self.validated: list[tuple[str, Obj | None, Obj | None]] = []
        self.refuse = ""

    async def admit(self, attrs: Attributes) -> None:
        self.admitted.append((attrs.operation, copy.deepcopy(attrs.obj), attrs.dry_run))
        if attrs.operation == UPDATE and attrs.info.kind == "Deployment" and attrs.obj:
            attrs.obj["spec"]["paused"] = True

    async def validate(self, attrs: Attributes) -> None:
        self.validated.append((attrs.operation, copy.deepcopy(attrs.obj), copy.deepcopy(attrs.old)))
        if attrs.name == self.refuse:
            raise APIError(403, "Forbidden", f"refused {attrs.name}")


@pytest.fixture(scope="module")
def catalogue() -> Catalogue:
    return load_builtin_catalogue()


@pytest.fixture
async def seam(store: Store, catalogue: Catalogue) -> tuple[Registry, Recorder]:
    registry = new_registry(store, catalogue)
    recorder = Recorder()
    registry.admission.mutating.append(recorder)
    registry.admission.validating.append(recorder)
    namespaces = catalogue.lookup("", "v1", "namespaces")
    assert namespaces is not None
    await registry.create(namespaces, None, {"metadata": {"name": "default"}})
    return registry, recorder


def info(catalogue: Catalogue, group: str, version: str, plural: str) -> ResourceInfo:
    found = catalogue.lookup(group, version, plural)
    assert found is not None
    return found


DEPLOYMENT = {
    "metadata": {"name": "d"},
    "spec": {
        "selector": {"matchLabels": {"a": "b"}},
        "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        },
    },
}


async def test_mutating_plugins_see_defaults_and_their_changes_count(
    seam: tuple[Registry, Recorder], catalogue: Catalogue
) -> None:
    registry, recorder = seam
    services = info(catalogue, "", "v1", "services")
    await registry.create(
        services, "default", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    )
    operation, seen, _ = recorder.admitted[-1]
    assert operation == CREATE
    assert seen is not None
    assert seen["spec"]["type"] == "ClusterIP"  # defaults come first, as at decode
    deployments = info(catalogue, "apps", "v1", "deployments")
    made = await registry.create(deployments, "default", DEPLOYMENT)
    assert made["metadata"]["generation"] == 1
    patched = await registry.patch(
        deployments, "default", "d", MERGE, {"metadata": {"labels": {"x": "y"}}}
    )
    # a label alone never moves generation; the plugin's spec change does: the strategy's
    # generation rule runs after mutating admission
    assert patched["spec"]["paused"] is True
    assert patched["metadata"]["generation"] == 2


async def test_validating_plugins_see_the_stored_object_unchanged(
    seam: tuple[Registry, Recorder], catalogue: Catalogue
) -> None:
    registry, recorder = seam
    deployments = info(catalogue, "apps", "v1", "deployments")
    await registry.create(deployments, "default", DEPLOYMENT)
    await registry.patch(
        deployments, "default", "d", MERGE, {"status": {"replicas": 1}}, subresource="status"
    )
    stored = await registry.get(deployments, "default", "d")
    await registry.patch(deployments, "default", "d", MERGE, {"spec": {"replicas": 3}})
    operation, new, old = recorder.validated[-1]
    assert operation == UPDATE
    assert old is not None
    assert new is not None
    assert old["status"] == stored["status"] == {"replicas": 1}
    assert new["spec"]["replicas"] == 3


def test_fields_kept_from_the_stored_object_are_copies(catalogue: Catalogue) -> None:
    """A strategy that keeps the stored status (or spec, on a status write) hands the new object
    a copy: steps after it may change the new object, never the stored one they compare with."""
    deployments = info(catalogue, "apps", "v1", "deployments")
    strategy = BuiltinKinds(catalogue).strategy("apps", "deployments")
    old: Obj = {"metadata": {}, "spec": {"replicas": 1}, "status": {"replicas": 1}}
    new: Obj = {"metadata": {}, "spec": {"replicas": 2}, "status": {"replicas": 9}}
    strategy.prepare_for_update(deployments, new, old)
    new["status"]["replicas"] = 5
    assert old["status"] == {"replicas": 1}
    status_new: Obj = {"metadata": {}, "spec": {"replicas": 2}, "status": {"replicas": 9}}
    strategy.status_strategy().prepare_for_update(deployments, status_new, old)
    status_new["spec"]["replicas"] = 5
    assert old["spec"] == {"replicas": 1}


async def test_delete_and_dry_run_go_through_admission(
    seam: tuple[Registry, Recorder], catalogue: Catalogue
) -> None:
    registry, recorder = seam
    configmaps = info(catalogue, "", "v1", "configmaps")
    await registry.create(configmaps, "default", {"metadata": {"name": "c"}}, dry_run=True)
    assert recorder.admitted[-1][2] is True  # the plugin is told it is a dry run
    await registry.create(configmaps, "default", {"metadata": {"name": "c"}})
    recorder.refuse = "c"
    with pytest.raises(APIError) as refused:
        await registry.delete(configmaps, "default", "c", DeleteOptions())
    assert refused.value.code == 403
    assert (await registry.get(configmaps, "default", "c"))["metadata"]["name"] == "c"
    recorder.refuse = ""
    await registry.delete(configmaps, "default", "c", DeleteOptions())
    assert recorder.admitted[-1][:2] == (DELETE, None)  # a DELETE's object is nil
    assert recorder.validated[-1][0] == DELETE
    assert recorder.validated[-1][2]["metadata"]["name"] == "c"  # type: ignore[index]


class Corrupter:
    """A mutating plugin that leaves managedFields it cannot have made sense of."""

    async def admit(self, attrs: Attributes) -> None:
        if attrs.obj is not None:  # in place, as plugins change objects
            attrs.obj["metadata"].setdefault("managedFields", []).append({"operation": "Bogus"})


async def test_managed_fields_broken_by_admission_are_restored_with_a_warning(
    store: Store, catalogue: Catalogue
) -> None:
    registry = new_registry(store, catalogue)
    namespaces = catalogue.lookup("", "v1", "namespaces")
    configmaps = catalogue.lookup("", "v1", "configmaps")
    assert namespaces is not None
    assert configmaps is not None
    await registry.create(namespaces, None, {"metadata": {"name": "default"}})
    registry.admission.mutating.append(Corrupter())
    warnings = Warnings()
    creater: Creater = registry.storage(configmaps)  # type: ignore[assignment]
    obj = await creater.create(
        Context("default"),
        {"metadata": {"name": "cm"}, "data": {"a": "1"}},
        WriteOptions(field_manager="me", warnings=warnings),
    )
    (entry,) = obj["metadata"]["managedFields"]
    assert (entry["manager"], entry["fieldsV1"]) == ("me", {"f:data": {".": {}, "f:a": {}}})
    (text,) = warnings.texts
    assert text.startswith(
        ".metadata.managedFields was in an invalid state after admission; this could be caused "
        "by an outdated mutating admission controller; please fix your requests: "
    )
