"""The plugin's helpers on their own (pytester projects): wait_for and wait_for_async in each
kubectl spelling and their timeout error, load_manifests with a CRD and its object in one file,
and wait_for_kinds."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "kubelite.testing", "-p", "no:cacheprovider")

HELPERS = '''
import asyncio
import threading
import time

import pytest

from kubelite.testing import WaitTimeout, load_manifests, wait_for, wait_for_async, wait_for_kinds

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"phase": "a"}}


def test_states_in_kubectl_spellings(kubelite, kubelite_namespace):
    with kubelite.client() as client:
        client.create({**CM, "metadata": {"name": "cm", "namespace": kubelite_namespace}})
        found = wait_for(client, "v1", "ConfigMap", "cm", "create", namespace=kubelite_namespace)
        assert found["data"] == {"phase": "a"}

        def later():
            time.sleep(0.3)
            with kubelite.client() as other:
                other.patch("v1", "ConfigMap", "cm", {"data": {"phase": "b"}},
                            namespace=kubelite_namespace)
                time.sleep(0.3)
                other.delete("v1", "ConfigMap", "cm", namespace=kubelite_namespace)

        threading.Thread(target=later).start()
        got = wait_for(client, "v1", "ConfigMap", "cm", "jsonpath={.data.phase}=b",
                       namespace=kubelite_namespace, timeout=20)
        assert got["data"]["phase"] == "b"
        assert wait_for(client, "v1", "ConfigMap", "cm", "delete",
                        namespace=kubelite_namespace, timeout=20) is None


def test_timeout_shows_the_last_read(kubelite, kubelite_namespace):
    with kubelite.client() as client:
        client.create({**CM, "metadata": {"name": "cm", "namespace": kubelite_namespace}})
        with pytest.raises(WaitTimeout) as caught:
            wait_for(client, "v1", "ConfigMap", "cm", "condition=Ready",
                     namespace=kubelite_namespace, timeout=0.3)
    text = str(caught.value)
    assert text.startswith(
        f"timed out waiting for ConfigMap {kubelite_namespace}/cm to be 'condition=Ready'"
    )
    assert '"phase": "a"' in text
    assert caught.value.last["metadata"]["name"] == "cm"


def test_wait_for_async_with_a_predicate(kubelite, kubelite_namespace):
    async def main():
        async with kubelite.async_client() as client:
            await client.create({**CM, "metadata": {"name": "cm", "namespace": kubelite_namespace}})
            return await wait_for_async(client, "v1", "ConfigMap", "cm",
                                        lambda cm: cm["data"]["phase"] == "a",
                                        namespace=kubelite_namespace)

    assert asyncio.run(main())["metadata"]["name"] == "cm"


def test_a_crd_and_its_object_from_one_file(kubelite, kubelite_namespace, tmp_path):
    manifest = tmp_path / "app.yaml"
    manifest.write_text("""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1}
spec: {size: 3}
""")
    with kubelite.client() as client:
        applied = load_manifests(client, manifest, namespace=kubelite_namespace)
        assert [o["kind"] for o in applied] == ["CustomResourceDefinition", "Gadget"]
        wait_for_kinds(client, [("example.com/v1", "Gadget")])
        gadget = client.get("example.com/v1", "Gadget", "g1", kubelite_namespace)
    assert gadget["spec"] == {"size": 3}
    assert gadget["metadata"]["namespace"] == kubelite_namespace
'''


def test_helpers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(HELPERS)
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=4)
