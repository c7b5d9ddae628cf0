"""client-go's events broadcaster writing to an API server (``tools/events/event_broadcaster.go``):
repeats folded into series (``eventseries``), each write tried up to 12 times, what waits bounded.

``EventWriter`` runs on the remote client's asyncio loop, beside the informers and the bindings, as
client-go's broadcaster runs in the scheduler's process. ``record`` takes a finished
events.k8s.io/v1 Event and returns at once; ``run_rounds`` is the broadcaster's two timers,
writing series that are refreshed or finished.

A write that fails for a reason that may pass (the connection, a 429 or a 5xx, or a create of a
series whose event has just appeared) is tried again after 10 s with 25 % jitter, as
``attemptRecording`` does; a server that refuses the event itself (another 4xx) is not asked
again. Events held, waiting or being retried, are at most MAX_QUEUED; past it new ones are
dropped and counted, so a dead API server cannot grow memory.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any

from kubernetes_asyncio import client as k8s
from kubernetes_asyncio.client.exceptions import ApiException

from kubesched.client.eventseries import Due, EventSeriesCache, series_patch
from kubesched.client.keepalive import KeepAliveWriter, write_json
from kubesched.client.ratelimit import TokenBucket
from kubesched.client.rest import api_error, path_segment
from kubesched.clock import EPOCH_UNIX

log = logging.getLogger("kubesched.client")

MAX_QUEUED = 1000  # client-go: maxQueuedEvents, then DropIfChannelFull
IN_FLIGHT = 64
MAX_TRIES = 12  # tools/events: maxTriesPerEvent
RETRY_SLEEP = 10.0  # tools/events: defaultSleepDuration, jittered by up to 25 %
STRATEGIC_MERGE = "application/strategic-merge-patch+json"


def retryable(status: int | None) -> bool:
    """``recordEvent``: transport errors are tried again; client-go's rest client also retries a
    429 or 5xx (with Retry-After) before the broadcaster sees it. Any other answer is final."""
    return status is None or status == 429 or status >= 500


def now() -> float:
    """Seconds on the clock ``kubesched.clock`` formats (the events' times)."""
    return time.time() - EPOCH_UNIX


class EventWriter:
    """The sink side of the broadcaster for one events.k8s.io/v1 client."""

    def __init__(self, api: k8s.ApiClient, qps: float = -1, burst: int = 0, retry_sleep: float = RETRY_SLEEP) -> None:
        self._api = api
        self._writer = KeepAliveWriter.for_api(api)
        self.series = EventSeriesCache(now())
        self.retry_sleep = retry_sleep
        self.limiter = TokenBucket(qps, burst)
        self.held = 0  # events received and not yet written or given up: at most MAX_QUEUED
        self.dropped = 0
        self._slots = asyncio.Semaphore(IN_FLIGHT)
        self._tasks: set[asyncio.Task[None]] = set()

    def record(self, event: dict[str, Any]) -> None:
        """``recordToSink``: count the event into its series; start the write it needs, if any."""
        if self.held >= MAX_QUEUED:
            self.dropped += 1
            if self.dropped in (1, 100) or self.dropped % 10_000 == 0:
                log.error("events waiting to be sent are at the limit, %d dropped", self.dropped)
            return
        write = self.series.observe(event, now())
        if write is not None:
            self._start(self._attempt(write))

    def _start(self, coro: Any) -> None:
        self.held += 1
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self.held -= 1
        self._tasks.discard(task)

    async def _attempt(self, event: dict[str, Any]) -> None:
        """``attemptRecording``: up to MAX_TRIES writes, RETRY_SLEEP (jittered) apart."""
        for attempt in range(1, MAX_TRIES + 1):
            retry, why = await self.write(event)
            if not retry:
                return
            if attempt == MAX_TRIES:
                log.error("unable to write event %s (retry limit exceeded): %s", event.get("reason"), why)
                return
            await asyncio.sleep(self.retry_sleep * (1 + 0.25 * random.random()))

    async def write(self, event: dict[str, Any]) -> tuple[bool, str]:
        """``recordEvent``, once: a series is PATCHed (strategic merge, as the broadcaster sends),
        created when the PATCH finds no event; anything else is created. Returns whether to try
        again, and why it failed."""
        meta = event["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        base = f"/apis/events.k8s.io/v1/namespaces/{path_segment(namespace)}/events"
        async with self._slots:
            await self.limiter.wait()
            status: int | None = None
            try:
                if event.get("series") is not None:
                    try:
                        patch = series_patch(event)
                        path = f"{base}/{path_segment(name)}"
                        await write_json(self._api, self._writer, "PATCH", path, patch, STRATEGIC_MERGE, decode=False)
                        return False, ""
                    except ApiException as exc:
                        if exc.status != 404:
                            raise
                    await self.limiter.wait()
                created = {**event, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
                await write_json(self._api, self._writer, "POST", base, created, "application/json", decode=False)
                return False, ""
            except ApiException as exc:
                status, why = exc.status, api_error(exc).message
                if status == 409 and event.get("series") is not None:
                    return True, why  # the event appeared between the PATCH and the create
            except Exception as exc:  # the connection: tried again
                why = str(exc) or type(exc).__name__
        if not retryable(status):
            log.warning("server rejected event %s (will not retry): %s", event.get("reason"), why)
            return False, why
        log.warning("unable to write event %s (may retry after sleeping): %s", event.get("reason"), why)
        return True, why

    async def run_rounds(self) -> None:
        """The broadcaster's timers: ``refreshExistingEventSeries`` every 30 minutes and
        ``finishSeries`` every 6; runs until cancelled."""
        while True:
            await asyncio.sleep(max(0.0, self.series.next_due() - now()))
            for due in self.series.due(now()):
                self._start(self._round_write(due))

    async def _round_write(self, due: Due) -> None:
        retry, _ = await self.write(due.event)
        if retry and due.finishing:
            self.series.restore(due)  # written again at the next round

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the writes under way."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout)

    def close(self) -> None:
        """Close the writer's idle connections (on its loop)."""
        if self._writer is not None:
            self._writer.close()
