"""A 409's explanation reads the store, which may be slow (an etcd election): it is given up
after ``BUDGET_SECONDS``, and the 409 goes out bare, never later than that."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from kubelite.api.catalogue import load_builtin_catalogue
from kubelite.api.encoding.stored import Codec
from kubelite.api.fieldmanager.conflictcauses import Explainer
from kubelite.storage import KeyValue, Store

KEY = "/registry/configmaps/default/c"


class StalledReads:
    """The test's store, whose reads at a past revision never answer (they record their
    cancellation); everything else is the real store's."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.cancelled = 0

    async def get(self, key: str, revision: int | None = None) -> KeyValue | None:
        if not revision:
            return await self.store.get(key)
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def configmap(value: str) -> bytes:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": value},
            "metadata": {"name": "c", "namespace": "default"}}  # fmt: skip
    return orjson.dumps(body)


async def test_an_explanation_the_store_is_slow_to_read_is_given_up(store: Store) -> None:
    info = load_builtin_catalogue().require("", "v1", "configmaps")
    sent = await store.create(KEY, configmap("a"))
    current = await store.update(KEY, configmap("b"), sent)
    slow = StalledReads(store)
    explainer = Explainer(slow, Codec(info), info)  # type: ignore[arg-type]
    assert await explainer.explain(KEY, sent, current) == []
    assert slow.cancelled == 1  # the read was cut at the budget, not waited out

    # the same store answering: the change is explained
    causes = await Explainer(store, Codec(info), info).explain(KEY, sent, current)
    assert [(c.field, c.message) for c in causes] == [
        (".data.k", f"changed at resourceVersion {current}")
    ]
