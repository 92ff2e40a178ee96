"""Server-side apply through real clients (apimachinery ``pkg/util/managedfields``):
kubectl's ``apply --server-side`` (conflicts, ``--force-conflicts``, ``diff``, dry-run, the status
subresource), kubectl's client-side to server-side apply upgrade, lightkube's ``Client.apply``,
the official client's dynamic ``server_side_apply`` and generated ``patch_*`` methods, a CRD's
list and map types, and concurrent appliers."""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import Server
from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException
from kubernetes.dynamic.exceptions import ConflictError
from lightkube import Client, KubeConfig
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_namespaced_resource
from lightkube.models.apps_v1 import DeploymentSpec
from lightkube.models.core_v1 import Container, PodSpec, PodTemplateSpec
from lightkube.models.meta_v1 import LabelSelector, ObjectMeta
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap

APPLY = "application/apply-patch+yaml"
CM = "/api/v1/namespaces/{ns}/configmaps"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
THINGS = "/apis/ssa.example.com/v1/namespaces/{ns}/things"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
KUBECTL_HINT = (
    "Please review the fields above--they currently have other managers. Here\n"
    "are the ways you can resolve this warning:\n"
    "* If you intend to manage all of these fields, please re-run the apply\n"
    "  command with the `--force-conflicts` flag."
)


# --- helpers ---------------------------------------------------------------------------------


def cm_manifest(name: str, data: dict[str, str], labels: dict[str, str] | None = None) -> str:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    # JSON, which kubectl reads as YAML; PyYAML would leave keys such as y unquoted, which
    # kubectl's YAML 1.1 parser reads as booleans
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})


def cm(name: str, **body: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **body}


def live(server: Server, resource: str, name: str) -> dict[str, Any]:
    """The object as kubectl gets it, managedFields included."""
    out = server.kubectl("get", resource, name, "-o", "json", "--show-managed-fields").stdout
    got: dict[str, Any] = json.loads(out)
    return got


