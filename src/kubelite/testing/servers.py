"""kubelite servers for tests: in this process on a thread of its own, or a ``kubelite serve``
subprocess. Both serve HTTPS on a free port of 127.0.0.1 and write a kubeconfig that kubectl and
every client library accept, so a test cannot tell them apart except by what it costs to start.

The in-process server runs :func:`kubelite.server.serve.serve` (what ``kubelite serve`` runs) on
an event loop of its own in a daemon thread: the tests' own event loops are never blocked by it,
and it starts without a new interpreter's imports. The subprocess isolates the server's CPU and
memory from the tests' (and a crash from the test process).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import os
import re
import shutil
import ssl
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from kubelite.api.simulation.config import Simulation
from kubelite.client import AsyncClient, Client
from kubelite.server.faults import FaultSpec
from kubelite.server.kubeconfigs import user_kubeconfig
from kubelite.server.serve import ServeOptions, serve

Mode = Literal["in-process", "subprocess"]
MODES: tuple[Mode, ...] = ("in-process", "subprocess")
DEFAULT_MODE: Mode = "in-process"
#: numbers the in-process servers' threads, whose records their logs keep
_SERVER_NUMBERS = itertools.count(1)
START_TIMEOUT = 30.0
STOP_TIMEOUT = 20.0
READY_LINE = "kubelite serving on "


class ServerFailed(RuntimeError):
    """The server did not start, or stopped while in use; the message carries its log."""


class KubeliteServer(ABC):
    """A running kubelite server: where it is, how to authenticate, and clients for it."""

    mode: Mode

    def __init__(self, url: str, data_dir: Path, log_path: Path) -> None:
        self.url = url
        self.data_dir = data_dir
        self.log_path = log_path
        self.kubeconfig = data_dir / "kubeconfig"
        self.ca_cert = data_dir / "ca.crt"
        self.token = (data_dir / "token").read_text().strip()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url} data_dir={self.data_dir}>"

    def client(self, **options: Any) -> Client:
        """A new blocking :class:`~kubelite.client.Client` from the kubeconfig (close it, or use
        it in a ``with`` block); ``options`` are the client's (``namespace``, ...)."""
        return Client.from_kubeconfig(self.kubeconfig, **options)

    def async_client(self, **options: Any) -> AsyncClient:
        """A new :class:`~kubelite.client.AsyncClient`, for ``async with``."""
        return AsyncClient.from_kubeconfig(self.kubeconfig, **options)

    def user_kubeconfig(self, user: str, groups: Sequence[str] = ()) -> Path:
        """A kubeconfig that acts as ``user`` in ``groups`` (and ``system:authenticated``), as
        ``kubelite kubeconfig`` writes it: it may do what RBAC grants that user."""
        return self._write_kubeconfig(
            f"user-{user}", user_kubeconfig(self.data_dir, user, list(groups), 86400, "default")
        )

    def service_account_kubeconfig(self, namespace: str, name: str) -> Path:
        """A kubeconfig holding a token of the service account ``namespace/name`` (which must
        exist), as a pod running as it has: it may do what RBAC grants the account."""
        with self.client() as client:
            review = client.request(
                "POST",
                f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                      "spec": {"expirationSeconds": 86400}},
            )  # fmt: skip
        config = json.loads(self.kubeconfig.read_text())
        config["users"] = [{"name": name, "user": {"token": review["status"]["token"]}}]
        context = config["contexts"][0]["context"]
        context.update(user=name, namespace=namespace)
        return self._write_kubeconfig(f"sa-{namespace}-{name}", config)

    def _write_kubeconfig(self, stem: str, config: dict[str, Any]) -> Path:
        path = self.data_dir / "kubeconfigs" / f"{stem}.kubeconfig"
        path.parent.mkdir(mode=0o700, exist_ok=True)
        path.write_text(json.dumps(config, indent=2))
        path.chmod(0o600)
        return path

    def kubectl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = True,
        timeout: float = 60,
        kubeconfig: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl (next to this Python, else on PATH) against this server, as the
        administrator or with ``kubeconfig`` (a :meth:`user_kubeconfig`, say)."""
        kubectl = find_kubectl()
        # a kubectl cache of its own: kubectl caches discovery by host and port, and a later
        # server on a reused port would otherwise be served an earlier one's kinds
        env = {
            **os.environ,
            "KUBECONFIG": str(kubeconfig or self.kubeconfig),
            "KUBECACHEDIR": str(self.data_dir / "kubectl-cache"),
        }
        result = subprocess.run(
            [kubectl, *args], input=input, capture_output=True, text=True, timeout=timeout, env=env
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}"
            )
        return result

    def injected_faults(self) -> dict[str, int]:
        """How many faults the server injected so far (started with ``inject=``), by fault:
        ``conflict``, ``watch_end``, ``watch_expired``, ``slow`` (empty when it injects none).
        A test asserts on it that its code met the faults it was meant to survive."""
        context = ssl.create_default_context(cafile=str(self.ca_cert))
        request = urllib.request.Request(f"{self.url}/metrics")
        request.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(request, context=context, timeout=30) as response:
            text = response.read().decode()
        return {
            match.group(1): int(float(match.group(2)))
            for match in re.finditer(r'^kubelite_injected_faults_total\{fault="(\w+)"\} (\S+)$',
                                     text, re.MULTILINE)
        }  # fmt: skip

    def log(self) -> str:
        """What the server logged so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    @abstractmethod
    def failure(self) -> str | None:
        """None while the server runs; else why it stopped, with its log."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the server (idempotent): watches end, in-flight requests finish."""


