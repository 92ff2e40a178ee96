"""Fair queuing for server requests: one priority level's seats, queues and dispatch, as
kube-apiserver's ``pkg/util/flowcontrol/fairqueuing/queueset/queueset.go`` (and its
``shufflesharding`` dealer).

A priority level has ``limit`` seats (its current concurrency limit). Every request here takes
one seat while it executes (kube's work estimator asks more for large lists; kubelite asks one
for every request, so a request's work is one seat for ``G`` = 3 ms of virtual service).

- **Shuffle sharding.** A flow (the FlowSchema and its distinguisher, hashed) is dealt a hand of
  ``hand_size`` of the ``queues`` queues; its request joins the queue of its hand with the least
  work waiting. A flow that floods fills its own hand, not every queue.
- **Fair queuing by virtual finish time.** The progress meter ``R`` (seat-seconds handed to each
  active queue) advances at ``min(seats wanted, limit) / active queues`` per second. A queue's
  ``next_dispatch_r`` grows by a request's work when one of its requests starts and is corrected
  by the actual service time when it finishes; a free seat goes to the head of the queue whose
  head would finish first, so each active queue gets an equal share of the seats whatever its
  flow sends.
- **Limits.** A request is refused (429) when every seat is taken and its queue holds
  ``queue_length_limit`` requests already; one that waits longer than its wait limit is refused
  then. A level without queues (``limitResponse: Reject``) refuses as soon as its seats are
  taken.

**Bodies are read before a seat is taken (a deviation from kube).** kube-apiserver reads a
request's body inside its handler, so a client that sends its body slowly (or never) holds a
seat until the request timeout: 400 stalled bodies from one user hold every seat of its level
(under the max-in-flight limits, every mutating slot of the server), and every other user of
the level waits, then gets 429, for a minute. Here a request that has a body
first takes a *place* in its queue (:meth:`QueueSet.arrive` with ``receiving``), holds it while
its body arrives (bounded by the request timeout and the 3 MiB body limit), and only then waits
for a seat like any queued request. Places are bounded per queue by ``queue_length_limit`` (a
level without queues: by its seats), so one flow can have at most ``hand_size x
queue_length_limit`` bodies arriving at once (300 in the bootstrap levels), beyond which it gets
429 at once, as kube would refuse a flow whose queues are full. What kube shows that kubelite
does not: such a request counted as executing while its body arrived; and its queue wait
starts when its body is complete. Both are visible only to a client that stalls its body.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections import deque
from collections.abc import Callable
from time import monotonic

from kubelite.api.shufflesharding import deal

#: estimatedServiceDuration: the virtual service time of one request's seat, in seconds
G = 0.003
RECEIVING, WAITING, EXECUTING, DONE = 0, 1, 2, 3
#: how often, at most, the levels' seat demand is sampled
SAMPLE_SECONDS = 0.1

Clock = Callable[[], float]


def flow_hash(schema: str, distinguisher: str) -> int:
    """apf_controller.go ``hashFlowID``: the first 8 bytes of SHA-256 of the FlowSchema's name,
    a NUL and the distinguisher, little-endian."""
    digest = hashlib.sha256(f"{schema}\0{distinguisher}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


class Ticket:
    """One request's passage through a priority level: arriving (its body), waiting in its
    queue, executing on its seat, then done."""

    __slots__ = ("arrival_r", "future", "queue", "started", "state")

    def __init__(self, queue: Queue | None, state: int) -> None:
        self.queue = queue
        self.state = state
        self.arrival_r = 0.0
        self.started = 0.0
        self.future: asyncio.Future[bool] | None = None


class Queue:
    __slots__ = ("executing", "next_dispatch_r", "receiving", "waiting", "waiting_count")

    def __init__(self) -> None:
        #: FIFO of tickets; one no longer waiting (cancelled, expired) is dropped when it
        #: reaches the head, its counts already taken back
        self.waiting: deque[Ticket] = deque()
        self.waiting_count = 0
        #: requests holding a place here while their bodies arrive
        self.receiving = 0
        self.executing = 0
        self.next_dispatch_r = 0.0

    def head(self) -> Ticket | None:
        waiting = self.waiting
        while waiting and waiting[0].state != WAITING:
            waiting.popleft()
        return waiting[0] if waiting else None

    def active(self) -> bool:
        return self.waiting_count > 0 or self.executing > 0


class SeatDemand:
    """A level's seat demand (seats in use plus seats waiting: ``x``), its peak since the last
    reset, and its time-weighted moments, which kube's ``fairqueuing.Integrator`` integrates at
    every change. Here the request path only moves ``x`` and the peak (integer work, no clock),
    and :meth:`FlowControl.sample` integrates every level's ``x`` at most every
    :data:`SAMPLE_SECONDS`, from the next request after (one clock read per request), and before
    each borrowing adjustment: the same average and deviation, to within the sampling, at no
    cost per request and none while the server is idle. :meth:`reset` hands them to the
    borrowing adjustment."""

    __slots__ = ("elapsed", "high", "total", "total_sq", "x")

    def __init__(self) -> None:
        self.x = 0
        self.high = 0
        self.elapsed = self.total = self.total_sq = 0.0

    def reset(self) -> tuple[float, float, float, float]:
        """(duration, average, standard deviation, maximum) since the last reset."""
        duration, high = self.elapsed, float(self.high)
        if duration > 0:
            average = self.total / duration
            variance = self.total_sq / duration - average * average
            deviation = math.sqrt(variance) if variance >= 0 else math.nan
        else:
            average = deviation = math.nan
        self.elapsed = self.total = self.total_sq = 0.0
        self.high = self.x
        return duration, average, deviation, high


class Seats(SeatDemand):
    """A level without queues: the exempt level (never limited, only counted) and levels whose
    limit response is ``Reject``. Its seat demand is its seats in use (``x``)."""

    __slots__ = ("exempt", "limit", "receiving", "rejected")

    def __init__(self, limit: int, *, exempt: bool = False) -> None:
        super().__init__()
        self.limit = limit
        self.exempt = exempt
        self.receiving = 0
        self.rejected = 0

    @property
    def demand(self) -> SeatDemand:
        return self

    @property
    def executing(self) -> int:
        return self.x

    def set_limit(self, limit: int) -> None:
        self.limit = limit

    def arrive(self, hash_value: int, receiving: bool) -> Ticket | None:
        """A request arrives: with ``receiving`` it takes a place while its body arrives (None:
        refused), otherwise it asks for its seat at once (see :meth:`admit`)."""
        if not receiving:
            return self.admit(Ticket(None, WAITING))
        if not self.exempt and self.receiving >= max(self.limit, 1):
            self.rejected += 1
            return None
        self.receiving += 1
        return Ticket(None, RECEIVING)

    def admit(self, ticket: Ticket) -> Ticket | None:
        """The request is ready (its body read): a seat now, or None (429)."""
        if ticket.state == RECEIVING:
            self.receiving -= 1
        x = self.x
        if not self.exempt and not _fits(self.limit, x, x):
            ticket.state = DONE
            self.rejected += 1
            return None
        ticket.state = EXECUTING
        self.x = x = x + 1
        if x > self.high:
            self.high = x
        return ticket

    def finish(self, ticket: Ticket) -> None:
        state, ticket.state = ticket.state, DONE
        if state == EXECUTING:
            self.x -= 1
        elif state == RECEIVING:
            self.receiving -= 1

    def waiting(self) -> int:
        return 0

    def idle(self) -> bool:
        return self.x == 0 and self.receiving == 0


def _fits(limit: int, seats_in_use: int, executing: int) -> bool:
    """canAccommodateSeatsLocked for a request of one seat: a level of limit 0 still lets one
    request in at a time."""
    if limit < 1:
        return executing == 0
    return seats_in_use + 1 <= limit


class QueueSet:
    """A level that queues (``limitResponse: Queue``)."""

    def __init__(
        self, queues: int, hand_size: int, queue_length_limit: int, limit: int,
        *, clock: Clock = monotonic,
    ) -> None:  # fmt: skip
        self.clock = clock
        self.limit = limit
        self.queues: list[Queue] = []
        self.desired = 0
        self.hand_size = hand_size
        self.queue_length_limit = queue_length_limit
        self.configure(queues, hand_size, queue_length_limit)
        self.current_r = 0.0
        self.last = clock()
        self.robin = -1
        self.enqueues = 0
        self.seats_in_use = self.executing = self.waiting_total = 0
        self.active_queues = 0
        self.demand = SeatDemand()
        self.rejected = 0
        #: each flow's hand of queues
        self._hands: dict[int, list[Queue]] = {}

    # -- configuration ---------------------------------------------------------------------------

    def configure(self, queues: int, hand_size: int, queue_length_limit: int) -> None:
        """New queuing parameters: queues are added now; surplus ones go once empty."""
        while len(self.queues) < queues:
            self.queues.append(Queue())
        self.desired = queues
        self.hand_size = hand_size
        self.queue_length_limit = queue_length_limit
        self._hands = {}

    def set_limit(self, limit: int) -> None:
        self._sync()
        self.limit = limit
        self._dispatch()
        self._demand(self.seats_in_use + self.waiting_total)

    # -- a request's passage ---------------------------------------------------------------------

    def arrive(self, hash_value: int, receiving: bool) -> Ticket | None:
        """A request of the flow ``hash_value`` arrives; it joins the queue of its hand with the
        least work. With ``receiving`` it holds a place there while its body arrives (None: its
        queue has no place left); otherwise it is queued at once (see :meth:`admit`)."""
        queue = self._shuffle_shard(hash_value)
        if not receiving:
            return self.admit(Ticket(queue, WAITING))
        if queue.receiving >= self.queue_length_limit:
            self.rejected += 1
            return None
        queue.receiving += 1
        return Ticket(queue, RECEIVING)

    def admit(self, ticket: Ticket) -> Ticket | None:
        """The request is ready (its body read): None when it is refused; else its ticket,
        ``EXECUTING`` when it has its seat now, ``WAITING`` (with a ``future`` that turns True
        when it gets one) otherwise."""
        queue = ticket.queue
        assert queue is not None
        if ticket.state == RECEIVING:
            queue.receiving -= 1
        self._sync()
        if self.seats_in_use >= self.limit and queue.waiting_count >= self.queue_length_limit:
            ticket.state = DONE
            self.rejected += 1
            return None
        r = self.current_r
        ticket.arrival_r = r
        if not (queue.waiting_count or queue.executing):
            queue.next_dispatch_r = r
            self.active_queues += 1
        if self.waiting_total == 0 and _fits(self.limit, self.seats_in_use, self.executing):
            # nothing waits anywhere: this request is the one dispatched (_start, inline)
            if queue.next_dispatch_r < r:
                queue.next_dispatch_r = r
            ticket.state = EXECUTING
            ticket.started = self.last
            queue.next_dispatch_r += G
            queue.executing += 1
            self.executing += 1
            self.seats_in_use = seats = self.seats_in_use + 1
            demand = self.demand
            demand.x = seats
            if seats > demand.high:
                demand.high = seats
            return ticket
        ticket.state = WAITING
        ticket.future = asyncio.get_running_loop().create_future()
        queue.waiting.append(ticket)
        queue.waiting_count += 1
        self.waiting_total += 1
        if len(queue.waiting) == 1 and queue.next_dispatch_r < r:
            queue.next_dispatch_r = r
        self._dispatch()
        self._demand(self.seats_in_use + self.waiting_total)
        return ticket

    def withdraw(self, ticket: Ticket) -> bool:
        """A waiting request leaves its queue (its wait limit passed, or it was cancelled):
        True if it was still waiting."""
        if ticket.state != WAITING:
            return False
        queue = ticket.queue
        assert queue is not None
        self._sync()
        ticket.state = DONE
        queue.waiting_count -= 1
        self.waiting_total -= 1
        if not queue.active():
            self.active_queues -= 1
        self.demand.x = self.seats_in_use + self.waiting_total
        if len(self.queues) > self.desired:
            self._drop_if_surplus(queue)
        return True

    def finish(self, ticket: Ticket) -> None:
        """The request is done: its seat (or place, or wait) is released."""
        state = ticket.state
        if state == WAITING:
            self.withdraw(ticket)
            return
        ticket.state = DONE
        queue = ticket.queue
        assert queue is not None
        if state == RECEIVING:
            queue.receiving -= 1
            if len(self.queues) > self.desired:
                self._drop_if_surplus(queue)
            return
        if state != EXECUTING:
            return
        self._sync()
        self.executing -= 1
        self.seats_in_use -= 1
        queue.executing -= 1
        # charge the queue the service time it actually had (kube: R -= seats * (G - actual))
        queue.next_dispatch_r -= G - (self.last - ticket.started)
        if queue.waiting:
            head = queue.head()
            if head is not None and queue.next_dispatch_r < head.arrival_r:
                queue.next_dispatch_r = head.arrival_r
        if not (queue.waiting_count or queue.executing):
            self.active_queues -= 1
        if self.waiting_total:
            self._dispatch()
        self.demand.x = self.seats_in_use + self.waiting_total
        if len(self.queues) > self.desired:
            self._drop_if_surplus(queue)

    # -- inside ----------------------------------------------------------------------------------

    def _demand(self, x: int) -> None:
        demand = self.demand
        demand.x = x
        if x > demand.high:
            demand.high = x

    def _sync(self) -> None:
        """Advance R to now: min(seats wanted, limit) / active queues per second."""
        now = self.clock()
        if self.active_queues:
            wanted = self.seats_in_use + self.waiting_total
            self.current_r += (now - self.last) * min(wanted, self.limit) / self.active_queues
        self.last = now

    def _shuffle_shard(self, hash_value: int) -> Queue:
        """The queue of the flow's hand with the least work, looked at from a rotating start
        (kube's tie-break)."""
        hand = self._hands.get(hash_value)
        if hand is None:
            if len(self._hands) > 4096:
                self._hands = {}
            cards = deal(hash_value, self.desired, self.hand_size)
            hand = self._hands[hash_value] = [self.queues[card] for card in cards]
        size = len(hand)
        offset = self.enqueues % size
        self.enqueues += 1
        best = hand[offset]
        best_work = best.waiting_count + best.receiving
        if best_work:  # the first one looked at is empty: nothing has less work
            for i in range(1, size):
                queue = hand[(offset + i) % size]
                work = queue.waiting_count + queue.receiving
                if work < best_work:
                    best, best_work = queue, work
        return best

    def _start(self, queue: Queue, ticket: Ticket) -> None:
        ticket.state = EXECUTING
        ticket.started = self.last
        queue.next_dispatch_r += G
        queue.executing += 1
        self.executing += 1
        self.seats_in_use += 1

    def _dispatch(self) -> None:
        """dispatchAsMuchAsPossibleLocked: free seats to the heads of the queues whose heads
        would finish first (in virtual time), round-robin among equals."""
        queues = self.queues
        count = len(queues)
        while self.waiting_total and _fits(self.limit, self.seats_in_use, self.executing):
            best = None
            best_finish = math.inf
            best_index = self.robin
            for step in range(1, count + 1):
                index = (self.robin + step) % count
                queue = queues[index]
                if not queue.waiting_count:
                    continue
                finish = queue.next_dispatch_r + G
                if finish < best_finish:
                    best, best_finish, best_index = queue, finish, index
            if best is None:
                break
            ticket = best.head()
            assert ticket is not None
            best.waiting.popleft()
            best.waiting_count -= 1
            self.waiting_total -= 1
            self.robin = best_index
            self._start(best, ticket)
            head = best.head()
            if head is not None and best.next_dispatch_r < head.arrival_r:
                best.next_dispatch_r = head.arrival_r
            assert ticket.future is not None
            if not ticket.future.done():
                ticket.future.set_result(True)

    def _drop_if_surplus(self, queue: Queue) -> None:
        """removeQueueIfEmptyLocked: a queue beyond the desired number goes once it is empty."""
        if len(self.queues) > self.desired and not queue.active() and not queue.receiving:
            try:
                index = self.queues.index(queue)
            except ValueError:
                return
            if index >= self.desired:
                del self.queues[index]
                self._hands = {}
                if self.robin >= index:
                    self.robin -= 1

    # -- for metrics and reconfiguration ---------------------------------------------------------

    def waiting(self) -> int:
        return self.waiting_total

    def idle(self) -> bool:
        return (
            self.executing == 0
            and self.waiting_total == 0
            and not any(q.receiving for q in self.queues)
        )
