"""Faults injected on purpose, so that controller tests meet what a busy cluster does to
clients (``kubelite serve --inject conflicts=0.1,watch-drops=0.01,slow=0.05:200ms,seed=1``, or
the testing plugin's ``inject=``):

- **conflicts=P**: a share P of the updates and patches that carry a resourceVersion (a PUT's
  body, a patch or apply that sets ``metadata.resourceVersion``: the writes a real cluster
  refuses with ``the object has been modified`` when another writer won) are answered kube's
  409. Only then do the update and patch handlers go through :meth:`Faults.conflicting`, which
  decides whether a write is such a one and gives it a one-shot chance as its
  ``WriteOptions.preconditions_held``: the generic store calls that at the very point where the
  resourceVersion it compares has just held, after the object was read and its uid checked and
  before anything is admitted or written, so the 409 is the real one's, text, place and order,
  and nothing stored changes. A DELETE's resourceVersion precondition is not faulted: its 409
  names the version in the record, which an injected one would have to invent.
- **watch-drops=P**: after each ADDED, MODIFIED or DELETED event of a watch stream (not the
  initial events of a watch that begins with the current state: those lead up to the
  ``k8s.io/initial-events-end`` bookmark), with probability P the stream ends: half the time
  cleanly once the event is sent (as kube-apiserver's watch timeout ends a stream: the client
  watches again from its last resourceVersion), half the time with the 410 ``too old resource
  version`` ERROR event in the event's place (the client must list again).
- **slow=P:DURATION**: a share P of requests wait DURATION (``200ms``, ``1.5s``) before they
  are served; health checks (``/healthz``, ``/livez``, ``/readyz``) and ``/metrics`` never do.
- **seed=N**: each fault draws from a random sequence of its own seeded from N, so a client
  that makes its requests in one order meets the same faults on every run.

Nothing is injected unless asked: a server without ``--inject`` has no :class:`Faults`, its
handlers and filters are the plain ones (a watch pays one ``None`` check), and no write is
looked at for a resourceVersion. Faults are counted (``kubelite_injected_faults_total``) and
never change stored state.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from kubelite.api import errors
from kubelite.api.catalogue import ResourceInfo
from kubelite.api.machinery.rest import WriteOptions
from kubelite.api.machinery.watchevents import WatchEvent
from kubelite.api.machinery.watchoptions import INITIAL_EVENTS_END, too_old
from kubelite.server.messages import Request, Send

Handler = Callable[[Request, Send], Awaitable[None]]

EXAMPLE = "conflicts=0.1,watch-drops=0.01,slow=0.05:200ms,seed=1"
#: paths never slowed (and those under them): probes and scrapes answer however the API is faulted
UNSLOWED = frozenset({"healthz", "livez", "readyz", "metrics"})
#: the counters' ``fault`` labels
CONFLICT, WATCH_END, WATCH_EXPIRED, SLOW = "conflict", "watch_end", "watch_expired", "slow"
FAULT_LABELS = (CONFLICT, WATCH_END, WATCH_EXPIRED, SLOW)

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s)")
JSON_PATCH = "application/json-patch+json"
_JSON_PATCH_SETS = frozenset({"add", "replace"})


class FaultSpecError(ValueError):
    """A spec that cannot be read; the message says what to write instead."""


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """What to inject: each probability in [0, 1]; ``slow_seconds`` the delay of a slowed
    request; ``seed`` None draws differently on every run."""

    conflicts: float = 0.0
    watch_drops: float = 0.0
    slow: float = 0.0
    slow_seconds: float = 0.0
    seed: int | None = None

    @classmethod
    def parse(cls, text: str) -> FaultSpec:
        """``conflicts=P,watch-drops=P,slow=P:DURATION,seed=N``, each part optional, in any
        order, at most once."""
        values: dict[str, Any] = {}
        seen: set[str] = set()
        for part in text.split(","):
            name, sep, value = part.strip().partition("=")
            if not sep or not name:
                raise FaultSpecError(f"expected NAME=VALUE, not {part.strip()!r} (e.g. {EXAMPLE})")
            reader = _READERS.get(name)
            if reader is None:
                raise FaultSpecError(
                    f"unknown fault {name!r}: conflicts, watch-drops, slow or seed (e.g. {EXAMPLE})"
                )
            if name in seen:
                raise FaultSpecError(f"{name} is given twice")
            seen.add(name)
            values.update(reader(value))
        return cls(**values)

    def __str__(self) -> str:
        """The spec as :meth:`parse` reads it (what a subprocess server is given)."""
        parts = []
        if self.conflicts:
            parts.append(f"conflicts={self.conflicts!r}")
        if self.watch_drops:
            parts.append(f"watch-drops={self.watch_drops!r}")
        if self.slow:
            parts.append(f"slow={self.slow!r}:{_ms(self.slow_seconds)}")
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return ",".join(parts) or "conflicts=0"

    def describe(self) -> str:
        """One line for the server's log."""
        parts = []
        if self.conflicts:
            parts.append(
                f"409 Conflict on {_percent(self.conflicts)} of updates and patches that carry "
                "a resourceVersion"
            )
        if self.watch_drops:
            parts.append(
                f"watch streams ended after {_percent(self.watch_drops)} of events (half "
                "cleanly, half with 410 Expired)"
            )
        if self.slow:
            parts.append(f"{_percent(self.slow)} of requests delayed {_ms(self.slow_seconds)}")
        what = "; ".join(parts) or "nothing (every probability is 0)"
        seed = f"seed {self.seed}" if self.seed is not None else "no seed"
        return f"injecting faults: {what} ({seed})"


