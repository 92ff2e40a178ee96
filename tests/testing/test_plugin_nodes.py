"""The plugin's simulated nodes in a project of its own (pytester): ``nodes=`` on the marker in
either mode, the one Node every server has by default, and a bad count refused as a usage
error."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "kubelite.testing", "-p", "no:cacheprovider")

MARKED = """
import pytest
from kubelite.testing import wait_for

def ready_nodes(kubelite):
    with kubelite.client() as client:
        names = [n["metadata"]["name"] for n in client.list("v1", "Node")["items"]]
        for name in names:
            wait_for(client, "v1", "Node", name, "condition=Ready", timeout=20)
    return names

@pytest.mark.kubelite(fresh=True, mode="in-process", nodes=3)
def test_in_process(kubelite):
    assert ready_nodes(kubelite) == ["kubelite-worker", "kubelite-worker2", "kubelite-worker3"]

@pytest.mark.kubelite(fresh=True, mode="subprocess", nodes=2)
def test_subprocess(kubelite):
    assert ready_nodes(kubelite) == ["kubelite-worker", "kubelite-worker2"]

@pytest.mark.kubelite(fresh=True, nodes=0)
def test_none(kubelite):
    assert ready_nodes(kubelite) == []

def test_the_session_server_has_one(kubelite):
    assert ready_nodes(kubelite) == ["kubelite-worker"]
"""


def test_the_marker_says_how_many_nodes_the_server_registers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MARKED)
    pytester.runpytest_subprocess(*PLUGIN).assert_outcomes(passed=4)


BAD = """
import pytest

@pytest.mark.kubelite(fresh=True, nodes=-1)
def test_bad(kubelite):
    pass
"""


def test_a_bad_node_count_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(BAD)
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.stdout.fnmatch_lines(["*@pytest.mark.kubelite(nodes=-1): 0 or more, e.g. 3*"])
    result.assert_outcomes(errors=1)
