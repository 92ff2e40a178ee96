"""What ``kubelite serve`` checks before it serves, each failure one line that says what to do.

The listening socket is bound first, before the store opens and the controllers start, so a port
in use costs nothing and leaves nothing half-started. The data directory is private (0700) and held
by one server at a time: a lock file records the holder's pid.
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from kubelite.server.listening import BACKLOG, listen
from kubelite.storage import Store, StoreOptions, open_store
from kubelite.storage.errors import Unavailable


class StartupError(Exception):
    """The server cannot start; the message is one line for the user, without a traceback."""


@dataclass
class DataDir:
    """A data directory this process holds until :meth:`release`."""

    path: Path
    lock_fd: int

    def release(self) -> None:
        if self.lock_fd >= 0:
            os.close(self.lock_fd)  # closing drops the flock
            self.lock_fd = -1


def private_file(path: Path) -> None:
    """Create ``path`` readable by its owner only (0600), or make an existing one so: SQLite
    gives its -wal and -shm files the database file's mode."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)


def hold_data_dir(directory: str | Path) -> DataDir:
    """The data directory, made private (0700) and locked for this server."""
    path = Path(directory).expanduser().absolute()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)
        lock_path = path / "lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise StartupError(
            f"cannot use data dir {path}: {exc.strerror}; give a writable --data-dir"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise StartupError(
            f"data dir {path} is in use by another kubelite server (pid {holder}); "
            "stop it, or give another --data-dir"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return DataDir(path, fd)


_DNS_NAME = re.compile(
    r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$"
)


def check_tls_names(names: tuple[str, ...]) -> None:
    """Each ``--tls-san`` is an IP address or an ASCII DNS name (an internationalized name in
    its ``xn--`` form), as a certificate can carry it."""
    for name in names:
        try:
            ipaddress.ip_address(name)
            continue
        except ValueError:
            pass
        if len(name) > 253 or not _DNS_NAME.match(name):
            raise StartupError(
                f"--tls-san {name!r} is neither an IP address nor a DNS name "
                "(write an internationalized name in its xn-- form)"
            )


def bind(address: str, port: int, flag: str = "--port", backlog: int = BACKLOG) -> socket.socket:
    """The listening socket, or a one-line reason it cannot be had (``flag`` sets the port)."""
    try:
        return listen(address, port, backlog)
    except OSError as exc:
        where = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        if exc.errno == errno.EADDRINUSE:
            detail = f"is in use; stop what listens there, or pick another {flag} (0: any free)"
        elif exc.errno == errno.EACCES:
            detail = f"needs privileges; pick a {flag} above 1023"
        elif exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            detail = "is not an address of this machine; check --bind-address"
        else:
            detail = f"cannot be bound ({exc.strerror})"
        raise StartupError(f"{where} {detail}") from None
    except (socket.gaierror, UnicodeError, ValueError, OverflowError) as exc:
        raise StartupError(
            f"cannot listen on {address!r} port {port} ({exc}); check --bind-address and {flag}"
        ) from None


async def open_store_checked(url: str, options: StoreOptions) -> Store:
    """The store at ``url``; an unknown scheme, a missing client library or an unreachable
    store is a :class:`StartupError`."""
    try:
        return await open_store(url, options)
    except ValueError as exc:
        raise StartupError(f"{exc}; see --storage in `kubelite serve --help`") from None
    except (Unavailable, OSError, TimeoutError) as exc:
        raise StartupError(f"cannot open the store at {url}: {exc}") from None
