"""A small controller built on kubelite.client's Informer and Controller.

The ConfigMap ``replica-counts`` in a namespace mirrors ``spec.replicas`` of every Deployment
there: ``{"web": "3", "api": "2"}``. Deployments created, scaled or deleted change it; someone
editing or deleting the ConfigMap gets it put back.

Everything maps to one key, the namespace, so a burst of changes costs one reconcile; the
reconcile is level-based (it reads the informers' caches, not the events) and writes with
``update(ref, mutate)``, so a concurrent writer costs a retry, never a lost update.

Run it against kubelite (``make serve``) or any cluster::

    python examples/replica_mirror.py --namespace default [--kubeconfig PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal

from kubelite.client import (
    AlreadyExists,
    AsyncClient,
    Controller,
    Informer,
    Object,
    Ref,
    name_of,
)

MIRROR = "replica-counts"
log = logging.getLogger("replica-mirror")


class ReplicaMirror:
    def __init__(self, client: AsyncClient, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.deployments = Informer(client, "apps/v1", "Deployment", namespace)
        self.mirrors = Informer(
            client, "v1", "ConfigMap", namespace, field_selector=f"metadata.name={MIRROR}"
        )
        self.controller = Controller(self.reconcile, workers=1, name="replica-mirror")
        self.controller.watch(self.deployments, key=lambda _: namespace)
        self.controller.watch(self.mirrors, key=lambda _: namespace)

    def desired(self) -> dict[str, str]:
        return {
            name_of(d): str(d.get("spec", {}).get("replicas", 1))
            for d in self.deployments.cache.objects()
            if not d["metadata"].get("deletionTimestamp")
        }

    async def reconcile(self, namespace: str) -> None:
        desired = self.desired()
        current = self.mirrors.cache.get(f"{namespace}/{MIRROR}")
        if current is None:
            body: Object = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": MIRROR, "namespace": namespace},
                "data": desired,
            }
            with contextlib.suppress(AlreadyExists):  # our cache was behind: the watch follows
                await self.client.create(body)
                log.info("created %s/%s: %s", namespace, MIRROR, desired)
            return
        if (current.get("data") or {}) == desired:
            return

        def mirror(cm: Object) -> None:
            cm["data"] = self.desired()  # the latest view, also on a retry after a 409

        await self.client.update(Ref("v1", "ConfigMap", MIRROR, namespace), mirror)
        log.info("updated %s/%s: %s", namespace, MIRROR, desired)

    async def run(self) -> None:
        await self.controller.run()

    def stop(self) -> None:
        self.controller.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG, ~/.kube/config")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    async with AsyncClient.from_kubeconfig(args.kubeconfig) as client:
        mirror = ReplicaMirror(client, args.namespace)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, mirror.stop)
        await mirror.run()


if __name__ == "__main__":
    asyncio.run(main())