def owners(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """fieldsV1 by ``manager/operation`` (``/subresource`` appended when there is one)."""
    out = {}
    for entry in obj["metadata"].get("managedFields") or []:
        key = f"{entry['manager']}/{entry['operation']}"
        if entry.get("subresource"):
            key += "/" + entry["subresource"]
        out[key] = entry["fieldsV1"]
    return out


def apply(
    server: Server, path: str, body: dict[str, Any], manager: str, **query: str
) -> tuple[int, dict[str, Any]]:
    suffix = "&".join(f"{k}={v}" for k, v in {"fieldManager": manager, **query}.items())
    code, got = server.request(
        "PATCH", f"{path}?{suffix}", raw=json.dumps(body).encode(), content_type=APPLY
    )
    return code, got  # type: ignore[return-value]


# --- kubectl apply --server-side ---------------------------------------------------------------


def ssa(
    server: Server, manifest: str, *flags: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``kubectl apply --server-side [flags] -f -`` of ``manifest``."""
    return server.kubectl("apply", "--server-side", *flags, "-f", "-", input=manifest, check=check)


def ssa_diff(
    server: Server, manifest: str, *flags: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``kubectl diff --server-side [flags] -f -`` of ``manifest``."""
    return server.kubectl("diff", "--server-side", *flags, "-f", "-", input=manifest, check=check)


def test_kubectl_server_side_apply_creates_updates_and_records_kubectl(server: Server) -> None:
    out = ssa(server, cm_manifest("cm1", {"x": "1"}))
    assert out.stdout == "configmap/cm1 serverside-applied\n"
    created = live(server, "cm", "cm1")
    (entry,) = created["metadata"]["managedFields"]
    assert {k: v for k, v in entry.items() if k != "time"} == {
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:x": {}}},
        "manager": "kubectl",
        "operation": "Apply",
    }
    # kubectl hides managedFields unless asked (client-side, but the object must carry them)
    assert (
        "managedFields"
        not in yaml.safe_load(server.kubectl("get", "cm", "cm1", "-o", "yaml").stdout)["metadata"]
    )
    assert (
        "managedFields"
        not in json.loads(server.kubectl("get", "cm", "cm1", "-o", "json").stdout)["metadata"]
    )

    # the same manifest again: nothing changes, not even the resourceVersion
    again = ssa(server, cm_manifest("cm1", {"x": "1"}))
    assert again.stdout == "configmap/cm1 serverside-applied\n"
    assert live(server, "cm", "cm1") == created

    update = cm_manifest("cm1", {"x": "2", "y": "3"}, labels={"app": "a"})
    ssa(server, update)
    updated = live(server, "cm", "cm1")
    assert updated["data"] == {"x": "2", "y": "3"}
    assert updated["metadata"]["labels"] == {"app": "a"}
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert owners(updated) == {
        "kubectl/Apply": {
            "f:data": {"f:x": {}, "f:y": {}},
            "f:metadata": {"f:labels": {"f:app": {}}},
        }
    }
    # dropping a field it alone owned removes it
    ssa(server, cm_manifest("cm1", {"x": "2"}))
    pruned = live(server, "cm", "cm1")
    assert pruned["data"] == {"x": "2"}
    assert "labels" not in pruned["metadata"]
    assert owners(pruned) == {"kubectl/Apply": {"f:data": {"f:x": {}}}}


def test_kubectl_conflict_text_co_ownership_and_force_conflicts(server: Server) -> None:
    ssa(server, cm_manifest("cm", {"x": "1", "y": "1"}))
    result = ssa(server, cm_manifest("cm", {"x": "2"}), "--field-manager=other", check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "kubectl": .data.x\n' + KUBECTL_HINT
    ), result.stderr
    assert live(server, "cm", "cm")["data"] == {"x": "1", "y": "1"}

    # the same value is no conflict: both managers own the field
    ssa(server, cm_manifest("cm", {"x": "1"}), "--field-manager=other")
    shared = live(server, "cm", "cm")
    assert owners(shared) == {
        "kubectl/Apply": {"f:data": {"f:x": {}, "f:y": {}}},
        "other/Apply": {"f:data": {"f:x": {}}},
    }

    forced = ssa(
        server, cm_manifest("cm", {"x": "2"}), "--field-manager=other", "--force-conflicts"
    )
    assert forced.stdout == "configmap/cm serverside-applied\n"
    after = live(server, "cm", "cm")
    assert after["data"] == {"x": "2", "y": "1"}
    assert owners(after) == {
        "kubectl/Apply": {"f:data": {"f:y": {}}},
        "other/Apply": {"f:data": {"f:x": {}}},
    }
    # and now kubectl is the one that conflicts, naming the new owner
    back = ssa(server, cm_manifest("cm", {"x": "1", "y": "1"}), check=False)
    assert back.returncode == 1
    assert 'error: Apply failed with 1 conflict: conflict with "other": .data.x' in back.stderr


def test_kubectl_conflicts_with_several_managers(server: Server) -> None:
    server.kubectl("create", "configmap", "cm", "--from-literal=a=1")
    ssa(server, cm_manifest("cm", {"a": "1", "b": "1", "c": "1"}), "--field-manager=ci")
    server.kubectl("patch", "cm", "cm", "--type=merge", "-p", '{"data":{"a":"2"}}')
    result = ssa(server, cm_manifest("cm", {"a": "3", "b": "3", "c": "3"}), check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(
        'error: Apply failed with 3 conflicts: conflicts with "ci":\n- .data.b\n- .data.c\n'
        'conflicts with "kubectl-patch" using v1:\n- .data.a\n' + KUBECTL_HINT
    ), result.stderr


def test_kubectl_diff_server_side(server: Server) -> None:
    manifest = cm_manifest("cm", {"x": "1"})
    # an object that does not exist yet: all of it is new, and diff creates nothing
    new = ssa_diff(server, manifest, check=False)
    assert new.returncode == 1, new.stderr
    assert '+  x: "1"' in new.stdout
    assert server.request("GET", CM + "/cm")[0] == 404

    ssa(server, manifest)
    before = live(server, "cm", "cm")
    same = ssa_diff(server, manifest, check=False)
    assert (same.returncode, same.stdout, same.stderr) == (0, "", "")

    changed = ssa_diff(server, cm_manifest("cm", {"x": "2"}), check=False)
    assert changed.returncode == 1, changed.stderr
    assert '-  x: "1"' in changed.stdout
    assert '+  x: "2"' in changed.stdout
    assert "managedFields" not in changed.stdout
    assert live(server, "cm", "cm") == before  # a server dry run: nothing stored

    # another manager's change of a kubectl-owned field conflicts, unless forced
    conflict = ssa_diff(server, cm_manifest("cm", {"x": "2"}), "--field-manager=other", check=False)
    assert conflict.returncode > 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .data.x' in conflict.stderr
    forced = ssa_diff(
        server,
        cm_manifest("cm", {"x": "2"}),
        "--field-manager=other",
        "--force-conflicts",
        check=False,
    )
    assert forced.returncode == 1, forced.stderr
    assert '+  x: "2"' in forced.stdout
    assert live(server, "cm", "cm") == before


def test_kubectl_server_dry_run_stores_nothing(server: Server) -> None:
    out = ssa(server, cm_manifest("cm", {"x": "1"}), "--dry-run=server")
    assert out.stdout == "configmap/cm serverside-applied (server dry run)\n"
    assert server.request("GET", CM + "/cm")[0] == 404

    ssa(server, cm_manifest("cm", {"x": "1"}))
    before = live(server, "cm", "cm")
    dry = ssa(
        server,
        cm_manifest("cm", {"x": "2"}),
        "--dry-run=server",
        "--field-manager=other",
        "--force-conflicts",
        "-o",
        "json",
    )
    assert json.loads(dry.stdout)["data"] == {"x": "2"}
    assert live(server, "cm", "cm") == before
    # and the dry run's answer carries the managedFields the write would have stored
    code, answer = apply(
        server, CM + "/cm", cm("cm", data={"x": "2"}), "other", force="true", dryRun="All"
    )
    assert code == 200
    assert owners(answer) == {"other/Apply": {"f:data": {"f:x": {}}}}
    assert live(server, "cm", "cm") == before


DEPLOYMENT_YAML = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
"""

DEPLOYMENT_STATUS_YAML = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 9
status:
  replicas: 5
  observedGeneration: 1
"""


def test_kubectl_apply_to_the_status_subresource(server: Server) -> None:
    ssa(server, DEPLOYMENT_YAML)
    out = ssa(server, DEPLOYMENT_STATUS_YAML, "--subresource=status", "--field-manager=ctrl")
    assert out.stdout == "deployment.apps/web serverside-applied\n"
    obj = live(server, "deployment", "web")
    assert obj["status"]["replicas"] == 5
    assert obj["spec"]["replicas"] == 1  # /status ignores spec
    got = owners(obj)
    assert got["ctrl/Apply/status"] == {"f:status": {"f:observedGeneration": {}, "f:replicas": {}}}
    assert "f:status" not in got["kubectl/Apply"]
    (ctrl,) = [e for e in obj["metadata"]["managedFields"] if e["manager"] == "ctrl"]
    assert ctrl["subresource"] == "status"
    assert ctrl["apiVersion"] == "apps/v1"

    other = ssa(
        server,
        DEPLOYMENT_STATUS_YAML.replace("replicas: 5", "replicas: 6"),
        "--subresource=status",
        "--field-manager=other",
        check=False,
    )
    assert other.returncode == 1
    assert (
        'error: Apply failed with 1 conflict: conflict with "ctrl" with subresource "status": '
        ".status.replicas"
    ) in other.stderr
    # the main resource's applier does not own or change status
    ssa(server, DEPLOYMENT_YAML)
    assert live(server, "deployment", "web")["status"]["replicas"] == 5


def test_kubectl_scale_owns_replicas_until_apply_forces_them_back(server: Server) -> None:
    """``kubectl scale`` writes /scale (an Update by "kubectl", subresource scale); its
    ownership of Scale's spec.replicas is the Deployment's spec.replicas (spec §8)."""
    ssa(server, DEPLOYMENT_YAML)
    server.kubectl("scale", "deployment", "web", "--replicas=3")
    got = owners(live(server, "deployment", "web"))
    assert got["kubectl/Update/scale"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in got["kubectl/Apply"]["f:spec"]

    result = ssa(server, DEPLOYMENT_YAML, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(
        'error: Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
        "using apps/v1: .spec.replicas\n" + KUBECTL_HINT
    ), result.stderr
    # agreeing with the scaled value co-owns it; forcing another value takes it
    ssa(server, DEPLOYMENT_YAML.replace("replicas: 1", "replicas: 3"))
    got = owners(live(server, "deployment", "web"))
    assert "f:replicas" in got["kubectl/Apply"]["f:spec"]
    assert got["kubectl/Update/scale"] == {"f:spec": {"f:replicas": {}}}
    ssa(server, DEPLOYMENT_YAML, "--force-conflicts")
    obj = live(server, "deployment", "web")
    assert obj["spec"]["replicas"] == 1
    assert "kubectl/Update/scale" not in owners(obj)


def test_kubectl_server_side_apply_request_errors(server: Server) -> None:
    # a resourceVersion in the manifest is a precondition (ignored when creating)
    stale = json.dumps(
        cm("rv", data={"a": "1"}) | {"metadata": {"name": "rv", "resourceVersion": "1"}}
    )
    ssa(server, stale)
    result = ssa(server, stale, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(
        'error: Operation cannot be fulfilled on configmaps "rv": the object has been modified; '
        "please apply your changes to the latest version and try again\n"
    ), result.stderr
    # managedFields in the manifest: kubectl sends them, the server refuses them
    with_fields = json.dumps(cm("mf", metadata={"name": "mf", "managedFields": []}))
    result = ssa(server, with_fields, check=False)
    assert result.returncode == 1
    assert "Error from server (BadRequest): metadata.managedFields must be nil" in result.stderr
    # a field outside the schema fails the typed conversion before fieldValidation is looked
    # at: kube's 500 without a reason (kubernetes#122480), a 400 here as its proposed fix has it
    unknown = json.dumps(cm("uk", data={"a": "1"}, extra="x"))
    result = ssa(server, unknown, check=False)
    assert result.returncode == 1
    assert result.stderr == (
        "Error from server (BadRequest): failed to create typed patch object "
        f"({server.namespace}/uk; /v1, Kind=ConfigMap): .extra: field not declared in schema\n"
    )
    assert server.request("GET", CM + "/uk")[0] == 404


# --- client-side apply -> server-side apply (spec §9) ------------------------------------------


def test_client_side_apply_upgrades_to_server_side_apply(server: Server) -> None:
    first = cm_manifest("mig", {"a": "1", "b": "2"}, labels={"app": "m"})
    server.kubectl("apply", "-f", "-", input=first)
    csa = live(server, "cm", "mig")
    assert owners(csa) == {
        "kubectl-client-side-apply/Update": {
            "f:data": {".": {}, "f:a": {}, "f:b": {}},
            "f:metadata": {
                "f:annotations": {".": {}, f"f:{LAST_APPLIED}": {}},
                "f:labels": {".": {}, "f:app": {}},
            },
        }
    }
    assert LAST_APPLIED in csa["metadata"]["annotations"]

    # a changed manifest: fields the client-side apply set are not conflicts for kubectl
    second = cm_manifest("mig", {"a": "1", "b": "3"}, labels={"app": "m"})
    out = ssa(server, second)
    assert out.stdout == "configmap/mig serverside-applied\n"
    obj = live(server, "cm", "mig")
    assert obj["data"] == {"a": "1", "b": "3"}
    assert obj["metadata"]["labels"] == {"app": "m"}
    got = owners(obj)
    assert "kubectl-client-side-apply/Update" not in got  # folded into kubectl's Apply entry
    assert got["kubectl/Apply"] == {
        "f:data": {"f:a": {}, "f:b": {}},
        "f:metadata": {"f:labels": {"f:app": {}}},
    }
    assert got["kubectl-last-applied/Apply"] == {
        "f:metadata": {"f:annotations": {f"f:{LAST_APPLIED}": {}}}
    }
    assert set(got) == {"kubectl/Apply", "kubectl-last-applied/Apply"}
    # kubectl-last-applied applied the annotation's current value: it changed nothing, so its
    # new entry has no time (spec §5 step 8)
    (last_applied,) = [
        e for e in obj["metadata"]["managedFields"] if e["manager"] == "kubectl-last-applied"
    ]
    assert "time" not in last_applied
    # the server rewrote the annotation to the applied configuration (JSON + "\n")
    annotation = obj["metadata"]["annotations"][LAST_APPLIED]
    assert annotation.endswith("}\n")
    assert json.loads(annotation) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"labels": {"app": "m"}, "name": "mig", "namespace": server.namespace},
        "data": {"a": "1", "b": "3"},
    }

    # kubectl now owns what the client-side apply owned: dropping a key removes it ...
    ssa(server, cm_manifest("mig", {"a": "1"}))
    obj = live(server, "cm", "mig")
    assert obj["data"] == {"a": "1"}
    assert "labels" not in obj["metadata"]
    assert json.loads(obj["metadata"]["annotations"][LAST_APPLIED])["data"] == {"a": "1"}
    # ... and another applier conflicts with kubectl, not with the client-side manager
    other = ssa(server, cm_manifest("mig", {"a": "2"}), "--field-manager=other", check=False)
    assert other.returncode == 1
    assert 'error: Apply failed with 1 conflict: conflict with "kubectl": .data.a' in other.stderr


def test_client_side_applied_fields_changed_by_others_still_conflict(server: Server) -> None:
    server.kubectl(
        "apply", "-f", "-", input=cm_manifest("lab", {"a": "1", "b": "2"}, labels={"app": "m"})
    )
    server.kubectl("label", "cm", "lab", "app=x", "--overwrite")
    server.kubectl("patch", "cm", "lab", "--type=merge", "-p", '{"data":{"b":"other"}}')
    before = live(server, "cm", "lab")
    assert owners(before)["kubectl-label/Update"] == {"f:metadata": {"f:labels": {"f:app": {}}}}
    assert owners(before)["kubectl-patch/Update"] == {"f:data": {"f:b": {}}}

    result = ssa(server, cm_manifest("lab", {"a": "1", "b": "3"}, labels={"app": "m"}), check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(
        'error: Apply failed with 2 conflicts: conflicts with "kubectl-label" using v1:\n'
        '- .metadata.labels.app\nconflicts with "kubectl-patch" using v1:\n- .data.b\n'
    ), result.stderr
    assert live(server, "cm", "lab") == before

    # a manifest that agrees with the other writers upgrades without conflict
    ssa(server, cm_manifest("lab", {"a": "1", "b": "other"}, labels={"app": "x"}))
    got = owners(live(server, "cm", "lab"))
    assert got["kubectl/Apply"] == {
        "f:data": {"f:a": {}, "f:b": {}},
        "f:metadata": {"f:labels": {"f:app": {}}},
    }
    assert got["kubectl-patch/Update"] == {"f:data": {"f:b": {}}}
    assert got["kubectl-label/Update"] == {"f:metadata": {"f:labels": {"f:app": {}}}}
    assert "kubectl-client-side-apply/Update" not in got


# --- lightkube -------------------------------------------------------------------------------


@pytest.fixture
def lightkube_client(server: Server) -> Iterator[Client]:
    with Client(KubeConfig.from_file(str(server.kubeconfig))) as lk:
        yield lk


def test_lightkube_apply_configmap(lightkube_client: Client) -> None:
    lk = lightkube_client

    def config_map(**data: str) -> ConfigMap:
        return ConfigMap(metadata=ObjectMeta(name="lk"), data=data)

    created = lk.apply(config_map(a="1"), field_manager="lk1")
    assert created.data == {"a": "1"}
    (entry,) = created.metadata.managedFields
    assert (entry.manager, entry.operation, entry.apiVersion) == ("lk1", "Apply", "v1")
    assert entry.fieldsV1 == {"f:data": {"f:a": {}}}
    assert entry.time is not None

    updated = lk.apply(config_map(a="2", b="1"), field_manager="lk1")
    assert updated.data == {"a": "2", "b": "1"}
    assert int(updated.metadata.resourceVersion) > int(created.metadata.resourceVersion)

    with pytest.raises(ApiError) as info:
        lk.apply(config_map(a="3"), field_manager="lk2")
    status = info.value.status
    assert status.code == 409
    assert status.reason == "Conflict"
    assert status.message == 'Apply failed with 1 conflict: conflict with "lk1": .data.a'
    (cause,) = status.details.causes
    assert (cause.reason, cause.field) == ("FieldManagerConflict", ".data.a")
    assert lk.get(ConfigMap, "lk").data == {"a": "2", "b": "1"}

    dry = lk.apply(config_map(a="3"), field_manager="lk2", force=True, dry_run=True)
    assert dry.data == {"a": "3", "b": "1"}
    assert lk.get(ConfigMap, "lk").data == {"a": "2", "b": "1"}

    forced = lk.apply(config_map(a="3"), field_manager="lk2", force=True)
    assert forced.data == {"a": "3", "b": "1"}
    managed = {e.manager: e.fieldsV1 for e in forced.metadata.managedFields}
    assert managed == {"lk1": {"f:data": {"f:b": {}}}, "lk2": {"f:data": {"f:a": {}}}}

    with pytest.raises(ValueError, match='Parameter "field_manager" is required'):
        lk.apply(config_map(a="4"))


def test_lightkube_apply_generic_custom_resource(server: Server, lightkube_client: Client) -> None:
    create_crd(server, typed_meta_schema())
    Thing = create_namespaced_resource("ssa.example.com", "v1", "Thing", "things")
    lk = lightkube_client

    created = lk.apply(
        Thing(metadata={"name": "t1"}, spec={"tags": ["x"], "items": [1]}), field_manager="a"
    )
    assert created.spec == {"tags": ["x"], "items": [1]}
    managed = {e.manager: e.fieldsV1 for e in created.metadata.managedFields}
    assert managed == {"a": {"f:spec": {"f:items": {}, "f:tags": {'v:"x"': {}}}}}

    merged = lk.apply(Thing(metadata={"name": "t1"}, spec={"tags": ["y"]}), field_manager="b")
    assert merged.spec == {"tags": ["x", "y"], "items": [1]}

    with pytest.raises(ApiError) as info:
        lk.apply(Thing(metadata={"name": "t1"}, spec={"items": [2]}), field_manager="b")
    assert info.value.status.code == 409
    assert info.value.status.message == (
        'Apply failed with 1 conflict: conflict with "a": .spec.items'
    )
    forced = lk.apply(
        Thing(metadata={"name": "t1"}, spec={"tags": ["y"], "items": [2]}),
        field_manager="b",
        force=True,
    )
    assert forced.spec == {"tags": ["x", "y"], "items": [2]}
    managed = {e.manager: e.fieldsV1 for e in forced.metadata.managedFields}
    assert managed == {
        "a": {"f:spec": {"f:tags": {'v:"x"': {}}}},
        "b": {"f:spec": {"f:items": {}, "f:tags": {'v:"y"': {}}}},
    }


def test_lightkube_apply_deployment_models(lightkube_client: Client) -> None:
    """Typed models: lightkube drops unset (None) fields, so each applier's set is exactly what
    it built; containers are a list-map keyed by name."""
    lk = lightkube_client

    def deployment(*containers: Container, **spec: Any) -> Deployment:
        # DeploymentSpec requires a selector: every applier sends (and co-owns) the same one
        return Deployment(
            metadata=ObjectMeta(name="web"),
            spec=DeploymentSpec(
                selector=LabelSelector(matchLabels={"app": "w"}),
                template=PodTemplateSpec(
                    metadata=ObjectMeta(labels={"app": "w"}) if spec else None,
                    spec=PodSpec(containers=list(containers)),
                ),
                **spec,
            ),
        )

    ci = deployment(Container(name="app", image="app:1"), replicas=2)
    created = lk.apply(ci, field_manager="ci")
    assert {e.manager: e.fieldsV1 for e in created.metadata.managedFields} == {
        "ci": {
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {
                        "f:containers": {'k:{"name":"app"}': {".": {}, "f:image": {}, "f:name": {}}}
                    },
                },
            }
        }
    }
    mesh = lk.apply(deployment(Container(name="proxy", image="envoy:1")), field_manager="mesh")
    assert [c.name for c in mesh.spec.template.spec.containers] == ["app", "proxy"]
    assert {e.manager: e.fieldsV1 for e in mesh.metadata.managedFields}["mesh"] == {
        "f:spec": {
            "f:selector": {},
            "f:template": {
                "f:spec": {
                    "f:containers": {'k:{"name":"proxy"}': {".": {}, "f:image": {}, "f:name": {}}}
                }
            },
        }
    }
    with pytest.raises(ApiError) as info:
        lk.apply(deployment(Container(name="app", image="app:2")), field_manager="mesh")
    assert info.value.status.message == (
        'Apply failed with 1 conflict: conflict with "ci": '
        '.spec.template.spec.containers[name="app"].image'
    )


# --- the official kubernetes client ---------------------------------------------------------


@pytest.fixture
def api(server: Server) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(server.kubeconfig))


def test_kubernetes_dynamic_client_server_side_apply(server: Server, api: client.ApiClient) -> None:
    configmaps = dynamic.DynamicClient(api).resources.get(api_version="v1", kind="ConfigMap")

    def dynamic_apply(data: dict[str, str], manager: str, **kw: Any) -> Any:
        return configmaps.server_side_apply(
            body=cm("dyn", data=data),
            name="dyn",
            namespace=server.namespace,
            field_manager=manager,
            **kw,
        )

    created = dynamic_apply({"a": "1"}, "d1")
    assert created.data.to_dict() == {"a": "1"}
    (entry,) = created.metadata.managedFields
    assert (entry.manager, entry.operation, entry.fieldsV1.to_dict()) == (
        "d1",
        "Apply",
        {"f:data": {"f:a": {}}},
    )
    assert dynamic_apply({"a": "2"}, "d1").data.to_dict() == {"a": "2"}

    with pytest.raises(ConflictError) as info:
        dynamic_apply({"a": "3"}, "d2", force_conflicts=False)
    assert isinstance(info.value, ApiException)
    assert info.value.status == 409
    body = json.loads(info.value.body)
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "d1": .data.a'
    assert body["details"]["causes"][0]["reason"] == "FieldManagerConflict"

    forced = dynamic_apply({"a": "3"}, "d2", force_conflicts=True)
    assert forced.data.to_dict() == {"a": "3"}
    assert [e.manager for e in forced.metadata.managedFields] == ["d2"]


def test_kubernetes_dynamic_client_applies_a_custom_resource(
    server: Server, api: client.ApiClient
) -> None:
    create_crd(server, typed_meta_schema())
    things = dynamic.DynamicClient(api).resources.get(
        api_version="ssa.example.com/v1", kind="Thing"
    )

    def dynamic_apply(manager: str, force: bool = False, **spec: Any) -> Any:
        return things.server_side_apply(
            body=thing(**spec),
            name="t1",
            namespace=server.namespace,
            field_manager=manager,
            force_conflicts=force,
        )

    dynamic_apply("a", ports=[{"name": "http", "port": 80}], cfg={"k": "v"})
    merged = dynamic_apply("b", ports=[{"name": "https", "port": 443}])
    assert merged.spec.to_dict() == {
        "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
        "cfg": {"k": "v"},
    }
    with pytest.raises(ConflictError) as info:
        dynamic_apply("b", ports=[{"name": "https", "port": 443}], cfg={"k": "w"})
    assert json.loads(info.value.body)["message"] == (
        'Apply failed with 1 conflict: conflict with "a": .spec.cfg'
    )
    forced = dynamic_apply("b", True, ports=[{"name": "https", "port": 443}], cfg={"k": "w"})
    assert forced.spec.cfg.to_dict() == {"k": "w"}
    managed = {e.manager: e.fieldsV1.to_dict() for e in forced.metadata.managedFields}
    assert managed["a"] == {
        "f:spec": {"f:ports": {'k:{"name":"http"}': {".": {}, "f:name": {}, "f:port": {}}}}
    }
    assert managed["b"] == {
        "f:spec": {
            "f:cfg": {},
            "f:ports": {'k:{"name":"https"}': {".": {}, "f:name": {}, "f:port": {}}},
        }
    }


def test_kubernetes_generated_patch_with_the_apply_content_type(
    server: Server, api: client.ApiClient
) -> None:
    core = client.CoreV1Api(api)

    def patch(data: dict[str, str], manager: str, **kw: Any) -> client.V1ConfigMap:
        return core.patch_namespaced_config_map(
            "gen",
            server.namespace,
            cm("gen", data=data),
            field_manager=manager,
            _content_type=APPLY,
            **kw,
        )

    created = patch({"a": "1"}, "g1")
    assert created.data == {"a": "1"}
    (entry,) = created.metadata.managed_fields
    assert (entry.manager, entry.operation, entry.fields_v1) == (
        "g1",
        "Apply",
        {"f:data": {"f:a": {}}},
    )
    # a second applier co-owns the equal value and adds its own key
    shared = patch({"a": "1", "b": "2"}, "g2")
    assert shared.data == {"a": "1", "b": "2"}
    assert {e.manager: e.fields_v1 for e in shared.metadata.managed_fields} == {
        "g1": {"f:data": {"f:a": {}}},
        "g2": {"f:data": {"f:a": {}, "f:b": {}}},
    }
    with pytest.raises(ApiException) as info:
        patch({"a": "9"}, "g1")
    assert info.value.status == 409
    assert json.loads(info.value.body)["message"] == (
        'Apply failed with 1 conflict: conflict with "g2": .data.a'
    )
    forced = patch({"a": "9"}, "g1", force=True)
    assert forced.data == {"a": "9", "b": "2"}
    assert {e.manager: e.fields_v1 for e in forced.metadata.managed_fields} == {
        "g1": {"f:data": {"f:a": {}}},
        "g2": {"f:data": {"f:b": {}}},
    }


# --- a CRD's list and map types (spec §7, example 12) ----------------------------------------

THING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                    },
                },
                "cfg": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"},
                },
                "items": {"type": "array", "items": {"type": "integer"}},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def typed_meta_schema() -> dict[str, Any]:
    """THING_SCHEMA as controller-gen writes it: apiVersion, kind and metadata declared."""
    schema = copy.deepcopy(THING_SCHEMA)
    schema["properties"] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        **schema["properties"],
    }
    return schema


