"""``open_store(url)``: pick a backend by URL scheme, as kine picks its drivers.

- ``sqlite:///abs/path/state.db`` or ``sqlite://./relative/state.db``: the embedded default.
- ``sqlite://``: a private store in RAM, deleted on close (for tests).
- ``etcd://host:port[,host:port...]``: not yet (issue 6).
"""

from __future__ import annotations

from kubelite.storage.interface import Store, StoreOptions
from kubelite.storage.sqlite import SqliteStore

SCHEMES = ("sqlite",)


async def open_store(url: str, options: StoreOptions | None = None) -> Store:
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"store URL {url!r} has no scheme; expected one of {_expected()}")
    if "?" in rest or "#" in rest:
        raise ValueError(f"store URL {url!r}: query strings are not supported; pass StoreOptions")
    if scheme == "sqlite":
        return await SqliteStore.open(rest or None, options)
    raise ValueError(
        f"unknown store URL scheme {scheme!r} in {url!r}; expected one of {_expected()}"
    )


def _expected() -> str:
    return ", ".join(f"{s}://" for s in SCHEMES)
