"""Loading manifests into a server, as ``kubectl apply -f`` does, and waiting until the kinds
of the CustomResourceDefinitions among them are served.

CRDs are applied first; each must be Established and its kinds found in discovery before the
other objects (possibly of those kinds) are applied. Objects are applied server-side.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from kubelite.client import Client, Object, ResourceNotFound
from kubelite.testing.waiting import DEFAULT_TIMEOUT, POLL_SECONDS, wait_for

FIELD_MANAGER = "kubelite-testing"
CRD_API_VERSION = "apiextensions.k8s.io/v1"
Source = str | Path | Mapping[str, Any]


def read_manifests(*sources: Source) -> list[Object]:
    """The objects in ``sources``: YAML files (several documents each), directories (their
    ``*.yaml``, ``*.yml`` and ``*.json`` files, in name order), or objects; ``List`` kinds are
    unpacked and empty documents skipped."""
    found: list[Object] = []
    for source in sources:
        if isinstance(source, Mapping):
            found.extend(_unpack(dict(source)))
            continue
        path = Path(source)
        files = (
            sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json"))
            if path.is_dir()
            else [path]
        )
        for file in files:
            for document in yaml.safe_load_all(file.read_text()):
                if document:
                    found.extend(_unpack(document))
    return found


def _unpack(document: Object) -> list[Object]:
    if str(document.get("kind", "")).endswith("List") and "items" in document:
        return [item for item in document["items"] if item]
    return [document]


def is_crd(obj: Mapping[str, Any]) -> bool:
    kind = obj.get("kind")
    return obj.get("apiVersion") == CRD_API_VERSION and kind == "CustomResourceDefinition"


def served_kinds(crd: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (apiVersion, kind) pairs a CRD serves."""
    spec = crd.get("spec") or {}
    kind = spec["names"]["kind"]
    return [(f"{spec['group']}/{v['name']}", kind) for v in spec["versions"] if v.get("served")]


def wait_for_kinds(
    client: Client, kinds: Iterable[tuple[str, str]], timeout: float = DEFAULT_TIMEOUT
) -> None:
    """Wait until discovery serves each (apiVersion, kind)."""
    deadline = time.monotonic() + timeout
    for api_version, kind in kinds:
        while True:
            try:
                client.resource(api_version, kind)
                break
            except ResourceNotFound:
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{kind} in {api_version} is still not served")
                time.sleep(POLL_SECONDS)


def load_manifests(
    client: Client,
    *sources: Source,
    namespace: str | None = None,
    field_manager: str = FIELD_MANAGER,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Object]:
    """Apply the objects of ``sources`` (see :func:`read_manifests`): CRDs first, waited for
    until Established and their kinds served, then the rest in order. A namespaced object without
    a namespace goes to ``namespace`` (default: the client's). Returns the applied objects."""
    objects = read_manifests(*sources)
    crds = [obj for obj in objects if is_crd(obj)]
    applied = [client.apply(crd, field_manager=field_manager, force=True) for crd in crds]
    for crd in crds:
        name = crd["metadata"]["name"]
        wait_for(client, CRD_API_VERSION, "CustomResourceDefinition", name,
                 "condition=Established", timeout=timeout)  # fmt: skip
        wait_for_kinds(client, served_kinds(crd), timeout)
    for obj in objects:
        if is_crd(obj):
            continue
        resource = client.resource(obj["apiVersion"], obj["kind"])
        metadata = obj.get("metadata") or {}
        if resource.namespaced and not metadata.get("namespace"):
            obj = {**obj, "metadata": {**metadata, "namespace": namespace or client.namespace}}
        applied.append(client.apply(obj, field_manager=field_manager, force=True))
    return applied
