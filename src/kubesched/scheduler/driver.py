"""Running the Scheduler in real time (``scheduler.go`` Run: the scheduleOne loop, the backoff
flush every second and the unschedulable-pods flush every 30 s), on an asyncio loop (in the
process that holds the Store) or on a thread of its own (against a remote API server)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable

from kubesched.clock import RealClock
from kubesched.scheduler.queue import UNSCHEDULABLE_FLUSH_PERIOD
from kubesched.scheduler.scheduler import Scheduler

log = logging.getLogger("kubesched.scheduler")
BURST = 64  # cycles between two yields to the event loop
MAX_IDLE = 1.0  # podBackoffQ is flushed at least every second


class RealtimeDriver:
    def __init__(self, sched: Scheduler, clock: RealClock) -> None:
        self.sched = sched
        self.clock = clock
        self._last_leftover_flush = clock.now()

    def step(self) -> float:
        """One round, whatever it raises: an error of a whole round (a timer, an event handler)
        is logged with its traceback and counted in the scheduler's ``health``, and the loop goes
        on after a pause (one pod's error is handled in its cycle); every good round is recorded."""
        try:
            wait = self._step()
        except Exception as exc:
            log.exception("a scheduling round failed; the scheduler goes on")
            self.sched.health.error("scheduler", "a scheduling round", exc)
            return 0.1
        self.sched.health.ok("scheduler")
        return wait

    def _step(self) -> float:
        """Timers, events, flushes and up to BURST cycles. Returns how long the caller may sleep
        (0: call again at once) unless woken by an event."""
        sched, clock = self.sched, self.clock
        clock.fire_due()
        now = clock.now()
        leftover = now - self._last_leftover_flush >= UNSCHEDULABLE_FLUSH_PERIOD
        if leftover:
            self._last_leftover_flush = now

        def go_on() -> bool:
            # a scheduler far ahead of its bindings waits for them (woken when one finishes);
            # events that arrived are handled before the next cycle
            return not sched.binding.saturated() and not sched.has_events()

        ran = sched.round(flush=True, flush_unschedulable=leftover, cycles=BURST, go_on=go_on)
        if ran or sched.has_events():
            return 0.0
        wait = MAX_IDLE
        for t in (clock.next_timer(), sched.queue.next_backoff_expiry()):
            if t is not None:
                wait = min(wait, max(0.0, t - now))
        return wait

    async def run_async(self, stop: asyncio.Event) -> None:
        wake = asyncio.Event()
        self.sched.start(notify=wake.set)
        self.sched.health.register("scheduler")
        while not stop.is_set():
            wait = self.step()
            if wait <= 0:
                await asyncio.sleep(0)
                continue
            wake.clear()
            if self.sched.has_events():
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), wait)

    def run_thread(
        self, stop: threading.Event, wake: threading.Event, active: Callable[[], bool] | None = None
    ) -> None:
        """Until ``stop``. While ``active`` says no (a replica that does not lead), the informers'
        events still reach the cache and the queue, so a follower is warm, but no pod is popped."""

        def notify() -> None:
            # Event.set takes a lock and notifies every time; most events arrive while it is set.
            # Safe without it: the producer buffers before it looks, the consumer clears before it
            # checks the buffer, so an event seen "already set" is found by that check.
            if not wake.is_set():
                wake.set()

        self.sched.start(notify=notify)
        self.sched.health.register("scheduler")
        while not stop.is_set():
            if active is not None and not active():
                wake.clear()
                try:
                    self.sched.process_events()
                except Exception as exc:
                    log.exception("a follower's event round failed; the scheduler goes on")
                    self.sched.health.error("scheduler", "an event round", exc)
                else:
                    self.sched.health.ok("scheduler")
                if not self.sched.has_events():
                    wake.wait(MAX_IDLE)
                continue
            wait = self.step()
            if wait <= 0:
                continue
            wake.clear()
            if self.sched.has_events():
                continue
            wake.wait(wait)
