"""``open_store(url)``: pick a backend by URL scheme, as kine picks its drivers.

- ``sqlite:///abs/path/state.db`` or ``sqlite://./relative/state.db``: the embedded default.
- ``sqlite://``: a private store in RAM, deleted on close (for tests).
- ``etcd://host:port[,host:port...][?prefix=/kubelite]``: an etcd cluster (needs ``aetcd``:
  ``pip install kubelite[etcd]``). Keys live under ``prefix``; the members are tried in turn.
"""

from __future__ import annotations

from kubelite.storage.interface import Store, StoreOptions
from kubelite.storage.sqlite import SqliteStore

SCHEMES = ("sqlite", "etcd")


async def open_store(url: str, options: StoreOptions | None = None) -> Store:
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"store URL {url!r} has no scheme; expected one of {_expected()}")
    if scheme == "etcd":
        # Imported here: the etcd client (gRPC) is an optional dependency, and slow to import.
        try:
            from kubelite.storage.etcd import EtcdStore, EtcdURL
        except ImportError as exc:
            raise ValueError(
                f"store URL {url!r} needs the etcd client: pip install 'kubelite[etcd]' ({exc})"
            )

        return await EtcdStore.open(EtcdURL.parse(rest), options)
    if "?" in rest or "#" in rest:
        raise ValueError(f"store URL {url!r}: query strings are not supported; pass StoreOptions")
    if scheme == "sqlite":
        return await SqliteStore.open(rest or None, options)
    raise ValueError(
        f"unknown store URL scheme {scheme!r} in {url!r}; expected one of {_expected()}"
    )


def _expected() -> str:
    return ", ".join(f"{s}://" for s in SCHEMES)
