"""kubelite for tests: a pytest plugin with a real Kubernetes API server in well under a second.

Loaded through its ``pytest11`` entry point once kubelite is installed (or ``-p kubelite.testing``):

- fixture ``kubelite``: a running server (``.url``, ``.token``, ``.kubeconfig``, ``.ca_cert``,
  ``.client()``, ``.async_client()``, ``.kubectl(...)``, ``.log()``), shared by the session;
  ``@pytest.mark.kubelite(fresh=True)`` gives a test a server of its own;
- fixture ``kubelite_namespace``: a fresh namespace per test, deleted afterwards;
- :func:`wait_for` / :func:`wait_for_async`: ``kubectl wait --for=...`` on an object;
- :func:`load_manifests`: apply YAML files and CRDs, waiting until the CRDs' kinds are served;
- :func:`start_server` / :func:`serving`: servers outside the fixtures (several, other scopes).

docs/testing.md has recipes for the kubernetes client, kubernetes_asyncio, lightkube, kr8s and
kopf. Importing this module imports pytest; ``import kubelite`` does not import it.
"""

from kubelite.testing.manifests import load_manifests, read_manifests, wait_for_kinds
from kubelite.testing.plugin import (
    kubelite,
    kubelite_namespace,
    kubelite_session,
    pytest_addoption,
    pytest_configure,
    pytest_runtest_call,
)
from kubelite.testing.servers import (
    InProcessServer,
    KubeliteServer,
    ServerFailed,
    SubprocessServer,
    serving,
    start_server,
)
from kubelite.testing.waiting import WaitTimeout, state_check, wait_for, wait_for_async

__all__ = [
    "InProcessServer",
    "KubeliteServer",
    "ServerFailed",
    "SubprocessServer",
    "WaitTimeout",
    "kubelite",
    "kubelite_namespace",
    "kubelite_session",
    "load_manifests",
    "pytest_addoption",
    "pytest_configure",
    "pytest_runtest_call",
    "read_manifests",
    "serving",
    "start_server",
    "state_check",
    "wait_for",
    "wait_for_async",
    "wait_for_kinds",
]
