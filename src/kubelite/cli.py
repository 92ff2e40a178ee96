"""The ``kubelite`` command: parses arguments and calls the library; no logic of its own."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from kubelite.server.overload import Limits

# Each command imports what it needs when it runs: `kubelite serve` starts faster without the
# client's HTTP stack, and `kubelite compact` without the server's.


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kubelite", description="A Kubernetes-compatible API server."
    )
    parser.add_argument("--version", action="version", version=f"kubelite {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve", help="run the API server")
    s.add_argument("--data-dir", default="./kubelite-data", help="database, token and kubeconfig")
    s.add_argument("--bind-address", default="127.0.0.1")
    s.add_argument("--port", type=int, default=6443, help="0 picks a free port")
    s.add_argument(
        "--client-cert-port",
        type=int,
        default=None,
        help="where x509 client certificates are authenticated (default: --port + 1; "
        "a free port with --port 0)",
    )
    s.add_argument("--storage", default=None, help="storage URL (default: SQLite in the data dir)")
    s.add_argument(
        "--history-seconds",
        type=float,
        default=300.0,
        help="keep at least this much history for watches (seconds)",
    )
    s.add_argument(
        "--history-revisions",
        type=int,
        default=1000,
        help="keep at least this many revisions of history",
    )
    s.add_argument(
        "--history-retention",
        type=_retention,
        default={},
        metavar="RESOURCE=LIMIT,...",
        help="keep past versions of these resources beyond compaction (SQLite store), read with "
        "`kubelite history`: a count per object or an age, e.g. configmaps=7d,deployments=100 "
        "(default: none)",
    )
    s.add_argument(
        "--service-cluster-ip-range",
        default="10.96.0.0/12",
        help="the range Service cluster IPs are allocated from",
    )
    s.add_argument(
        "--service-node-port-range",
        default="30000-32767",
        help="the range Service node ports are allocated from",
    )
    s.add_argument(
        "--tls-san",
        action="append",
        default=[],
        metavar="NAME",
        help="another DNS name or IP for the serving certificate (repeat, or comma-separate)",
    )
    s.add_argument(
        "--advertise-address",
        default=None,
        help="the address the kubeconfig names (default: the bind address; 127.0.0.1 for 0.0.0.0)",
    )
    s.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="debug adds a line per request (kube's httplog, klog -v=3)",
    )
    s.add_argument("--log-format", choices=("text", "json"), default="text")
    s.add_argument(
        "--metrics",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="serve /metrics and time the store's calls",
    )
    s.add_argument(
        "--audit-log-path",
        default=None,
        metavar="PATH",
        help="write audit events here, one JSON Event a line ('-': standard output)",
    )
    s.add_argument(
        "--audit-policy-file",
        default=None,
        metavar="PATH",
        help="the audit.k8s.io/v1 Policy that picks each request's level",
    )
    s.add_argument(
        "--max-requests-inflight",
        type=int,
        default=400,
        help="with priority and fairness, summed with --max-mutating-requests-inflight into the "
        "server's concurrency limit; without, the read-only requests served at once, beyond "
        "which 429 (0: no limit; watches exempt)",
    )
    s.add_argument(
        "--max-mutating-requests-inflight",
        type=int,
        default=200,
        help="with priority and fairness, summed with --max-requests-inflight; without, the "
        "mutating requests served at once, beyond which 429 (0: no limit)",
    )
    s.add_argument(
        "--enable-priority-and-fairness",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        metavar="BOOL",
        help="true: API Priority and Fairness (FlowSchemas, priority levels, fair queuing per "
        "user); false: the max-in-flight limits",
    )
    s.add_argument(
        "--request-timeout",
        type=_duration,
        default=60.0,
        help="how long a request (not a watch) may take, body included, e.g. 1m0s or 30s",
    )
    s.add_argument(
        "--authorization-mode",
        choices=("RBAC", "AlwaysAllow"),
        default="RBAC",
        help="RBAC: system:masters may do anything, others what Roles and bindings grant; "
        "AlwaysAllow: every authenticated request is allowed",
    )
    s.add_argument(
        "--leader-elect-lease-duration",
        type=_duration,
        default=15.0,
        help="how long a candidate waits, after it last saw the controller manager's Lease "
        "renewed, before taking it over, e.g. 15s",
    )
    s.add_argument(
        "--leader-elect-renew-deadline",
        type=_duration,
        default=10.0,
        help="how long the leader retries renewing its Lease before it stops leading, e.g. 10s",
    )
    s.add_argument(
        "--leader-elect-retry-period",
        type=_duration,
        default=2.0,
        help="how often candidates try the Lease and the leader renews it, e.g. 2s",
    )
    s.add_argument(
        "--inject",
        default=None,
        metavar="FAULTS",
        help="inject faults for testing clients, e.g. conflicts=0.1,watch-drops=0.01,"
        "slow=0.05:200ms,seed=1: a share of writes that carry a resourceVersion answered 409, "
        "of watch events after which the stream ends (cleanly or with 410), of requests "
        "delayed; never changes stored state",
    )
    s.add_argument(
        "--nodes",
        type=_node_count,
        default=1,
        help="simulated Nodes registered at start (0: none, as envtest; a Node created with "
        "annotation kubelite.dev/simulated=true is simulated too)",
    )
    s.add_argument(
        "--node-capacity",
        default="",
        metavar="RESOURCES",
        help="each simulated node's capacity over the defaults cpu=8,memory=16Gi,"
        "ephemeral-storage=100Gi,pods=110, e.g. cpu=4,memory=8Gi",
    )
    s.add_argument(
        "--simulate-backoff-scale",
        type=float,
        default=1.0,
        metavar="FACTOR",
        help="multiply simulated CrashLoopBackOff and Job back-off waits (e.g. 0.01 in tests)",
    )
    # kube's ReadHeaderTimeout (32 s) has no flag; this hidden one lets tests see it act
    s.add_argument("--read-header-timeout", type=_duration, default=None, help=argparse.SUPPRESS)
    k = sub.add_parser(
        "kubeconfig",
        help="print a kubeconfig that acts as a user in groups (for testing RBAC)",
        description="Writes a kubeconfig for the server of --data-dir whose credential is an "
        "x509 client certificate the server's CA signs (CN --user, an O per --group), "
        "authenticating as --user in each --group (and system:authenticated) on the server's "
        "client-certificate port. What the user may do is what RBAC grants it.",
    )
    k.add_argument("--user", required=True, type=_user_name, help="the user name, e.g. alice")
    k.add_argument("--group", action="append", default=[], help="a group of the user (repeatable)")
    k.add_argument("--data-dir", default="./kubelite-data", help="the server's data dir")
    k.add_argument("--namespace", default="default", help="the context's namespace")
    k.add_argument("--expiration", type=_validity, default=365 * 86400.0, help="validity, e.g. 24h")
    k.add_argument("-o", "--output", default=None, help="write here (mode 0600), not stdout")
    c = sub.add_parser("compact", help="drop the server's history below a revision")
    c.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG") or "./kubelite-data/kubeconfig"
    )
    c.add_argument("--revision", type=int, required=True)
    h = sub.add_parser(
        "history",
        help="an object's past versions, kept beyond compaction (serve --history-retention)",
        description="Prints the timeline of an object's writes (revision, time, manager, "
        "operation), deletions included, from the server's history subresource; --diff adds "
        "the field changes between consecutive versions.",
    )
    h.add_argument("object", metavar="KIND/NAME", help="e.g. configmap/app, deployments.apps/web")
    h.add_argument("-n", "--namespace", default=None, help="default: the kubeconfig's")
    h.add_argument("--diff", action="store_true", help="show the field changes of each write")
    h.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG") or "./kubelite-data/kubeconfig"
    )
    d = sub.add_parser("demo", help="narrated demonstrations on a live server")
    demos = d.add_subparsers(dest="demo", required=True)
    dc = demos.add_parser(
        "conflict",
        help="two editors and a 409, then many writers and no lost update",
        description="Starts a throwaway kubelite server, unless --kubeconfig names a kubelite "
        "server to run on (any other server is refused).",
    )
    dc.add_argument(
        "--kubeconfig",
        default=None,
        help="run on this server, which must be kubelite (KUBECONFIG is ignored on purpose)",
    )
    dc.add_argument("--writers", type=int, default=16, help="concurrent writers in act 2")
    dc.add_argument("--updates", type=int, default=10, help="updates per writer in act 2")
    snap = sub.add_parser("snapshot", help="back up or restore the SQLite store")
    snaps = snap.add_subparsers(dest="snapshot", required=True)
    ss = snaps.add_parser(
        "save",
        help="a consistent copy of the store, taken while the server runs",
        description="Copies the data dir's SQLite store with SQLite's backup API. For an etcd "
        "store use `etcdctl snapshot save`.",
    )
    ss.add_argument("file")
    ss.add_argument("--data-dir", default="./kubelite-data")
    sr = snaps.add_parser("restore", help="put a saved copy in place (server stopped)")
    sr.add_argument("file")
    sr.add_argument("--data-dir", required=True)
    args = parser.parse_args(argv)
    if args.command == "serve":
        import uvloop

        from kubelite.api.controllers.leaderelection import ElectionConfig
        from kubelite.api.kinds.core.serviceallocation import ServiceRanges
        from kubelite.api.simulation.config import Simulation
        from kubelite.server import logs
        from kubelite.server.listening import HEADER_READ_SECONDS
        from kubelite.server.overload import Limits
        from kubelite.server.serve import ServeOptions, serve
        from kubelite.server.startup import StartupError

        logs.configure(args.log_level, args.log_format)

        try:
            ranges = ServiceRanges.parse(
                args.service_cluster_ip_range, args.service_node_port_range
            )
        except ValueError as exc:
            print(f"kubelite: {exc}", file=sys.stderr)
            return 2
        faults = None
        if args.inject is not None:
            from kubelite.server.faults import FaultSpec, FaultSpecError

            try:
                faults = FaultSpec.parse(args.inject)
            except FaultSpecError as exc:
                print(f"kubelite: --inject {args.inject!r}: {exc}", file=sys.stderr)
                return 2
        limits = Limits(
            args.max_requests_inflight,
            args.max_mutating_requests_inflight,
            args.request_timeout,
            args.enable_priority_and_fairness,
        )
        limits_error = _limits_error(limits)
        if limits_error:
            print(f"kubelite: {limits_error}", file=sys.stderr)
            return 2
        election = ElectionConfig(
            args.leader_elect_lease_duration,
            args.leader_elect_renew_deadline,
            args.leader_elect_retry_period,
        )
        try:
            election.check()
        except ValueError as exc:
            print(f"kubelite: leader election: {exc}", file=sys.stderr)
            return 2
        try:
            capacity = Simulation.parse_capacity(args.node_capacity)
        except ValueError as exc:
            print(f"kubelite: --node-capacity: {exc}", file=sys.stderr)
            return 2
        if args.simulate_backoff_scale <= 0:
            print("kubelite: --simulate-backoff-scale must be above 0, e.g. 0.01", file=sys.stderr)
            return 2
        simulation = Simulation(args.nodes, capacity, args.simulate_backoff_scale)
        options = ServeOptions(
            data_dir=args.data_dir,
            bind_address=args.bind_address,
            port=args.port,
            client_cert_port=args.client_cert_port,
            storage=args.storage,
            history_seconds=args.history_seconds,
            history_revisions=args.history_revisions,
            service_ranges=ranges,
            tls_sans=tuple(n for names in args.tls_san for n in names.split(",") if n),
            advertise_address=args.advertise_address,
            metrics=args.metrics,
            audit_log_path=args.audit_log_path,
            audit_policy_file=args.audit_policy_file,
            limits=limits,
            authorization_mode=args.authorization_mode,
            leader_election=election,
            history_retention=args.history_retention,
            faults=faults,
            header_read_seconds=args.read_header_timeout or HEADER_READ_SECONDS,
            simulation=simulation,
        )
        try:
            uvloop.run(serve(options))
        except StartupError as exc:
            print(f"kubelite: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            pass
        _exit_now()
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.command == "compact":
        from kubelite.client.admin import AdminError, compact
        from kubelite.client.kubeconfig import KubeconfigError, load_connection

        try:
            result = compact(load_connection(args.kubeconfig), args.revision)
        except (AdminError, KubeconfigError) as exc:
            print(f"kubelite: {exc}", file=sys.stderr)
            return 1
        print(result.get("message", result))
        return 0
    if args.command == "history":
        return _history(args)
    if args.command == "demo":
        from kubelite.client.demo import run_conflict_demo  # rich loads only for the demo

        return run_conflict_demo(args.kubeconfig, args.writers, args.updates)
    if args.command == "snapshot":
        return _snapshot(args)
    if args.command == "kubeconfig":
        return _kubeconfig(args)
    return 2


def _history(args: argparse.Namespace) -> int:
    from kubelite.client import Client
    from kubelite.client.errors import ApiError
    from kubelite.client.history import HistoryError, fetch, timeline
    from kubelite.client.kubeconfig import KubeconfigError, load_connection

    kind, _, name = args.object.partition("/")
    if not kind or not name or "/" in name:
        print(f"kubelite: expected KIND/NAME, not {args.object!r}", file=sys.stderr)
        return 2
    try:
        with Client(load_connection(args.kubeconfig), timeout=60) as client:
            items = fetch(client, kind, name, args.namespace)
    except (ApiError, HistoryError, KubeconfigError, OSError) as exc:
        print(f"kubelite: {exc}", file=sys.stderr)
        return 1
    print(timeline(items, diff=args.diff))
    return 0


def _kubeconfig(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from kubelite.server.kubeconfigs import user_kubeconfig
    from kubelite.server.startup import StartupError

    try:
        config = user_kubeconfig(
            Path(args.data_dir), args.user, args.group, args.expiration, args.namespace
        )
    except StartupError as exc:
        print(f"kubelite: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(config, indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
        return 0
    fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return 0


def _snapshot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kubelite.server.startup import StartupError, hold_data_dir
    from kubelite.storage.sqlite.snapshot import SnapshotError, restore, save

    try:
        if args.snapshot == "save":
            database = Path(args.data_dir).expanduser() / "state.db"
            revision = save(database, Path(args.file))
            print(f"saved {database} at revision {revision} to {args.file}")
            return 0
        held = hold_data_dir(args.data_dir)  # refuses while a server runs on it
        try:
            revision = restore(Path(args.file), held.path / "state.db")
        finally:
            held.release()
        print(f"restored {args.file} (revision {revision}) into {held.path}")
        return 0
    except (SnapshotError, StartupError) as exc:
        print(f"kubelite: {exc}", file=sys.stderr)
        return 1


def _exit_now() -> NoReturn:
    """Exit 0 once the server has stopped, skipping the interpreter's teardown. By then the
    store is closed (every write is durable) and the logs are flushed here; tearing down the
    modules of a whole API server takes another ~150 ms, which every test server paid on every
    stop."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _version() -> str:
    from kubelite import __version__

    return __version__