def find_kubectl() -> str:
    beside = Path(sys.executable).with_name("kubectl")
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    if found is None:
        raise FileNotFoundError("kubectl is neither next to this Python nor on PATH")
    return found


def _log_tail(text: str, limit: int = 8000) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]


class InProcessServer(KubeliteServer):
    """``kubelite serve`` on an event loop of its own in a daemon thread of this process."""

    mode: Mode = "in-process"

    def __init__(
        self,
        url: str,
        data_dir: Path,
        log_path: Path,
        thread: threading.Thread,
        loop: asyncio.AbstractEventLoop,
        stop_event: asyncio.Event,
        errors: list[str],
        handler: logging.Handler,
    ) -> None:
        super().__init__(url, data_dir, log_path)
        self._thread = thread
        self._loop = loop
        self._stop_event = stop_event
        self._errors = errors
        self._handler = handler
        self._stopped = False

    @classmethod
    def start(cls, data_dir: Path, options: ServeOptions | None = None) -> InProcessServer:
        """A server on ``data_dir`` (made if missing); ``options`` override ServeOptions' defaults
        (the data dir and port 0 are always this call's)."""
        data_dir.mkdir(parents=True, exist_ok=True)
        options = dataclasses.replace(options or ServeOptions(), data_dir=str(data_dir), port=0)
        thread_name = f"kubelite-server-{next(_SERVER_NUMBERS)}"
        log_path = data_dir / "server.log"
        handler = logging.FileHandler(log_path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler.setLevel(logging.INFO)
        # this server's records only: several in-process servers share the kubelite logger
        handler.addFilter(lambda record: record.threadName == thread_name)
        logger = logging.getLogger("kubelite")
        if logger.getEffectiveLevel() > logging.INFO:
            logger.setLevel(logging.INFO)
        logger.addHandler(handler)
        loop = _new_loop()
        ready: Future[tuple[str, asyncio.Event]] = Future()
        errors: list[str] = []
        abandoned = threading.Event()

        async def main() -> None:
            stop_event = asyncio.Event()

            def on_ready(url: str, kubeconfig: Path) -> None:
                if abandoned.is_set():  # start() gave up waiting: stop at once
                    stop_event.set()
                    return
                ready.set_result((url, stop_event))

            await serve(options, on_ready=on_ready, stop=stop_event)

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(main())
            except BaseException as exc:
                errors.append("".join(traceback.format_exception(exc)))
                if not ready.done():
                    ready.set_exception(exc)
            finally:
                _close_loop(loop)
                if not ready.done():
                    ready.set_exception(ServerFailed("kubelite stopped before it served"))

        thread = threading.Thread(target=run, name=thread_name, daemon=True)
        thread.start()
        try:
            url, stop_event = ready.result(START_TIMEOUT)
        except BaseException as exc:
            abandoned.set()
            logging.getLogger("kubelite").removeHandler(handler)
            handler.close()
            detail = errors[0] if errors else repr(exc)
            raise ServerFailed(f"kubelite did not start:\n{detail}") from exc
        return cls(url, data_dir, log_path, thread, loop, stop_event, errors, handler)

    def failure(self) -> str | None:
        if self._thread.is_alive():
            return None
        if self._stopped and not self._errors:
            return None
        detail = self._errors[0] if self._errors else "its thread ended"
        return f"kubelite ({self.url}) stopped:\n{detail}\n--- log ---\n{_log_tail(self.log())}"

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop_event.set)
            self._thread.join(STOP_TIMEOUT)
        logging.getLogger("kubelite").removeHandler(self._handler)
        self._handler.close()


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # Windows: no uvloop
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


