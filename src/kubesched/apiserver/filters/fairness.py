"""Fair shares of the API server between clients, after API Priority and Fairness
(``apiserver/pkg/util/flowcontrol``): each request is classified by the FlowSchemas into a
priority level and a flow (``apiserver/flowcontrol/classify.py``). An exempt level's requests go
straight through; a limited level has its own seats, its share of the server's ``seats`` in
proportion to its nominal concurrency shares, so a flood in one level never takes another's
(the scheduler's and the controllers' ``workload-high`` stays free while tenants flood
``global-default`` or ``workload-low``). Within a level, a request waits in its flow's queue (at
most the level's ``queueLengthLimit``, else 429 with ``Retry-After``; a level that Rejects has no
queue) and each seat that frees goes to the next flow in turn with a request waiting, so a flow
that sends a thousand requests at once is served one at a time beside one that sends one: the
flood waits for itself. A request that waits longer than ``wait_limit`` is rejected too (APF's
queue wait timeout). Upstream shuffle-shards flows into a level's queues; here every flow has a
queue of its own, the ideal the shuffle sharding approximates."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter, OrderedDict, deque
from dataclasses import dataclass, field

SEATS = 49  # the server's seats: global-default's share is 4 (upstream: 600 seats, 49 of them)
QUEUE_LENGTH = 50  # a flow's waiting requests where the level names none (APF's queueLengthLimit)
WAIT_LIMIT = 15.0  # seconds a request may wait for a seat (the handler's 15 s APF wait)


@dataclass(slots=True)
class FairnessSettings:
    enabled: bool = True
    seats: int = SEATS
    queue_length: int = QUEUE_LENGTH
    wait_limit: float = WAIT_LIMIT


# the request's keys the APF filter sets: its Classification, and (a watch) the callable that gives
# its seat back once the initial events are out (``utilflowcontrol.WatchInitialized``)
CLASSIFIED = "kubesched.apf.classified"
WATCH_INITIALIZED = "kubesched.apf.watch_initialized"


@dataclass(slots=True)
class Pool:
    """One priority level's seats and its flows' queues."""

    seats: int
    queue_length: int  # 0: no queue (the level Rejects when no seat is free)
    name: str = ""
    busy: int = 0
    queues: OrderedDict[str, deque[asyncio.Future[None]]] = field(default_factory=OrderedDict)


class Fairness:
    """The levels' seats and queues; ``acquire`` waits its turn, ``release`` hands the seat on."""

    def __init__(self, settings: FairnessSettings | None = None) -> None:
        self.settings = settings or FairnessSettings()
        self.pools: dict[str, Pool] = {}
        self.rejected = 0  # requests refused (queue full or waited too long), for /metrics
        # for /metrics (``flowcontrol/metrics.py``): by (level, schema) and (level, schema, reason)
        self.dispatched: Counter[tuple[str, str]] = Counter()
        self.refused: Counter[tuple[str, str, str]] = Counter()
        self.executing: Counter[tuple[str, str]] = Counter()

    def pool(self, level: str = "", seats: int | None = None, queue_length: int | None = None) -> Pool:
        """The level's pool, made or resized to its configuration (``""``: one level with the
        settings' seats and queue length)."""
        want_seats = self.settings.seats if seats is None else seats
        want_length = self.settings.queue_length if queue_length is None else queue_length
        pool = self.pools.get(level)
        if pool is None:
            pool = self.pools[level] = Pool(want_seats, want_length, level)
        elif (pool.seats, pool.queue_length) != (want_seats, want_length):
            pool.seats, pool.queue_length = want_seats, want_length
            self._dispatch(pool)
        return pool

    @property
    def busy(self) -> int:
        return sum(p.busy for p in self.pools.values())

    @property
    def queues(self) -> dict[str, int]:
        """Waiting requests by flow, across levels."""
        return {f: len(q) for p in self.pools.values() for f, q in p.queues.items()}

    async def acquire(self, flow: str, pool: Pool | None = None) -> bool:
        """A seat in ``pool`` (default: the one level) for one request of ``flow`` (False:
        rejected, answer 429). Every request waits in its flow's queue, even with a seat free:
        on one event loop a request is served in one go, so the order seats are handed out in
        is the only share there is to give."""
        if not self.settings.enabled:
            return True
        if pool is None:
            pool = self.pool()
        queue = pool.queues.get(flow)
        if pool.queue_length == 0:  # Reject: a seat now or nothing
            if pool.busy >= pool.seats or pool.queues:
                self._refuse(pool, flow, "concurrency-limit")
                return False
            pool.busy += 1
            self._dispatched(pool, flow)
            return True
        if queue is None:
            queue = pool.queues[flow] = deque()
        if len(queue) >= pool.queue_length:
            self._refuse(pool, flow, "queue-full")
            return False
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(waiter)
        self._dispatch(pool)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.settings.wait_limit)
        except TimeoutError:
            if waiter.done():  # granted just as the wait ended: keep it
                self._dispatched(pool, flow)
                return True
            waiter.cancel()
            self._forget(pool, flow, waiter)
            self._refuse(pool, flow, "time-out")
            return False
        except asyncio.CancelledError:  # the client went away while waiting
            if waiter.done() and not waiter.cancelled():
                pool.busy -= 1
                self._dispatch(pool)
            else:
                waiter.cancel()
                self._forget(pool, flow, waiter)
            self.refused[(pool.name, _schema(flow), "cancelled")] += 1
            raise
        self._dispatched(pool, flow)
        return True

    def _dispatched(self, pool: Pool, flow: str) -> None:
        key = (pool.name, _schema(flow))
        self.dispatched[key] += 1
        self.executing[key] += 1

    def _refuse(self, pool: Pool, flow: str, reason: str) -> None:
        self.rejected += 1
        self.refused[(pool.name, _schema(flow), reason)] += 1

    def exempt(self, level: str, schema: str) -> None:
        """An exempt level's request, dispatched at once (counted as upstream counts it)."""
        self.dispatched[(level, schema)] += 1

    def release(self, pool: Pool | None = None, flow: str = "") -> None:
        """A request is done: its seat goes to the next flow in turn with one waiting."""
        if not self.settings.enabled:
            return
        if pool is None:
            pool = self.pool()
        pool.busy -= 1
        key = (pool.name, _schema(flow))
        if self.executing[key] > 1:
            self.executing[key] -= 1
        else:
            self.executing.pop(key, None)
        self._dispatch(pool)

    @staticmethod
    def _dispatch(pool: Pool) -> None:
        """Free seats to the waiting flows, one request each in turn (round robin)."""
        while pool.busy < pool.seats and pool.queues:
            flow, queue = next(iter(pool.queues.items()))
            pool.queues.move_to_end(flow)  # this flow goes to the back of the line
            while queue and queue[0].done():  # (cancelled waiters)
                queue.popleft()
            if queue:
                queue.popleft().set_result(None)
                pool.busy += 1
            if not queue:
                del pool.queues[flow]

    @staticmethod
    def _forget(pool: Pool, flow: str, waiter: asyncio.Future[None]) -> None:
        queue = pool.queues.get(flow)
        if queue is None:
            return
        with contextlib.suppress(ValueError):  # (already handed a seat and gone)
            queue.remove(waiter)
        if not queue:
            del pool.queues[flow]


def _schema(flow: str) -> str:
    """The FlowSchema of a flow (``schema/distinguisher``)."""
    return flow.partition("/")[0]