def _percent(p: float) -> str:
    return f"{p * 100:g}%"


def _ms(seconds: float) -> str:
    return f"{round(seconds * 1000, 6):g}ms"


def _read_conflicts(value: str) -> dict[str, Any]:
    return {"conflicts": _probability("conflicts", value)}


def _read_watch_drops(value: str) -> dict[str, Any]:
    return {"watch_drops": _probability("watch-drops", value)}


def _read_slow(value: str) -> dict[str, Any]:
    share, colon, duration = value.partition(":")
    if not colon:
        raise FaultSpecError(f"slow takes P:DURATION, e.g. slow=0.05:200ms, not {value!r}")
    return {"slow": _probability("slow", share), "slow_seconds": _duration(duration)}


def _read_seed(value: str) -> dict[str, Any]:
    if not (value.isascii() and value.isdigit()):
        raise FaultSpecError(f"seed takes a whole number, e.g. seed=1, not {value!r}")
    return {"seed": int(value)}


_READERS: dict[str, Callable[[str], dict[str, Any]]] = {
    "conflicts": _read_conflicts,
    "watch-drops": _read_watch_drops,
    "slow": _read_slow,
    "seed": _read_seed,
}


def _probability(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # NaN fails both
        raise FaultSpecError(
            f"{name} takes a probability from 0 to 1, e.g. {name}=0.1, not {text!r}"
        )
    return value


def _duration(text: str) -> float:
    match = _DURATION.fullmatch(text)
    if match is None:
        raise FaultSpecError(f"slow's delay is a duration such as 200ms or 1.5s, not {text!r}")
    number, unit = match.groups()
    return float(number) / (1000.0 if unit == "ms" else 1.0)


class Faults:
    """The faults of one running server: a random sequence per fault, and counts by fault."""

    def __init__(self, spec: FaultSpec) -> None:
        self.spec = spec
        self.counts = dict.fromkeys(FAULT_LABELS, 0)
        seed = spec.seed

        def rng(name: str) -> random.Random:
            return random.Random(f"{seed}/{name}") if seed is not None else random.Random()

        self._conflicts = rng("conflicts")
        self._drops = rng("watch-drops")
        self._slow = rng("slow")

    # -- conflicts -------------------------------------------------------------------------------

    def conflicting(self, options: WriteOptions, content_type: str, sent: Any) -> WriteOptions:
        """The options of an update or patch that sent ``sent`` (a PUT's body, with
        ``content_type`` "", a patch, or an apply's configuration), with its chance of an
        injected 409 when it carries a resourceVersion: kube's Conflict with no causes
        (nothing changed), raised where the resourceVersion has just held."""
        chance = self.conflict_chance(patch_sets_resource_version(content_type, sent))
        if chance is None:
            return options

        def held(info: ResourceInfo, name: str) -> None:
            if chance():
                raise errors.conflict(info.plural, info.group, name)

        return options._replace(preconditions_held=held)

    def conflict_chance(self, carries_resource_version: bool) -> Callable[[], bool] | None:
        """One write's chance of an injected conflict: None when it cannot be refused (it
        carries no resourceVersion) or conflicts are off. It may be asked more than once (a
        write retried on a fresh read): the first answer stands."""
        if not carries_resource_version or not self.spec.conflicts:
            return None
        decided: list[bool] = []

        def lose() -> bool:
            if not decided:
                decided.append(self._conflicts.random() < self.spec.conflicts)
                if decided[0]:
                    self.counts[CONFLICT] += 1
            return decided[0]

        return lose

    # -- watch drops -----------------------------------------------------------------------------

    def stream(
        self, query: dict[str, str], send_initial_events: bool | None
    ) -> StreamFaults | None:
        """The faults of one watch stream (None when watch drops are off), from its query's
        ``resourceVersion`` and ``sendInitialEvents``."""
        if not self.spec.watch_drops:
            return None
        try:
            start = int(query.get("resourceVersion") or 0)
        except ValueError:
            start = 0
        initial = send_initial_events is True or (send_initial_events is None and not start)
        return StreamFaults(self, live=not initial, revision=start)

    def drop(self) -> str | None:
        """Whether the stream ends at this event, and how (None: it goes on)."""
        rng = self._drops
        if rng.random() >= self.spec.watch_drops:
            return None
        fault = WATCH_END if rng.random() < 0.5 else WATCH_EXPIRED
        self.counts[fault] += 1
        return fault

    # -- slow ------------------------------------------------------------------------------------

    def delay(self, path: str) -> float:
        """How long a request for ``path`` waits before it is served (0: not at all)."""
        if not self.spec.slow or path.lstrip("/").split("/", 1)[0] in UNSLOWED:
            return 0.0
        if self._slow.random() >= self.spec.slow:
            return 0.0
        self.counts[SLOW] += 1
        return self.spec.slow_seconds


class StreamFaults:
    """What one watch stream meets: ``before(event)`` raises the injected 410 in the event's
    place; ``ends_after(event)`` says the stream ends once the event is sent. Events are faulted
    only once the stream is live: from the start for a watch from a resourceVersion, after the
    initial-events-end bookmark for one that begins with the current state (never, when such a
    watch has no bookmarks: its initial events cannot be told from live ones)."""

    def __init__(self, faults: Faults, *, live: bool, revision: int) -> None:
        self.faults = faults
        self.live = live
        #: the newest revision sent: where the client would resume from
        self.revision = revision
        self._pending: str | None = None

    def before(self, event: WatchEvent) -> None:
        if not self.live or event.type == "BOOKMARK":
            return
        fault = self.faults.drop()
        if fault == WATCH_EXPIRED:  # the history after our last revision is gone up to here
            raise too_old(self.revision, event.revision)
        self._pending = fault

    def ends_after(self, event: WatchEvent) -> bool:
        self.revision = max(self.revision, event.revision)
        if not self.live and event.type == "BOOKMARK":
            annotations = (event.object.get("metadata") or {}).get("annotations") or {}
            self.live = annotations.get(INITIAL_EVENTS_END) == "true"
        ended, self._pending = self._pending is not None, None
        return ended


def carries_resource_version(obj: Any) -> bool:
    """Whether an object body (a PUT's, an apply's configuration, a merge or strategic merge
    patch) sets ``metadata.resourceVersion``."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return isinstance(meta, dict) and bool(meta.get("resourceVersion"))


def patch_sets_resource_version(content_type: str, patch: Any) -> bool:
    """Whether a patch sets ``metadata.resourceVersion``: a JSON patch that adds or replaces it
    (or a whole ``metadata`` holding one), a merge or strategic merge patch (or an apply
    configuration, or a PUT's body) that holds it."""
    if content_type != JSON_PATCH:
        return carries_resource_version(patch)
    if not isinstance(patch, list):
        return False
    for op in patch:
        if not isinstance(op, dict) or op.get("op") not in _JSON_PATCH_SETS:
            continue
        path, value = op.get("path"), op.get("value")
        if path == "/metadata/resourceVersion" and value:
            return True
        if path == "/metadata" and carries_resource_version({"metadata": value}):
            return True
    return False


def with_injected_delay(inner: Handler, faults: Faults | None) -> Handler:
    """The filter of ``slow``: a share of requests wait before they are served (after
    authentication and authorization, so the delay is the API's, as a loaded server's)."""
    if faults is None or not faults.spec.slow:
        return inner

    async def delayed(request: Request, send: Send) -> None:
        seconds = faults.delay(request.path)
        if seconds:
            await asyncio.sleep(seconds)
        await inner(request, send)

    return delayed
