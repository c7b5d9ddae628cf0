"""Fair shares of the API server between clients, after API Priority and Fairness
(``apiserver/pkg/util/flowcontrol``): requests of ``system:masters`` are exempt (the ``exempt``
FlowSchema); every other request is of the flow of its user (``ByUser``) and takes one of
``seats`` concurrency seats. When none is free it waits in its flow's queue (at most
``queue_length``, else 429 with ``Retry-After``, as a full queue is rejected), and each seat that
frees goes to the next flow in turn that has a request waiting, so a flow that sends a thousand
requests at once is served one at a time beside one that sends one: the flood waits for itself.
A request that waits longer than ``wait_limit`` is rejected too (APF's queue wait timeout)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict, deque
from dataclasses import dataclass

SEATS = 4  # requests of non-exempt flows being served at once (across their awaits)
QUEUE_LENGTH = 50  # a flow's waiting requests (APF's queueLengthLimit)
WAIT_LIMIT = 15.0  # seconds a request may wait for a seat (the handler's 15 s APF wait)


@dataclass(slots=True)
class FairnessSettings:
    enabled: bool = True
    seats: int = SEATS
    queue_length: int = QUEUE_LENGTH
    wait_limit: float = WAIT_LIMIT


class Fairness:
    """The seats and the flows' queues; ``acquire`` waits its turn, ``release`` hands the seat on."""

    def __init__(self, settings: FairnessSettings | None = None) -> None:
        self.settings = settings or FairnessSettings()
        self.busy = 0
        self.queues: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self.rejected = 0  # requests refused (queue full or waited too long), for /metrics

    async def acquire(self, flow: str) -> bool:
        """A seat for one request of ``flow`` (False: rejected, answer 429). Every request waits
        in its flow's queue, even with a seat free: on one event loop a request is served in one
        go, so the order seats are handed out in is the only share there is to give."""
        if not self.settings.enabled:
            return True
        queue = self.queues.get(flow)
        if queue is None:
            queue = self.queues[flow] = deque()
        if len(queue) >= self.settings.queue_length:
            self.rejected += 1
            return False
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(waiter)
        self._dispatch()
        try:
            await asyncio.wait_for(asyncio.shield(waiter), self.settings.wait_limit)
        except TimeoutError:
            if waiter.done():  # granted just as the wait ended: keep it
                return True
            waiter.cancel()
            self._forget(flow, waiter)
            self.rejected += 1
            return False
        except asyncio.CancelledError:  # the client went away while waiting
            if waiter.done() and not waiter.cancelled():
                self.release()
            else:
                waiter.cancel()
                self._forget(flow, waiter)
            raise
        return True

    def release(self) -> None:
        """A request is done: its seat goes to the next flow in turn with one waiting."""
        if not self.settings.enabled:
            return
        self.busy -= 1
        self._dispatch()

    def _dispatch(self) -> None:
        """Free seats to the waiting flows, one request each in turn (round robin)."""
        while self.busy < self.settings.seats and self.queues:
            flow, queue = next(iter(self.queues.items()))
            self.queues.move_to_end(flow)  # this flow goes to the back of the line
            while queue and queue[0].done():  # (cancelled waiters)
                queue.popleft()
            if queue:
                queue.popleft().set_result(None)
                self.busy += 1
            if not queue:
                del self.queues[flow]

    def _forget(self, flow: str, waiter: asyncio.Future[None]) -> None:
        queue = self.queues.get(flow)
        if queue is None:
            return
        with contextlib.suppress(ValueError):  # (already handed a seat and gone)
            queue.remove(waiter)
        if not queue:
            del self.queues[flow]
