"""Unit tests of the Pod spec, ConfigMap and Secret validators."""

from __future__ import annotations

from typing import Any

import pytest

from kubelite.api.encoding.quantity import parse_or_none as parse_quantity
from kubelite.api.kinds.core.validation.configdata import validate_configmap, validate_secret
from kubelite.api.kinds.core.validation.pods import pod_spec_causes


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("2", "2"), ("0.5", "500m"), ("1000m", "1"), ("1024Mi", "1Gi"), ("1536Mi", "1536Mi"),
     ("2000", "2k"), ("1e3", "1e3"), ("100Ki", "100Ki")],
)  # fmt: skip
def test_quantity_canonical(text: str, canonical: str) -> None:
    quantity = parse_quantity(text)
    assert quantity is not None
    assert str(quantity) == canonical


def messages(spec: Any, path: str = "spec.template.spec") -> list[str]:
    return [f"{c.field}: {c.message}" for c in pod_spec_causes(spec, path)]


def test_template_paths() -> None:
    assert messages({"containers": []}) == ["spec.template.spec.containers: Required value"]
    assert messages(None) == ["spec.template.spec.containers: Required value"]


def test_volume_type_and_mounts() -> None:
    spec = {
        "volumes": [{"name": "v"}, {"name": "w", "emptyDir": {}, "secret": {}}],
        "containers": [
            {"name": "c", "image": "i", "volumeMounts": [{"name": "v", "mountPath": "/a"}]}
        ],
    }
    assert messages(spec, "spec") == [
        "spec.volumes[0]: Required value: must specify a volume type",
        "spec.volumes[1].secret: Forbidden: may not specify more than 1 volume type",
        'spec.containers[0].volumeMounts[0].name: Not found: "v"',
    ]


def test_init_containers_and_extended_resources() -> None:
    spec = {
        "containers": [{"name": "c", "image": "i"}],
        "initContainers": [
            {"name": "c", "image": "i", "livenessProbe": {"exec": {"command": ["x"]}}},
        ],
    }
    assert messages(spec, "spec") == [
        'spec.initContainers[0].name: Duplicate value: "c"',
        "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers "
        "without restartPolicy=Always",
    ]
    gpu = {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}}
    spec = {"containers": [{"name": "c", "image": "i", "resources": gpu}]}
    assert messages(spec, "spec") == [
        'spec.containers[0].resources.requests: Invalid value: "1": must be equal to '
        "example.com/gpu limit of 2"
    ]


@pytest.mark.parametrize(
    "spec",
    [
        {"containers": "x"},
        {"containers": [1, None, {"name": 5, "image": []}]},
        {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": "x"}]}]},
        {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "zz"}}}]},
        {"volumes": [None, 3], "containers": [{"name": "c", "image": "i", "volumeMounts": "x"}]},
    ],
)
def test_odd_specs_never_raise(spec: Any) -> None:
    pod_spec_causes(spec, "spec")


def test_configmap_and_secret() -> None:
    assert [c.field for c in validate_configmap({"binaryData": {"a b": "eA=="}}, None)] == [
        "binaryData[a b]"
    ]
    causes = validate_secret({"type": "kubernetes.io/basic-auth"}, None)
    assert [f"{c.field}: {c.message}" for c in causes] == [
        "data[username]: Required value",
        "data[password]: Required value",
    ]
    old = {"immutable": True, "data": {"a": "MQ=="}}
    causes = validate_secret({"data": {"a": "MQ=="}}, old)
    assert [f"{c.field}: {c.message}" for c in causes] == [
        "immutable: Forbidden: field is immutable when `immutable` is set"
    ]
    assert validate_configmap({"data": ["x"], "binaryData": 3}, None) == []
