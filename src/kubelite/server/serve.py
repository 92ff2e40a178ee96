"""``kubelite serve``: bind, open the store, write the kubeconfig, serve HTTP until told to stop.

The data directory (mode 0700, locked by one server at a time) holds the SQLite database
(``state.db``, 0600), the admin token (``token``, 0600, generated on first start), the CA and
serving certificate, a ``kubeconfig`` that kubectl and the client libraries accept as-is, and
``client-cert-server``: the URL of the listener that takes x509 client certificates
(:mod:`kubelite.server.clientcerts`; ``kubelite kubeconfig --user`` names it).
Servers over one etcd share one CA and token (:mod:`kubelite.server.credentials`).
SIGINT/SIGTERM stop accepting, end watch streams, finish in-flight requests and close the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kubelite.api.catalogue import load_builtin_catalogue
from kubelite.api.controllers.leaderelection import ElectionConfig
from kubelite.api.kinds.core.serviceallocation import ServiceRanges
from kubelite.api.machinery.retention import resolve_retention
from kubelite.api.simulation.config import Simulation
from kubelite.server.assembly import assemble
from kubelite.server.audit import AuditLog
from kubelite.server.auditpolicy import PolicyError, load_policy
from kubelite.server.clientcerts import ClientCertListener
from kubelite.server.credentials import share_credentials
from kubelite.server.faults import FaultSpec
from kubelite.server.http import serve_http
from kubelite.server.kubeconfigs import CLIENT_CERT_SERVER, load_or_create_token, write_kubeconfig
from kubelite.server.listening import HEADER_READ_SECONDS, ConnectionBudget, raise_open_file_limit
from kubelite.server.overload import Limits
from kubelite.server.startup import (
    StartupError,
    bind,
    check_tls_names,
    hold_data_dir,
    open_store_checked,
    private_file,
)
from kubelite.server.tls import (
    ServingFiles,
    ensure_ca,
    ensure_serving_files,
)
from kubelite.storage import Retention, StoreOptions

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    data_dir: str = "./kubelite-data"
    bind_address: str = "127.0.0.1"
    port: int = 6443
    #: the client-certificate listener's port (None: the next port, or a free one with port 0)
    client_cert_port: int | None = None
    storage: str | None = None
    history_seconds: float = 300.0
    history_revisions: int = 1000
    service_ranges: ServiceRanges = field(default_factory=ServiceRanges)
    tls_sans: tuple[str, ...] = ()
    advertise_address: str | None = None
    #: serve /metrics and time the store's calls
    metrics: bool = True
    audit_log_path: str | None = None
    audit_policy_file: str | None = None
    limits: Limits = field(default_factory=Limits)
    #: "RBAC" or "AlwaysAllow" (:data:`kubelite.server.assembly.AUTHORIZATION_MODES`)
    authorization_mode: str = "RBAC"
    #: the controller manager's Lease (``--leader-elect-*``; kube's durations by default)
    leader_election: ElectionConfig = field(default_factory=ElectionConfig)
    #: ``--history-retention``: the resources whose past versions are kept beyond compaction,
    #: by their spelling on the command line
    #: (:func:`kubelite.api.machinery.retention.parse_retention`)
    history_retention: Mapping[str, Retention] = field(default_factory=dict)
    #: faults injected into the API's answers (``--inject``; None: nothing is injected)
    faults: FaultSpec | None = None
    #: kube's ReadHeaderTimeout on every listener (:mod:`kubelite.server.listening`); kube has
    #: no flag for it, and kubelite's is hidden: tests shorten it to see it act
    header_read_seconds: float = HEADER_READ_SECONDS
    #: the simulated cluster: nodes registered at start, their capacity, back-off scale
    simulation: Simulation = field(default_factory=Simulation)
    #: the pod garbage collector's ``terminated_pod_threshold``, ``gc_period`` and
    #: ``quarantine`` (kube's 12500, 20 s, 40 s by default); hidden: tests shorten them
    pod_gc: Mapping[str, float] = field(default_factory=dict)


def prepare_data_dir(options: ServeOptions) -> tuple[Path, str, ServingFiles]:
    """The data directory, the admin token and the TLS files, each made on first start."""
    data_dir = Path(options.data_dir).absolute()
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return (
        data_dir,
        load_or_create_token(data_dir),
        ensure_serving_files(data_dir, options.bind_address, options.tls_sans),
    )


def advertised_host(options: ServeOptions) -> str:
    """The host the kubeconfig names: ``--advertise-address``, else the bind address, except
    that a wildcard bind (0.0.0.0, ::) is reached on this machine's loopback."""
    if options.advertise_address:
        return options.advertise_address
    wildcard = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}
    return wildcard.get(options.bind_address, options.bind_address)


def announce(server_url: str, kubeconfig: Path) -> None:
    """What ``kubelite serve`` prints once it accepts connections (tests and tools read it)."""
    print(f"kubelite serving on {server_url}", flush=True)
    print(f"export KUBECONFIG={kubeconfig}", flush=True)


