"""The plugin's fault injection in projects of their own (pytester): ``inject=`` on the marker
(either mode), ``--kubelite-inject`` and the ``kubelite_inject`` ini option for every server, the
counts a test reads back, and a bad spec refused as a usage error."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "kubelite.testing", "-p", "no:cacheprovider")


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(source)
    return pytester.runpytest_subprocess(*PLUGIN, *args)


MARKED = """
import pytest
from kubelite.client import Conflict

def write_twice(kubelite):
    with kubelite.client(namespace="default") as client:
        cm = client.create({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "cm"}, "data": {"a": "1"}})
        cm["data"]["a"] = "2"
        try:
            client.update(cm)
        except Conflict as exc:
            return exc.message
        return None

@pytest.mark.kubelite(fresh=True, mode="in-process", inject="conflicts=1")
def test_in_process(kubelite):
    message = write_twice(kubelite)
    assert message.endswith(": the object has been modified; please apply your changes to "
                            "the latest version and try again")
    assert kubelite.injected_faults()["conflict"] == 1

@pytest.mark.kubelite(fresh=True, mode="subprocess", inject="conflicts=1,seed=2")
def test_subprocess(kubelite):
    assert write_twice(kubelite) is not None
    assert kubelite.injected_faults() == {
        "conflict": 1, "watch_end": 0, "watch_expired": 0, "slow": 0}
    assert "injecting faults: 409 Conflict on 100%" in kubelite.log()

def test_the_session_server_injects_nothing(kubelite):
    assert write_twice(kubelite) is None
    assert kubelite.injected_faults() == {}
"""


def test_the_marker_injects_faults_into_the_tests_own_server(pytester: pytest.Pytester) -> None:
    run(pytester, MARKED).assert_outcomes(passed=3)


EVERY_SERVER = """
import pytest

def slowed(kubelite):
    before = kubelite.injected_faults()["slow"]
    with kubelite.client(namespace="default") as client:
        client.list("v1", "ConfigMap")
    return kubelite.injected_faults()["slow"] - before

def test_session(kubelite):
    assert slowed(kubelite) >= 1

@pytest.mark.kubelite(fresh=True)
def test_fresh_too(kubelite):
    assert slowed(kubelite) >= 1

@pytest.mark.kubelite(fresh=True, inject="")
def test_but_not_when_the_marker_says_none(kubelite):
    assert kubelite.injected_faults() == {}
"""


def test_the_option_injects_faults_into_every_server(pytester: pytest.Pytester) -> None:
    run(pytester, EVERY_SERVER, "--kubelite-inject=slow=1:1ms").assert_outcomes(passed=3)


def test_the_ini_option_does_too(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nkubelite_inject = slow=1:1ms\n")
    run(pytester, EVERY_SERVER).assert_outcomes(passed=3)


BAD = """
import pytest

@pytest.mark.kubelite(fresh=True, inject="conflicts=lots")
def test_bad(kubelite):
    pass

@pytest.mark.kubelite(inject="conflicts=0.1")
def test_shared(kubelite):
    pass
"""


def test_a_bad_spec_or_a_shared_server_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = run(pytester, BAD)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*kubelite inject='conflicts=lots': conflicts takes a probability from 0 to 1, "
            "e.g. conflicts=0.1, not 'lots'*"
        ]
    )
    result.stdout.fnmatch_lines(["*needs fresh=True*"])