def create_crd(server: Server, schema: dict[str, Any]) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.ssa.example.com"},
        "spec": {
            "group": "ssa.example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
            ],
        },
    }
    code, got = server.request("POST", CRDS, crd)
    assert code == 201, got
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        _, got = server.request("GET", CRDS + "/things.ssa.example.com")
        conditions = {c["type"]: c["status"] for c in got.get("status", {}).get("conditions", [])}  # type: ignore[attr-defined]
        if conditions.get("Established") == "True":
            return
        time.sleep(0.05)
    raise AssertionError(f"CRD not established: {got}")


def thing(name: str = "t1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ssa.example.com/v1",
        "kind": "Thing",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_crd_list_and_map_types_with_two_appliers(server: Server) -> None:
    create_crd(server, typed_meta_schema())
    path = THINGS + "/t1"
    code, obj = apply(
        server,
        path,
        thing(tags=["x", "y"], ports=[{"name": "http", "port": 80}], cfg={"k": "v"}, items=[1, 2]),
        "a",
    )
    assert code == 201, obj
    a_fields = {
        "f:spec": {
            "f:cfg": {},
            "f:items": {},
            "f:ports": {'k:{"name":"http"}': {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {'v:"x"': {}, 'v:"y"': {}},
        }
    }
    assert owners(obj) == {"a/Apply": a_fields}

    code, obj = apply(server, path, thing(tags=["z"]), "b")
    assert code == 200, obj
    assert obj["spec"]["tags"] == ["x", "y", "z"]
    assert owners(obj) == {"a/Apply": a_fields, "b/Apply": {"f:spec": {"f:tags": {'v:"z"': {}}}}}

    for spec, path_text in (
        ({"items": [3]}, ".spec.items"),
        ({"cfg": {"k2": "w"}}, ".spec.cfg"),
        ({"ports": [{"name": "http", "port": 81}]}, '.spec.ports[name="http"].port'),
    ):
        code, status = apply(server, path, thing(tags=["z"], **spec), "b")
        assert code == 409, status
        assert status["message"] == f'Apply failed with 1 conflict: conflict with "a": {path_text}'
        assert status["details"]["causes"] == [
            {"reason": "FieldManagerConflict", "message": 'conflict with "a"', "field": path_text}
        ]
    code, status = apply(server, path, thing(tags=["z"], items=[3], cfg={"k2": "w"}), "b")
    assert code == 409
    assert status["message"] == (
        'Apply failed with 2 conflicts: conflicts with "a":\n- .spec.cfg\n- .spec.items'
    )

    # co-owning a port item with its value, adding another. Shared items take the config's
    # order within the live list (structured-merge-diff's visitListItems): [x,y,z] + [z,x]
    ports = [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
    code, obj = apply(server, path, thing(tags=["z", "x"], ports=ports), "b")
    assert code == 200, obj
    assert obj["spec"]["ports"] == ports
    assert obj["spec"]["tags"] == ["y", "z", "x"]
    assert owners(obj)["b/Apply"] == {
        "f:spec": {
            "f:ports": {
                'k:{"name":"http"}': {".": {}, "f:name": {}, "f:port": {}},
                'k:{"name":"https"}': {".": {}, "f:name": {}, "f:port": {}},
            },
            "f:tags": {'v:"x"': {}, 'v:"z"': {}},
        }
    }
    # a drops http and x: both stay, b still owns them; a drops y: it goes
    code, obj = apply(server, path, thing(cfg={"k": "v"}, items=[1, 2]), "a")
    assert code == 200, obj
    assert obj["spec"]["ports"] == ports
    assert obj["spec"]["tags"] == ["z", "x"]
    assert owners(obj)["a/Apply"] == {"f:spec": {"f:cfg": {}, "f:items": {}}}

    # force takes the atomic fields whole
    code, obj = apply(server, path, thing(items=[3], cfg={"k2": "w"}), "b", force="true")
    assert code == 200, obj
    assert obj["spec"] == {"items": [3], "cfg": {"k2": "w"}}  # tags and ports: nobody's now
    assert owners(obj) == {"b/Apply": {"f:spec": {"f:cfg": {}, "f:items": {}}}}


def test_crd_object_created_by_post_owns_its_spec_node(server: Server) -> None:
    create_crd(server, typed_meta_schema())
    manifest = json.dumps(thing(tags=["x"], items=[1]))
    server.kubectl("create", "-f", "-", input=manifest)
    obj = live(server, "things.ssa.example.com", "t1")
    assert owners(obj) == {
        "kubectl-create/Update": {
            # a new granular list: its node and its items were both added
            "f:spec": {".": {}, "f:items": {}, "f:tags": {".": {}, 'v:"x"': {}}},
        }
    }


def test_kubectl_applies_custom_resources_and_their_status(server: Server) -> None:
    create_crd(server, typed_meta_schema())
    resource = "things.ssa.example.com"
    first = json.dumps(thing(tags=["x"], ports=[{"name": "http", "port": 80}], items=[1]))
    out = ssa(server, first)
    assert out.stdout == "thing.ssa.example.com/t1 serverside-applied\n"
    second = json.dumps(thing(tags=["y"], ports=[{"name": "https", "port": 443}]))
    ssa(server, second, "--field-manager=b")
    obj = live(server, resource, "t1")
    assert obj["spec"] == {
        "tags": ["x", "y"],
        "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
        "items": [1],
    }
    assert owners(obj)["b/Apply"] == {
        "f:spec": {
            "f:ports": {'k:{"name":"https"}': {".": {}, "f:name": {}, "f:port": {}}},
            "f:tags": {'v:"y"': {}},
        }
    }
    conflict = ssa(server, json.dumps(thing(items=[2])), "--field-manager=b", check=False)
    assert conflict.returncode == 1
    assert 'error: Apply failed with 1 conflict: conflict with "kubectl": .spec.items' in (
        conflict.stderr
    )

    status = {**thing(), "spec": {"items": [9]}, "status": {"ready": True}}
    ssa(server, json.dumps(status), "--subresource=status", "--field-manager=ctrl")
    obj = live(server, resource, "t1")
    assert obj["status"] == {"ready": True}
    assert obj["spec"]["items"] == [1]
    assert owners(obj)["ctrl/Apply/status"] == {"f:status": {"f:ready": {}}}
    code, answer = apply(
        server, THINGS + "/t1/status", {**thing(), "status": {"ready": False}}, "other"
    )
    assert code == 409
    assert answer["message"] == (
        'Apply failed with 1 conflict: conflict with "ctrl" with subresource "status": '
        ".status.ready"
    )


def test_kubectl_server_side_applies_a_crd_itself(server: Server) -> None:
    """Big CRDs are applied server-side (no last-applied annotation): JSONSchemaProps is a
    recursive schema, and a changed CRD serves its new schema."""
    crd = (Path(__file__).parent / "data" / "widgets-crd.yaml").read_text()
    out = ssa(server, crd)
    assert (
        out.stdout
        == "customresourcedefinition.apiextensions.k8s.io/widgets.example.com serverside-applied\n"
    )
    server.kubectl("wait", "--for=condition=Established", "crd/widgets.example.com")
    got = live(server, "crd", "widgets.example.com")
    assert LAST_APPLIED not in (got["metadata"].get("annotations") or {})
    # versions is +listType=atomic in apiextensions/v1: one leaf
    assert owners(got)["kubectl/Apply"]["f:spec"]["f:versions"] == {}
    widget = json.dumps(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w1"},
            "spec": {"size": 8},
        }
    )
    ssa(server, widget)
    ssa(server, crd.replace("minimum: 1}", "minimum: 1, maximum: 5}"))
    got = live(server, "crd", "widgets.example.com")
    spec_schema = got["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec_schema["properties"]["size"] == {"type": "integer", "minimum": 1, "maximum": 5}
    result = ssa(server, widget.replace('"size": 8', '"size": 9'), check=False)
    assert result.returncode == 1
    assert (
        "spec.size: Invalid value: 9: spec.size in body should be less than or equal to 5"
        in result.stderr
    ), result.stderr


@pytest.mark.parametrize("via", ["http", "kubectl"])
def test_apply_to_a_custom_resource_whose_schema_leaves_out_type_meta(
    server: Server, via: str
) -> None:
    """Most hand-written CRDs declare only spec and status; apiextensions-apiserver adds
    apiVersion, kind and metadata to the apply schema itself (spec §7 CRDs; kube-openapi
    builder ``addTypeMetaProperties``)."""
    create_crd(server, THING_SCHEMA)
    body = thing(tags=["x"], items=[1])
    if via == "http":
        code, obj = apply(server, THINGS + "/t1", body, "a")
        assert code == 201, obj
    else:
        out = ssa(server, json.dumps(body), "--field-manager=a", check=False)
        assert out.returncode == 0, out.stderr
        obj = live(server, "things.ssa.example.com", "t1")
    assert owners(obj) == {"a/Apply": {"f:spec": {"f:items": {}, "f:tags": {'v:"x"': {}}}}}


# --- concurrency -----------------------------------------------------------------------------


def run_together(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run ``jobs`` on threads released at once; their results (or exceptions) in order."""
    barrier = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = jobs[i]()
        except Exception as exc:  # reported by the caller's asserts
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


MANAGERS = [f"m{i}" for i in range(4)]


def own_keys(manager: str, upto: int) -> dict[str, str]:
    return {f"{manager}-k{j}": f"{manager}-{j}" for j in range(upto + 1)}


def apply_rounds(server: Server, name: str, rounds: int) -> list[int]:
    """Each manager of MANAGERS applies its own keys of ConfigMap ``name`` at once, ``rounds``
    times, with one more key each round; the response codes."""
    codes: list[int] = []
    for r in range(rounds):
        results = run_together(
            [
                functools.partial(apply, server, f"{CM}/{name}", cm(name, data=own_keys(m, r)), m)
                for m in MANAGERS
            ]
        )
        for result in results:
            assert isinstance(result, tuple), result
            code, body = result
            assert code in (200, 201), body
            codes.append(code)
    return codes


def assert_every_key_kept(server: Server, name: str, rounds: int, **others: str) -> None:
    _, obj = server.request("GET", f"{CM}/{name}")
    expected = dict(others)
    for m in MANAGERS:
        expected.update(own_keys(m, rounds - 1))
    assert obj["data"] == expected  # type: ignore[index]
    got = owners(obj)  # type: ignore[arg-type]
    for m in MANAGERS:
        assert got[f"{m}/Apply"] == {"f:data": {f"f:{k}": {} for k in own_keys(m, rounds - 1)}}


def test_concurrent_appliers_of_distinct_keys_lose_no_field(server: Server) -> None:
    assert apply(server, CM + "/shared", cm("shared", data={"s": "1"}), "setup")[0] == 201
    codes = apply_rounds(server, "shared", 6)
    assert set(codes) == {200}
    assert_every_key_kept(server, "shared", 6, s="1")
    _, obj = server.request("GET", CM + "/shared")
    assert len(obj["metadata"]["managedFields"]) == len(MANAGERS) + 1  # type: ignore[index]


def test_concurrent_appliers_creating_one_object(server: Server) -> None:
    """All appliers race to create the object: one creates it (201), the others' creates lose
    the storage race and are retried as applies to the new object (kube's GuaranteedUpdate)."""
    codes = apply_rounds(server, "fresh", 3)
    assert codes.count(201) == 1
    assert_every_key_kept(server, "fresh", 3)


@pytest.mark.parametrize("existing", [True, False], ids=["existing", "absent"])
def test_racing_appliers_of_one_key_exactly_one_wins(server: Server, existing: bool) -> None:
    for r in range(6):
        name = f"race{r}"
        if existing:
            code, _ = apply(server, f"{CM}/{name}", cm(name, data={"base": "b"}), "setup")
            assert code == 201
        results = run_together(
            [
                functools.partial(apply, server, f"{CM}/{name}", cm(name, data={"k": m}), m)
                for m in ("p", "q")
            ]
        )
        codes = sorted(result[0] for result in results)
        assert codes == [200 if existing else 201, 409], results
        (winner,) = [m for m, result in zip(("p", "q"), results, strict=True) if result[0] < 300]
        loser = "q" if winner == "p" else "p"
        (loser_body,) = [result[1] for result in results if result[0] == 409]
        assert loser_body["reason"] == "Conflict"
        assert loser_body["message"] == (
            f'Apply failed with 1 conflict: conflict with "{winner}": .data.k'
        )
        _, obj = server.request("GET", f"{CM}/{name}")
        assert obj["data"] == ({"base": "b", "k": winner} if existing else {"k": winner})  # type: ignore[index]
        got = owners(obj)  # type: ignore[arg-type]
        assert got[f"{winner}/Apply"] == {"f:data": {"f:k": {}}}
        assert f"{loser}/Apply" not in got
