"""Events written by a process of their own: the scheduler's event broadcaster, out of its GIL.

client-go's events broadcaster (``tools/events``) queues an event and returns; a goroutine
POSTs it, and at most 1000 events wait, more are dropped. In one Python process the HTTP work of
one event per binding costs as much as the scheduling cycle itself, so ``EventSink`` hands the
finished events.k8s.io/v1 objects over a pipe to a child process that POSTs them with its own
kubernetes_asyncio client. The child ends when the pipe closes, whatever ended the scheduler
(SIGKILL included); on ``close`` it first sends what it was given.

The child writes through an ``EventWriter``: series, retries and its own bound on what it holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import multiprocessing
import threading
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

from kubesched import eventloop
from kubesched.client.connection import api_client
from kubesched.client.eventwriter import MAX_QUEUED, RETRY_SLEEP, EventWriter

log = logging.getLogger("kubesched.client")

SEND_GRACE = 3.0


class EventSink:
    """The parent's side: ``send`` queues (dropping past MAX_QUEUED), a thread pipes batches."""

    def __init__(
        self, kubeconfig: str | None, qps: float = -1, burst: int = 0, retry_sleep: float = RETRY_SLEEP
    ) -> None:
        """``qps`` / ``burst``: the event client's own rate limit (< 0: none); ``retry_sleep``:
        the pause between two tries of one event."""
        ctx = multiprocessing.get_context("spawn")  # the parent has threads: no fork
        reader, self._conn = ctx.Pipe(duplex=False)
        self._proc = ctx.Process(
            target=serve,
            args=(kubeconfig, reader, qps, burst, retry_sleep, gc.get_threshold()),
            name="kubesched-events",
            daemon=True,
        )
        self._proc.start()
        reader.close()
        self._pending: deque[dict[str, Any]] = deque()
        self._wake = threading.Event()
        self._closing = False
        self.broken = False
        self.dropped = 0
        self._thread = threading.Thread(target=self._pipe, name="kubesched-event-pipe", daemon=True)
        self._thread.start()

    def send(self, event: dict[str, Any]) -> bool:
        """Queue an event; False when the sink is gone (the caller sends it itself)."""
        if self.broken:
            return False
        if len(self._pending) >= MAX_QUEUED:
            self.dropped += 1
            if self.dropped in (1, 100) or self.dropped % 10_000 == 0:
                log.error("event queue full, %d events dropped", self.dropped)
            return True
        self._pending.append(event)
        if not self._wake.is_set():
            self._wake.set()
        return True

    def _pipe(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            batch = []
            while self._pending:
                batch.append(self._pending.popleft())
            try:
                if batch:
                    self._conn.send(batch)
                if self._closing:
                    self._conn.close()
                    return
            except (OSError, ValueError) as exc:  # the child is gone
                log.error("event process gone (%s); sending events in process", exc)
                self.broken = True
                return

    def close(self, timeout: float = SEND_GRACE + 1) -> None:
        """Hand over what is queued, close the pipe and wait for the child to send it."""
        self._closing = True
        self._wake.set()
        self._thread.join(timeout)
        self._proc.join(timeout)
        if self._proc.is_alive():
            self._proc.terminate()


def serve(
    kubeconfig: str | None,
    conn: Connection,
    qps: float = -1,
    burst: int = 0,
    retry_sleep: float = RETRY_SLEEP,
    gc_thresholds: tuple[int, ...] = (),
) -> None:
    """The child: POST every event received until the pipe closes. It collects garbage as its
    parent does (``gc_thresholds``: the scheduler command's, not the interpreter's defaults, with
    which the series cache's growth alone set off a young collection every few events)."""
    if gc_thresholds:
        gc.set_threshold(*gc_thresholds)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        eventloop.run(_pump(kubeconfig, conn, qps, burst, retry_sleep))


async def _pump(
    kubeconfig: str | None, conn: Connection, qps: float = -1, burst: int = 0, retry_sleep: float = RETRY_SLEEP
) -> None:

    from kubesched.client.rest import no_env_lookups

    loop = asyncio.get_running_loop()
    batches: asyncio.Queue[list[dict[str, Any]] | None] = asyncio.Queue()

    def read() -> None:
        while True:
            try:
                batch = conn.recv()
            except (EOFError, OSError):
                batch = None
            loop.call_soon_threadsafe(batches.put_nowait, batch)
            if batch is None:
                return

    api = await api_client(kubeconfig)
    no_env_lookups(api)
    writer = EventWriter(api, qps, burst, retry_sleep)
    # what start-up made (modules, the client) is out of the collections' walks from now on
    gc.collect()
    gc.freeze()
    rounds = loop.create_task(writer.run_rounds())
    threading.Thread(target=read, name="kubesched-event-reader", daemon=True).start()
    try:
        while (batch := await batches.get()) is not None:
            for event in batch:
                writer.record(event)
        await writer.drain(SEND_GRACE)
    finally:
        rounds.cancel()
        await api.close()
