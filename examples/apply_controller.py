"""A controller that owns only the fields it writes, with server-side apply.

For every ConfigMap labelled ``mirror=yes``, the ConfigMap ``<name>-summary`` beside it lists
the source's data keys in ``data.keys`` (sorted, comma-separated). The controller writes the
summary with ``client.apply(summary, field_manager="key-summary", force=True)``: it sends only
the fields it has an opinion on (``data.keys`` and a ``managed-by`` label), and the server
records it as their owner. So it is safe next to other writers:

- others may add fields of their own to a summary (a ``data.note``, an annotation): the
  controller's applies leave them alone, with no read-modify-write and no 409 to retry;
- someone changing ``data.keys`` by hand is put right: the controller watches the summaries too,
  and ``force=True`` takes its field back (a controller should force on the fields it manages);
- a summary goes with its source: deleted when the source is deleted or unlabelled (also while
  the controller was not running: it sees every summary when it starts).

Every reconcile simply applies the desired fields; when nothing changed the server writes
nothing (same resourceVersion, no watch event), so there is no diffing on the client side.

Run it against kubelite (``make serve``) or any cluster::

    python examples/apply_controller.py --namespace default [--kubeconfig PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal

from kubelite.client import AsyncClient, Controller, Informer, NotFound, Object, key_of, split_key

MANAGER = "key-summary"  # the field manager: the name the server records as owner
SOURCE_LABEL = "mirror=yes"
MANAGED_BY = "app.kubernetes.io/managed-by"
SUFFIX = "-summary"
log = logging.getLogger(MANAGER)


def summary(namespace: str | None, source: str, keys: str) -> Object:
    """The fields this controller owns in ``<source>-summary``, and nothing else."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": source + SUFFIX,
            "namespace": namespace,
            "labels": {MANAGED_BY: MANAGER},
        },
        "data": {"keys": keys},
    }


class KeySummary:
    def __init__(self, client: AsyncClient, namespace: str) -> None:
        self.client = client
        self.sources = Informer(client, "v1", "ConfigMap", namespace, label_selector=SOURCE_LABEL)
        summaries = Informer(
            client, "v1", "ConfigMap", namespace, label_selector=f"{MANAGED_BY}={MANAGER}"
        )
        self.controller = Controller(self.reconcile, workers=2, name=MANAGER)
        self.controller.watch(self.sources)
        self.controller.watch(summaries, key=lambda cm: key_of(cm).removesuffix(SUFFIX))

    async def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        source = self.sources.cache.get(key)
        if source is None:  # deleted, or no longer labelled: its summary goes too
            with contextlib.suppress(NotFound):
                await self.client.delete("v1", "ConfigMap", name + SUFFIX, namespace)
                log.info("deleted %s%s", key, SUFFIX)
            return
        keys = ",".join(sorted(source.get("data") or {}))
        await self.client.apply(summary(namespace, name, keys), field_manager=MANAGER, force=True)
        log.debug("applied %s%s: keys=%s", key, SUFFIX, keys)

    async def run(self) -> None:
        await self.controller.run()

    def stop(self) -> None:
        self.controller.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespace", default="default", help='"*" for every namespace')
    parser.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG, ~/.kube/config")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    async with AsyncClient.from_kubeconfig(args.kubeconfig) as client:
        controller = KeySummary(client, args.namespace)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, controller.stop)
        await controller.run()


if __name__ == "__main__":
    asyncio.run(main())
