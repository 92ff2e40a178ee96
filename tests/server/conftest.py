"""Fixtures: ``server``, a namespace of the test's own on the worker's shared server, or a server
of the test's own for a test marked ``@pytest.mark.fresh_server``; on the storage backend chosen
with ``--storage-backend`` (tests/conftest.py).

The shared server runs in this process (``harness.start_in_process``, what ``kubelite serve``
runs, on a thread and event loop of its own), one per xdist worker. A test sees it through
``Server.in_namespace``: a namespace made for it (deleted after it), and a kubeconfig whose
context is in that namespace; paths say ``{ns}`` for it. The shared server keeps no CRDs between
tests: the fixture deletes them after each and waits until they are gone.

A test gets a server of its own when it changes what other tests on the shared server would
see or be affected by (admission webhooks and policies that match every namespace, ClusterRole
bindings for users other tests use, Nodes, namespaces of fixed names, compaction, a global
default PriorityClass), asserts on the whole cluster (every namespace's objects, the metrics'
counters), or needs options the shared server does not have: ``fresh_server(**options)``, in this
process (options: :class:`~kubelite.server.serve.ServeOptions` fields), or
``fresh_server(subprocess=True)``, ``kubelite serve`` in a process of its own (the webhook
tests: test_admission_webhooks.py says why). Tests that signal, kill or restart a
``kubelite serve``, or test its command line, start one themselves (``harness.start_server``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import (
    Server,
    start_in_process,
    start_server,
    stop_server,
    wait_for_namespace_defaults,
)

from kubelite.testing.plugin import namespace_name

MARKER = "fresh_server"
#: test modules whose every test still gets a server of its own, as each did before the shared
#: server (to convert: their tests use the namespace the fixture gives them)
OWN_SERVER_MODULES = frozenset({"test_client_certificates.py", "test_input_bounds.py"})
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(subprocess=False, **options): the server fixture is a server of the "
        "test's own, not a namespace on the shared one: in this process (options: ServeOptions "
        "fields), or a kubelite serve subprocess",
    )


#: test modules whose behaviour no store takes part in (the listeners and their limits, a body's
#: decoding, validation and defaulting, OpenAPI and protobuf, CEL, request logs): the etcd pass
#: (``--storage-backend etcd``) leaves them out, since over etcd they would test again what
#: the SQLite pass tested
STORE_INDEPENDENT_MODULES = frozenset(
    {
        "test_cel_rules.py",
        "test_connection_limits.py",
        "test_decoding.py",
        "test_deep_bodies.py",
        "test_filters.py",
        "test_flowcontrol_units.py",
        "test_input_bounds.py",
        "test_kind_defaults_http.py",
        "test_metrics_tally.py",
        "test_openapi.py",
        "test_openapi_v2.py",
        "test_openapi_v3_http.py",
        "test_policy_typecheck_http.py",
        "test_protobuf.py",
        "test_quantities.py",
        "test_request_logs.py",
        "test_validation_core.py",
        "test_validation_kinds.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if item.path.name in OWN_SERVER_MODULES and item.path.parent == here:
            item.add_marker(pytest.mark.fresh_server)
    if config.getoption("--storage-backend") != "etcd":
        return
    kept, left = [], []
    for item in items:
        independent = item.path.parent == here and item.path.name in STORE_INDEPENDENT_MODULES
        (left if independent else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture(scope="session")
def shared_server(
    tmp_path_factory: pytest.TempPathFactory, storage_backend: str, request: pytest.FixtureRequest
) -> Iterator[Server]:
    """The worker's shared server, in this process (each xdist worker has its own): over SQLite,
    or over the session's etcd under a prefix of its own."""
    storage = None
    if storage_backend == "etcd":
        storage = f"{request.getfixturevalue('etcd').url}?prefix=/api/shared-{uuid.uuid4().hex}"
    srv = start_in_process(tmp_path_factory.mktemp("shared") / "data", storage)
    try:
        yield srv
    finally:
        stop_server(srv)


def _check(srv: Server) -> None:
    assert srv.in_process is not None
    failure = srv.in_process.failure()
    if failure is not None:
        pytest.fail(failure, pytrace=False)


@pytest.fixture
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """The test's namespace on the shared server, or (``fresh_server``) a server of its own."""
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        storage = request.getfixturevalue("storage_url")
        options = dict(marker.kwargs)
        if options.pop("subprocess", False):
            assert not options, f"a subprocess server takes no ServeOptions: {options}"
            srv = start_server(tmp_path / "data", storage)
        else:
            srv = start_in_process(tmp_path / "data", storage, **options)
        try:
            yield srv
        finally:
            stop_server(srv)
        return
    shared: Server = request.getfixturevalue("shared_server")
    _check(shared)
    namespace = namespace_name(request.node.name)
    code, body = shared.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    assert code == 201, body
    wait_for_namespace_defaults(shared, namespace)
    try:
        yield shared.in_namespace(namespace, tmp_path)
        _check(shared)
    finally:
        remove_custom_resource_definitions(shared)
        shared.request("DELETE", f"/api/v1/namespaces/{namespace}")


def remove_custom_resource_definitions(srv: Server) -> None:
    """Delete the CRDs a test made on the shared server (which has none of its own), and wait
    until they are gone: the next test may define the same kinds with other schemas."""
    code, crds = srv.request("GET", CRDS)
    assert code == 200, crds
    names = [crd["metadata"]["name"] for crd in crds["items"]]  # type: ignore[union-attr, index]
    for name in names:
        srv.request("DELETE", f"{CRDS}/{name}")
    deadline = time.monotonic() + 30
    while names:
        assert time.monotonic() < deadline, f"CRDs {names} were never removed"
        time.sleep(0.02)
        names = [name for name in names if srv.request("GET", f"{CRDS}/{name}")[0] != 404]
