"""What every listener of ``kubelite serve`` enforces on a connection, in one place.

kube-apiserver serves every authentication method on one Go ``http.Server``
(staging/src/k8s.io/apiserver/pkg/server/secure_serving.go): ``ReadHeaderTimeout`` 32 s (the
connection is closed when a request's headers are not complete in time, for the first request
and for each later one on a kept-alive connection; Go bounds the TLS handshake by the same
32 s), ``MaxHeaderBytes`` 1 MiB (beyond: 431), ``IdleTimeout`` 90 s. kubelite has two
listeners because its main HTTP stack (granian, :mod:`.http`) does not hand client
certificates to the app; the second one (:mod:`.clientcerts`) takes them. Both read their
limits from here, so they cannot drift.

**Descriptors.** Go raises the open-file limit to the hard limit at start and has no cap on
connections. kubelite caps each listener, so that connections that never finish their headers
cannot take the descriptors the store, etcd, webhooks and the other listener need: a
:class:`ConnectionBudget` keeps ``RESERVED_FILES`` (at most half the limit) for the rest of the
process and splits what remains 3 to 1 between the main port and the client-certificate port.
A connection over its listener's cap is not accepted: it waits in the listen backlog until a
connection of that listener closes, and once the backlog is full the kernel drops new SYNs
(the client retries, then times out); the other listener is unaffected. The
client-certificate port counts a connection from its accept, and its backlog (``BACKLOG``)
holds no descriptor of ours. The main port (granian's backpressure) counts one from the end of
its TLS handshake; granian's TLS acceptor, whenever it accepts, takes every pending connection
into a handshake at once, so the main port's backlog is kept within its share. What stays out
of any cap is granian's handshakes themselves (10 s each, as many as arrive while it accepts):
clients that open connections faster than their handshakes end (say, 2,000 a second that never
send a ClientHello) can still exhaust the descriptors, and then granian stops accepting for
good (its acceptor returns the accept error before it polls the handshakes; docs/benchmarks.md).
"""

from __future__ import annotations

import resource
import socket
from dataclasses import dataclass

#: kube's ReadHeaderTimeout, "just shy of requestTimeoutUpperBound"
HEADER_READ_SECONDS = 32.0
#: kube's MaxHeaderBytes: the request line and the headers together
MAX_HEADER_BYTES = 1 << 20
#: the most headers a request may carry: hyper's fixed cap under granian, which granian does
#: not let us raise (kube has none, only the byte limit); the second port keeps the same one
MAX_HEADERS = 100
#: kube's IdleTimeout: a kept-alive connection that sends nothing for this long is closed
IDLE_SECONDS = 90
#: how long a stopping server lets requests in flight finish before they are cut
DRAIN_SECONDS = 10
#: the listen backlog: where connections over a listener's cap wait to be accepted
BACKLOG = 2048
#: descriptors kept for everything but client connections (SQLite or etcd, webhook calls,
#: logs, the loop's own); an idle server holds about 35
RESERVED_FILES = 1024

#: what both listeners answer to a request head over MAX_HEADER_BYTES or MAX_HEADERS (granian's
#: answer, byte for byte: then a Date header, and the connection is closed)
TOO_LARGE_HEAD = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n"
)


def listen(address: str, port: int, backlog: int = BACKLOG) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: without it, a chunked response's last small chunk waits
    # for the client's delayed ACK (Nagle), ~40 ms on a quarter of back-to-back list requests.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((address, port))
    sock.listen(backlog)
    return sock


def raise_open_file_limit() -> int:
    """Raise the soft limit on open files to the hard limit, as Go does at start; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


@dataclass(frozen=True, slots=True)
class ConnectionBudget:
    """How many connections each listener holds at once, out of the open-file limit."""

    open_files: int
    reserved: int
    #: granian's backpressure: the main port's connections past their TLS handshake
    main: int
    #: the main port's listen backlog, in the budget because granian, when it accepts again,
    #: takes every pending connection into a TLS handshake at once (a descriptor each)
    main_backlog: int
    client_cert: int

    @classmethod
    def of(cls, open_files: int) -> ConnectionBudget:
        reserved = min(RESERVED_FILES, open_files // 2)
        connections = open_files - reserved
        client_cert = max(1, connections // 4)
        main = max(2, connections - client_cert)
        backlog = min(BACKLOG, main // 4) or 1
        return cls(open_files, reserved, main - backlog, backlog, client_cert)

    def describe(self) -> str:
        return (
            f"at most {self.main} connections (and {self.main_backlog} waiting) on the main "
            f"port and {self.client_cert} on the client-certificate port ({self.reserved} of "
            f"the {self.open_files} open files kept for the store and webhooks)"
        )
