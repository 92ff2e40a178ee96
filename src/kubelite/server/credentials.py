"""One CA and one admin token for every server over a shared store (etcd).

Each server keeps its credentials in its data directory (``token``, ``ca.crt``, ``ca.key``). Over
a store that several servers share, the first server to start stores its own under
:data:`KEY`, with a create that only one server can win; every later server, and a loser of that
race, adopts the stored ones into its data directory. So a kubeconfig written by any of them is
good for all, without copying files between machines. The CA key is then in the store: whoever can
read the store is already the cluster's administrator (it holds every Secret), as with etcd under
kube-apiserver.
"""

from __future__ import annotations

import logging
from pathlib import Path

import orjson

from kubelite.server.startup import private_file
from kubelite.storage import Store
from kubelite.storage.errors import KeyExists

log = logging.getLogger(__name__)

KEY = "/kubelite/credentials"
FILES = {"token": "token", "ca.crt": "caCert", "ca.key": "caKey"}


async def share_credentials(store: Store, data_dir: Path) -> None:
    """Store this data directory's token and CA if the store has none; otherwise make the
    stored ones this data directory's."""
    stored = await store.get(KEY)
    if stored is None:
        mine = {field: (data_dir / name).read_text() for name, field in FILES.items()}
        try:
            await store.create(KEY, orjson.dumps(mine))
            log.info("stored this server's CA and admin token for the servers that share the store")
            return
        except KeyExists as exc:  # another server stored its own first
            stored = exc.current
    shared = orjson.loads(stored.value)
    changed = False
    for name, field in FILES.items():
        path = data_dir / name
        if not path.exists() or path.read_text() != shared[field]:
            private_file(path)
            path.write_text(shared[field])
            changed = True
    if changed:
        log.info("adopted the CA and admin token of the servers that share the store")
