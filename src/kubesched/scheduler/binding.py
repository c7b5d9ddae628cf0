"""Where binding cycles run. Upstream starts a goroutine per pod after its scheduling cycle
(``schedule_one.go``: ``go func() { ... bindingCycle ... }``), so the next cycle does not wait for
the API server's answer; the scheduling side (cache, queue, events) is only touched again when
the binding is done.

``InlineBinding`` runs PreBind/Bind at once on the caller's thread: ``simulate`` on its virtual
clock and ``up`` beside an in-process Store, where binding is a function call. ``ThreadedBinding``
runs them on a pool of threads (binding plugins may block on the network, as DefaultBinder does
against a remote API server) and hands each result back to the scheduler's thread, which takes
it in ``drain`` between cycles; a binding that is one request already sent (``submit_sent``) takes
no thread: its answer is handed back the same way.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Protocol

from kubesched.framework.status import Status

log = logging.getLogger("kubesched.scheduler")

Work = Callable[[], Status | None]
Done = Callable[[Status | None], None]

# bindings running at once: each mostly waits on the API server, so more of them in flight keep it
# busier (SchedulingBasic over HTTP: 64 against 16 measured 983-1,102 pods/s against 809-1,040)
BINDING_WORKERS = 64
# bindings submitted and not yet taken back, past which the driver holds off new scheduling cycles:
# each one keeps its CycleState, so a scheduler far ahead of the API server would grow without
# bound (upstream's goroutines are held back by client-go's rate limiter instead)
MAX_IN_FLIGHT = 256


def run_guarded(work: Work) -> Status | None:
    """A binding that raised is an Error status (a network failure, a plugin's bug), as a panic
    in a binding goroutine would not take the scheduler down either."""
    try:
        return work()
    except Exception as exc:  # anything a PreBind/Bind plugin or the client may raise
        log.warning("binding failed: %s", exc)
        return Status.error(f"binding failed: {exc}")


class Sent(Protocol):
    """A binding already on its way as one request (``binding_points.SentBind``)."""

    future: concurrent.futures.Future[None] | None

    def status(self) -> Status | None:
        """What the request came to, on the scheduler's thread, once it is answered."""
        ...


def _sent_done(sent: Sent, done: Done, _status: Status | None) -> None:
    """A sent binding's ``done``, given what its request came to."""
    done(sent.status())


class Binding(Protocol):
    notify: Callable[[], None] | None

    def submit(self, work: Work, done: Done) -> None:
        """Run ``work`` (PreBind and Bind); ``done`` gets its status on the scheduler's thread."""
        ...

    def submit_sent(self, sent: Sent, done: Done) -> None:
        """A binding already sent as one request (``Framework.send_bind``): ``done`` gets its
        status on the scheduler's thread once it is answered, with no thread of its own meanwhile."""
        ...

    def pending(self) -> bool:
        """Whether finished bindings wait for ``drain``."""
        ...

    def in_flight(self) -> int:
        """Bindings submitted whose results have not been taken back yet."""
        ...

    def saturated(self) -> bool: ...

    def drain(self) -> int:
        """Call ``done`` for every finished binding; returns how many."""
        ...

    def close(self, timeout: float = 10.0) -> None: ...


class InlineBinding:
    """Binding as a plain call, finished before ``submit`` returns."""

    notify: Callable[[], None] | None = None

    def submit(self, work: Work, done: Done) -> None:
        done(run_guarded(work))

    def submit_sent(self, sent: Sent, done: Done) -> None:
        if sent.future is not None:
            concurrent.futures.wait([sent.future])
        done(sent.status())

    def pending(self) -> bool:
        return False

    def in_flight(self) -> int:
        return 0

    def saturated(self) -> bool:
        return False

    def drain(self) -> int:
        return 0

    def close(self, timeout: float = 10.0) -> None:
        return None


class ThreadedBinding:
    """Bindings on ``workers`` threads; results queue up for the scheduler's thread."""

    def __init__(self, workers: int = BINDING_WORKERS, max_in_flight: int = MAX_IN_FLIGHT) -> None:
        self.max_in_flight = max_in_flight
        self.notify: Callable[[], None] | None = None
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="kubesched-bind")
        self._finished: queue.SimpleQueue[tuple[Done, Status | None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._running = 0
        self._held = False

    def submit(self, work: Work, done: Done) -> None:
        with self._lock:
            self._running += 1
        self._pool.submit(self._run, work, done)

    def submit_sent(self, sent: Sent, done: Done) -> None:
        # partials, not closures: nothing here refers back to itself, so a binding's state is
        # freed by reference counting when it is done, not left to the cyclic collector
        with self._lock:
            self._running += 1
        finish = functools.partial(_sent_done, sent, done)
        if sent.future is None:  # already read: taken back at the next drain, as an error
            self._finish(finish, None)
        else:
            sent.future.add_done_callback(functools.partial(self._answered, finish))

    def _answered(self, done: Done, _future: concurrent.futures.Future[None]) -> None:
        self._finish(done, None)

    def _run(self, work: Work, done: Done) -> None:
        self._finish(done, run_guarded(work))

    def _finish(self, done: Done, status: Status | None) -> None:
        self._finished.put((done, status))
        if self.notify is not None:
            self.notify()

    def pending(self) -> bool:
        return not self._finished.empty()

    def in_flight(self) -> int:
        return self._running

    def saturated(self) -> bool:
        """Past ``max_in_flight`` until half of them are taken back: the scheduler resumes in
        bursts rather than one cycle per finished binding."""
        if self._held:
            self._held = self._running > self.max_in_flight // 2
        else:
            self._held = self._running >= self.max_in_flight
        return self._held

    def drain(self) -> int:
        n = 0
        while True:
            try:
                done, status = self._finished.get_nowait()
            except queue.Empty:
                return n
            with self._lock:
                self._running -= 1
            done(status)
            n += 1

    def close(self, timeout: float = 10.0) -> None:
        """Let the bindings in flight finish (up to ``timeout``) and take their results."""
        deadline = time.monotonic() + timeout
        while self._running and time.monotonic() < deadline:
            try:
                done, status = self._finished.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            with self._lock:
                self._running -= 1
            done(status)
        self._pool.shutdown(wait=False, cancel_futures=True)
