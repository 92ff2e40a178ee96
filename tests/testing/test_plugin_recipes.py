"""Every recipe of docs/testing.md runs, as written, in a project of its own through the
plugin: kubelite.client, kubectl, the kubernetes client, kubernetes_asyncio, lightkube, kr8s,
a service account held to its RBAC, a kopf operator under KopfRunner, and a test under injected
conflicts."""

from __future__ import annotations

import pytest
from recipes import PYTEST_INI, recipe_files, write_project

pytest_plugins = ["pytester"]


def test_the_document_has_a_recipe_for_each_client() -> None:
    tests = [path for path in recipe_files() if "/test_" in path]
    assert tests == [
        "tests/test_basics.py",
        "tests/test_kubernetes_client.py",
        "tests/test_kubernetes_asyncio.py",
        "tests/test_lightkube.py",
        "tests/test_kr8s.py",
        "tests/test_rbac.py",
        "tests/test_operator.py",
        "tests/test_workloads.py",
        "tests/test_faults.py",
    ]


@pytest.mark.timeout(180)
def test_every_recipe_passes(pytester: pytest.Pytester) -> None:
    tests = write_project(pytester.path)
    pytester.makeini(PYTEST_INI)
    result = pytester.runpytest_subprocess(
        "-p", "kubelite.testing", "-p", "no:cacheprovider", *tests
    )
    result.assert_outcomes(passed=12)
