"""The pytest fixtures, marker and options of ``kubelite.testing``.

- ``kubelite``: a running server (:class:`~kubelite.testing.servers.KubeliteServer`), one per
  session unless the test is marked ``@pytest.mark.kubelite(fresh=True)``, which gives it a
  server of its own, stopped after it.
- ``kubelite_namespace``: a new namespace's name, once it holds what a cluster's controllers put
  in every namespace (ServiceAccount ``default``, ConfigMap ``kube-root-ca.crt``); deleted
  after the test.
- ``--kubelite-mode`` (or the ``kubelite_mode`` ini option): ``in-process`` (the default: a
  thread of the test process) or ``subprocess`` (``kubelite serve``); the marker's ``mode=``
  chooses for one test (with ``fresh=True``).
- ``--kubelite-inject`` (or the ``kubelite_inject`` ini option): the faults every server
  injects (``kubelite serve --inject``: ``conflicts=0.1,watch-drops=0.01,slow=0.05:200ms``);
  the marker's ``inject=`` for one test's own server (with ``fresh=True``; ``""``: none).
- the marker's ``nodes=``: how many simulated Nodes the test's own server registers (with
  ``fresh=True``; ``kubelite serve --nodes``): ``kubelite-worker``, ``kubelite-worker2`` ...,
  Ready, with a Lease each, as a kind cluster's workers. Every server has one unless told
  otherwise; ``nodes=0`` is an empty cluster, as envtest has.

A server that stops while a test uses it fails that test, with the server's log.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from kubelite.client import NotFound
from kubelite.server.faults import FaultSpecError
from kubelite.testing.servers import DEFAULT_MODE, MODES, KubeliteServer, Mode, start_server
from kubelite.testing.waiting import WaitTimeout, wait_for

MARKER = "kubelite"
#: what kube-controller-manager puts in every namespace
NAMESPACE_DEFAULTS = (("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt"))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kubelite")
    group.addoption(
        "--kubelite-mode",
        choices=MODES,
        default=None,
        help=f"how the kubelite fixture runs its server (default: {DEFAULT_MODE})",
    )
    parser.addini("kubelite_mode", f"in-process or subprocess (default: {DEFAULT_MODE})")
    group.addoption(
        "--kubelite-inject",
        default=None,
        metavar="FAULTS",
        help="faults the kubelite servers inject, as kubelite serve --inject takes them, e.g. "
        "conflicts=0.1,watch-drops=0.01,slow=0.05:200ms,seed=1",
    )
    parser.addini("kubelite_inject", "faults the kubelite servers inject (see --kubelite-inject)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(fresh=False, mode=None, inject=None, nodes=None): fresh=True gives the test "
        "a kubelite server of its own; mode (in-process, subprocess) how that server runs; "
        "inject the faults it injects (conflicts=0.1,watch-drops=0.01,slow=0.05:200ms,seed=1); "
        "nodes how many simulated Nodes it registers (default 1; 0: none)",
    )


def _session_mode(config: pytest.Config) -> Mode:
    mode = config.getoption("--kubelite-mode") or config.getini("kubelite_mode") or DEFAULT_MODE
    if mode not in MODES:
        raise pytest.UsageError(f"kubelite_mode must be one of {MODES}, not {mode!r}")
    return mode


def _session_inject(config: pytest.Config) -> str | None:
    inject = config.getoption("--kubelite-inject") or config.getini("kubelite_inject")
    return inject or None


def _start(
    data_dir: Path, mode: Mode, inject: str | None, nodes: int | None = None
) -> KubeliteServer:
    try:
        return start_server(data_dir, mode, inject=inject, nodes=nodes)
    except FaultSpecError as exc:
        raise pytest.UsageError(f"kubelite inject={inject!r}: {exc}") from None


def _check(server: KubeliteServer) -> None:
    failure = server.failure()
    if failure is not None:
        pytest.fail(failure, pytrace=False)


@pytest.fixture(scope="session")
def kubelite_session(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KubeliteServer]:
    """The session's shared server (started on first use)."""
    server = _start(
        tmp_path_factory.mktemp("kubelite") / "data",
        _session_mode(pytestconfig),
        _session_inject(pytestconfig),
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def kubelite(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KubeliteServer]:
    """A running kubelite server: the session's, or the test's own when it is marked
    ``@pytest.mark.kubelite(fresh=True)`` (``nodes=3``: with three simulated Nodes)."""
    marker = request.node.get_closest_marker(MARKER)
    options = dict(marker.kwargs) if marker is not None else {}
    if not options.pop("fresh", False):
        if options:
            raise pytest.UsageError(f"@pytest.mark.kubelite({options}) needs fresh=True")
        server: KubeliteServer = request.getfixturevalue("kubelite_session")
        _check(server)
        yield server
        return
    mode = options.pop("mode", None) or _session_mode(request.config)
    inject = options.pop("inject", None)
    inject = _session_inject(request.config) if inject is None else inject or None
    nodes = options.pop("nodes", None)
    if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 0):
        raise pytest.UsageError(f"@pytest.mark.kubelite(nodes={nodes!r}): 0 or more, e.g. 3")
    if options:
        raise pytest.UsageError(f"unknown @pytest.mark.kubelite options: {sorted(options)}")
    server = _start(tmp_path_factory.mktemp("kubelite") / "data", mode, inject, nodes)
    try:
        yield server
    finally:
        server.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A test whose server stopped under it fails, with the server's log."""
    try:
        return (yield)
    finally:
        server = getattr(item, "funcargs", {}).get("kubelite")
        if isinstance(server, KubeliteServer):
            _check(server)


def namespace_name(test_name: str) -> str:
    """A DNS label from the test's name and a random suffix."""
    stem = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:48].strip("-")
    return f"{stem or 'test'}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kubelite_namespace(kubelite: KubeliteServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A new namespace on ``kubelite`` for this test (its name), once its ServiceAccount
    ``default`` and ConfigMap ``kube-root-ca.crt`` are there (a pod may then name the account,
    and a list of the namespace's ConfigMaps does not change under the test); deleted
    afterwards, without waiting for its contents to go."""
    name = namespace_name(request.node.name)
    with kubelite.client() as client:
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        try:
            for kind, default in NAMESPACE_DEFAULTS:
                with contextlib.suppress(WaitTimeout):  # a server without the controllers
                    wait_for(client, "v1", kind, default, "create", namespace=name, timeout=10)
            yield name
        finally:
            if kubelite.failure() is None:
                with contextlib.suppress(NotFound):
                    client.delete("v1", "Namespace", name)