class SubprocessServer(KubeliteServer):
    """A ``python -m kubelite serve --port 0`` subprocess; its stderr is the log."""

    mode: Mode = "subprocess"

    def __init__(
        self, url: str, data_dir: Path, log_path: Path, process: subprocess.Popen[str]
    ) -> None:
        super().__init__(url, data_dir, log_path)
        self.process = process
        self._stopped = False

    @classmethod
    def start(cls, data_dir: Path, *serve_args: str) -> SubprocessServer:
        """``kubelite serve --port 0 --data-dir data_dir`` plus ``serve_args`` (``--storage``,
        ...); the log is ``server.log`` beside the data dir."""
        data_dir.mkdir(parents=True, exist_ok=True)
        log_path = data_dir.parent / f"{data_dir.name}.log"
        args = ["serve", "--port", "0", "--data-dir", str(data_dir), *serve_args]
        with log_path.open("w") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "kubelite", *args],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        assert process.stdout is not None
        url = ""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            if line.startswith(READY_LINE):
                url = line.split()[-1]
                break
        if not url:
            _end(process)
            raise ServerFailed(f"kubelite serve did not start:\n{_log_tail(log_path.read_text())}")
        return cls(url, data_dir, log_path, process)

    def failure(self) -> str | None:
        code = self.process.poll()
        if code is None or self._stopped:
            return None
        return f"kubelite serve ({self.url}) exited with {code}:\n{_log_tail(self.log())}"

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.process.terminate()
        _end(self.process)


def _end(process: subprocess.Popen[str]) -> None:
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


def start_server(
    data_dir: Path,
    mode: Mode = DEFAULT_MODE,
    *,
    inject: str | None = None,
    nodes: int | None = None,
) -> KubeliteServer:
    """A fresh server on ``data_dir`` in ``mode``; stop it with :meth:`KubeliteServer.stop`.
    ``inject``: the faults it injects, as ``kubelite serve --inject`` takes them
    (``conflicts=0.1,watch-drops=0.01,slow=0.05:200ms,seed=1``); a bad spec is a
    :class:`~kubelite.server.faults.FaultSpecError` (a ValueError) saying what to write.
    ``nodes``: how many simulated Nodes it registers at start (``kubelite serve --nodes``;
    None: the server's default, 1; 0: none, an empty cluster as envtest has)."""
    faults = None if inject is None else FaultSpec.parse(inject)
    if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 0):
        raise ValueError(f"nodes must be a whole number, 0 or more, not {nodes!r}")
    if mode == "in-process":
        options = ServeOptions(faults=faults)
        if nodes is not None:
            options = dataclasses.replace(options, simulation=Simulation(nodes=nodes))
        return InProcessServer.start(data_dir, options)
    if mode == "subprocess":
        args = [] if faults is None or inject is None else ["--inject", inject]
        if nodes is not None:
            args += ["--nodes", str(nodes)]
        return SubprocessServer.start(data_dir, *args)
    raise ValueError(f"mode must be one of {MODES}, not {mode!r}")


@contextmanager
def serving(
    data_dir: Path,
    mode: Mode = DEFAULT_MODE,
    *,
    inject: str | None = None,
    nodes: int | None = None,
) -> Iterator[KubeliteServer]:
    """:func:`start_server` as a context manager: the server stops on exit."""
    server = start_server(data_dir, mode, inject=inject, nodes=nodes)
    try:
        yield server
    finally:
        server.stop()