_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def _node_count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"invalid node count {text!r} (0 or more, e.g. 3)")
    return int(text)


def _duration(text: str) -> float:
    """Seconds from a Go duration (``1m0s``, ``30s``, ``500ms``) or a plain number of seconds."""
    import re

    try:
        return float(text)
    except ValueError:
        pass
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (e.g. 1m0s, 30s, 500ms)")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


def _bool(text: str) -> bool:
    """A boolean flag's value as Go's strconv.ParseBool reads it."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r} (true or false)")


def _limits_error(limits: Limits) -> str:
    """kube-apiserver's checks of the in-flight limits, as one line ('' when they hold)."""
    for flag, value in (
        ("--max-requests-inflight", limits.max_requests_inflight),
        ("--max-mutating-requests-inflight", limits.max_mutating_requests_inflight),
    ):
        if value < 0:
            return f"{flag} can not be negative value"
    if limits.priority_and_fairness and limits.server_concurrency <= 0:
        return (
            f"invalid configuration: MaxRequestsInFlight={limits.max_requests_inflight} and "
            f"MaxMutatingRequestsInFlight={limits.max_mutating_requests_inflight}; they must add "
            "up to something positive (or pass --enable-priority-and-fairness=false)"
        )
    return ""


def _retention(text: str) -> object:
    from kubelite.api.machinery.retention import parse_retention

    try:
        return parse_retention(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _validity(text: str) -> float:
    """A certificate's validity: a duration of a whole second up to 2^32 seconds (less would
    write a kubeconfig whose certificate has expired before it is used)."""
    seconds = _duration(text)
    if not 1 <= seconds <= 1 << 32:  # NaN fails both comparisons
        raise argparse.ArgumentTypeError(f"invalid validity {text!r}: from 1s up to 2^32 seconds")
    return seconds


def _user_name(text: str) -> str:
    """A user name: not empty (a certificate without a CN authenticates no one)."""
    if not text:
        raise argparse.ArgumentTypeError("a user name may not be empty")
    return text
