"""The plugin's fixtures in projects of their own (pytester): one server per session, a fresh
one for a marked test, either mode, a namespace per test, and a server that dies failing the
test with its log."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "kubelite.testing", "-p", "no:cacheprovider")


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(source)
    return pytester.runpytest_subprocess(*PLUGIN, *args)


SHARING = """
import pytest
seen = []

def test_one(kubelite):
    seen.append(kubelite.url)

def test_two(kubelite):
    seen.append(kubelite.url)
    assert seen[0] == seen[1]

@pytest.mark.kubelite(fresh=True)
def test_fresh(kubelite):
    assert kubelite.url != seen[0]
    with kubelite.client() as client:
        names = [ns["metadata"]["name"] for ns in client.list("v1", "Namespace")["items"]]
    assert sorted(names) == ["default", "kube-node-lease", "kube-public", "kube-system"]
"""


def test_the_session_shares_one_server_and_a_marked_test_gets_its_own(
    pytester: pytest.Pytester,
) -> None:
    run(pytester, SHARING).assert_outcomes(passed=3)


MODES = """
import pytest

def test_mode(kubelite, pytestconfig):
    assert kubelite.mode == pytestconfig.getoption("--kubelite-mode")
    with kubelite.client() as client:
        assert client.get("v1", "Namespace", "default")["metadata"]["name"] == "default"

@pytest.mark.kubelite(fresh=True, mode="subprocess")
def test_marked_subprocess(kubelite):
    assert kubelite.mode == "subprocess"
    assert kubelite.process.poll() is None
"""


@pytest.mark.parametrize("mode", ["in-process", "subprocess"])
def test_either_mode_serves(pytester: pytest.Pytester, mode: str) -> None:
    run(pytester, MODES, f"--kubelite-mode={mode}").assert_outcomes(passed=2)


NAMESPACES = """
import pytest
made = []

def test_namespace_exists(kubelite, kubelite_namespace):
    made.append(kubelite_namespace)
    with kubelite.client() as client:
        ns = client.get("v1", "Namespace", kubelite_namespace)
    assert ns["status"]["phase"] == "Active"
    assert kubelite_namespace.startswith("test-namespace-exists-")

def test_namespace_is_deleted_afterwards(kubelite, kubelite_namespace):
    assert kubelite_namespace != made[0]
    with kubelite.client() as client:
        try:
            phase = client.get("v1", "Namespace", made[0])["status"]["phase"]
        except Exception as exc:
            assert type(exc).__name__ == "NotFound"
        else:
            assert phase == "Terminating"
"""


def test_each_test_gets_a_namespace_deleted_after_it(pytester: pytest.Pytester) -> None:
    run(pytester, NAMESPACES).assert_outcomes(passed=2)


CRASHES = """
import pytest

@pytest.mark.kubelite(fresh=True, mode="subprocess")
def test_killed_subprocess(kubelite):
    kubelite.process.kill()
    kubelite.process.wait()

@pytest.mark.kubelite(fresh=True, mode="in-process")
def test_stopped_loop(kubelite):
    kubelite._loop.call_soon_threadsafe(kubelite._loop.stop)
    kubelite._thread.join(10)
"""


def test_a_server_that_dies_fails_the_test_with_its_log(pytester: pytest.Pytester) -> None:
    result = run(pytester, CRASHES)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*kubelite serve (https://127.0.0.1:*) exited with -9*"])
    result.stdout.fnmatch_lines(["*kubelite (https://127.0.0.1:*) stopped:*"])
    result.stdout.fnmatch_lines(["*Event loop stopped before Future completed*"])