async def serve(
    options: ServeOptions,
    *,
    on_ready: Callable[[str, Path], None] = announce,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM, or until ``stop`` is set when given (the testing plugin's
    in-process server runs this on a thread of its own). ``on_ready(url, kubeconfig)`` runs once
    the socket listens and the kubeconfig is written. The audit policy is read, the data
    directory locked and the socket bound before the store opens; a :class:`StartupError` says
    in one line why the server could not start."""
    check_tls_names(options.tls_sans)
    with contextlib.ExitStack() as held:
        audit = open_audit_log(options)
        if audit is not None:
            held.callback(audit.close)
        data_dir = hold_data_dir(options.data_dir)
        held.callback(data_dir.release)
        budget = ConnectionBudget.of(raise_open_file_limit())
        sock = bind(options.bind_address, options.port, backlog=budget.main_backlog)
        held.callback(sock.close)  # a no-op once granian served on it (serve_http detaches it)
        cert_port = options.client_cert_port
        if cert_port is None:
            cert_port = options.port + 1 if options.port else 0
        cert_sock = bind(options.bind_address, cert_port, "--client-cert-port")
        held.callback(cert_sock.close)
        await _serve(options, data_dir.path, (sock, cert_sock), budget, audit, on_ready, stop)
    if stop is None:
        print("kubelite stopped", file=sys.stderr, flush=True)


def open_audit_log(options: ServeOptions) -> AuditLog | None:
    """The audit log when both ``--audit-policy-file`` and ``--audit-log-path`` are given (as
    kube-apiserver, no policy means no auditing); a bad policy stops the start."""
    if options.audit_policy_file is None:
        return None
    try:
        policy = load_policy(options.audit_policy_file)
    except PolicyError as exc:
        raise StartupError(str(exc)) from None
    if options.audit_log_path is None:
        log.warning("--audit-policy-file without --audit-log-path: no audit log is written")
        return None
    try:
        return AuditLog(policy, options.audit_log_path)
    except OSError as exc:
        raise StartupError(f"cannot open audit log {options.audit_log_path}: {exc.strerror}")


async def _serve(
    options: ServeOptions,
    data_dir: Path,
    socks: tuple[socket.socket, socket.socket],
    budget: ConnectionBudget,
    audit: AuditLog | None,
    on_ready: Callable[[str, Path], None],
    stop: asyncio.Event | None,
) -> None:
    url = options.storage
    if url is None:
        private_file(data_dir / "state.db")
        url = f"sqlite://{data_dir}/state.db"
    catalogue = load_builtin_catalogue()
    try:
        kept = resolve_retention(options.history_retention, catalogue)
    except ValueError as exc:
        raise StartupError(str(exc)) from None
    if kept and not url.startswith("sqlite:"):
        log.warning(
            "--history-retention: only the SQLite store keeps revision history; "
            "the history subresource answers 405 on this storage"
        )
    store = await open_store_checked(
        url,
        StoreOptions(
            retention_seconds=options.history_seconds,
            min_retained_revisions=options.history_revisions,
            history_retention=kept,
        ),
    )
    try:
        token = load_or_create_token(data_dir)
        ensure_ca(data_dir)
        if not url.startswith("sqlite:"):
            await share_credentials(store, data_dir)
            token = load_or_create_token(data_dir)
        host = advertised_host(options)
        names = (*options.tls_sans, host)
        tls = ensure_serving_files(data_dir, options.bind_address, names)
        server = await assemble(
            store,
            token=token,
            service_ranges=options.service_ranges,
            metrics=options.metrics,
            audit=audit,
            limits=options.limits,
            authorization_mode=options.authorization_mode,
            ca_pem=tls.ca_cert.read_text(),
            leader_election=options.leader_election,
            catalogue=catalogue,
            history_retained=tuple(kept),
            faults=options.faults,
            simulation=options.simulation,
            apiserver_endpoint=(host, socks[0].getsockname()[1]),
            pod_gc_options=dict(options.pod_gc) or None,
        )
        log.info("%s", server.controllers.describe())
        if options.faults is not None:
            log.warning("%s", options.faults.describe())
        sock, cert_sock = socks
        shown = f"[{host}]" if ":" in host else host
        log.info("%s", budget.describe())
        certificates = ClientCertListener(
            server.app,
            cert_sock,
            tls,
            max_connections=budget.client_cert,
            header_read_seconds=options.header_read_seconds,
        )
        try:
            await certificates.start()
            cert_url = f"https://{shown}:{cert_sock.getsockname()[1]}"
            (data_dir / CLIENT_CERT_SERVER).write_text(cert_url + "\n")
            log.info("client certificates are authenticated on %s", cert_url)
            server_url = f"https://{shown}:{sock.getsockname()[1]}"
            kubeconfig = write_kubeconfig(data_dir, server_url, token, tls.ca_cert)
            on_ready(server_url, kubeconfig)
            await serve_http(
                server.app,
                sock,
                tls,
                on_stop=server.app.shutting_down.set,
                stop=stop,
                max_connections=budget.main,
                backlog=budget.main_backlog,
                header_read_seconds=options.header_read_seconds,
            )
        finally:
            await certificates.close()
            await server.close()
    finally:
        await store.close()
