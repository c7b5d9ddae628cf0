"""An asyncio leader elector with client-go's semantics (``tools/leaderelection/leaderelection.go``,
v0.36).

``run``: acquire (``tryAcquireOrRenew`` every retryPeriod with up to 1.2× jitter until it
succeeds), call ``on_started_leading``, renew (every retryPeriod, each round a poll of
``tryAcquireOrRenew`` bounded by renewDeadline; a round that does not succeed in time loses
the lease), then release if ``release_on_cancel`` and call ``on_stopped_leading``.
``try_acquire_or_renew``: the fast path for a leader whose lease it last saw valid, else get →
create when absent → refuse while another holder's lease is valid (judged by when *this*
replica observed the record change, so clocks need not agree) → update with optimistic
concurrency, keeping acquireTime and leaseTransitions for the same holder, bumping them on a
change of holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kubesched.leaderelection.config import JITTER_FACTOR, LeaderElectionConfig
from kubesched.leaderelection.record import LeaderElectionRecord, micro_time

log = logging.getLogger("kubesched.leaderelection")


class Lock(Protocol):
    """``resourcelock.Interface``: the record behind one object, with optimistic concurrency."""

    identity: str

    def describe(self) -> str: ...

    async def get(self) -> tuple[LeaderElectionRecord, bytes] | None:
        """The record and its raw form, or None when the object does not exist."""
        ...

    async def create(self, record: LeaderElectionRecord) -> None: ...

    async def update(self, record: LeaderElectionRecord) -> None:
        """Write over the object last read or written (a stale one is a conflict error)."""
        ...


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def wall(self) -> float:
        """Unix time, for acquireTime and renewTime."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@dataclass(slots=True)
class Callbacks:
    on_started_leading: Callable[[], None] = lambda: None  # upstream runs it as a goroutine: do not block
    on_stopped_leading: Callable[[], None] = lambda: None
    on_new_leader: Callable[[str], None] = lambda identity: None


class LeaderElector:
    def __init__(
        self,
        lock: Lock,
        config: LeaderElectionConfig,
        callbacks: Callbacks | None = None,
        *,
        release_on_cancel: bool = True,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        config.validate()
        self.lock = lock
        self.config = config
        self.callbacks = callbacks or Callbacks()
        self.release_on_cancel = release_on_cancel
        self.clock = clock or RealClock()
        self.rng = rng or random.Random()
        self.observed: LeaderElectionRecord | None = None
        self.observed_raw: bytes = b""
        self.observed_time = 0.0
        self._reported = ""
        self.leading = False
        self._task: asyncio.Task[Any] | None = None

    # -- state -------------------------------------------------------------------------------------
    def is_leader(self) -> bool:
        return self.observed is not None and self.observed.holder_identity == self.lock.identity

    def is_leading(self) -> bool:
        """True from acquiring the lease until renewing it failed or ``stop`` was called; the
        scheduler checks it before every cycle."""
        return self.leading

    def check(self, max_tolerable_expired: float) -> str | None:
        """The healthz watchdog (``Check``): a leader whose last renewal it saw is older than
        leaseDuration + the tolerance is unhealthy (its renew loop is stuck)."""
        if not self.is_leader():
            return None
        if self.clock.monotonic() - self.observed_time > self.config.lease_duration + max_tolerable_expired:
            return f"failed election to renew leadership on lease {self.config.resource_name}"
        return None

    def leader_identity(self) -> str:
        return self.observed.holder_identity if self.observed is not None else ""

    def _set_observed(self, record: LeaderElectionRecord, raw: bytes) -> None:
        self.observed, self.observed_raw, self.observed_time = record, raw, self.clock.monotonic()

    def _valid(self, now: float) -> bool:
        assert self.observed is not None
        return self.observed_time + self.observed.lease_duration_seconds > now

    def _report_transition(self) -> None:
        """``maybeReportTransition``: tell about a holder not seen before."""
        holder = self.leader_identity()
        if holder and holder != self._reported:
            self._reported = holder
            if holder != self.lock.identity:
                log.info("lock %s is held by %s and has not yet expired", self.lock.describe(), holder)
            self.callbacks.on_new_leader(holder)

    # -- one attempt ---------------------------------------------------------------------------------
    async def try_acquire_or_renew(self) -> bool:
        now = self.clock.monotonic()
        wall = micro_time(self.clock.wall())
        record = LeaderElectionRecord(
            holder_identity=self.lock.identity,
            lease_duration_seconds=_whole_seconds(self.config.lease_duration),
            acquire_time=wall,
            renew_time=wall,
            leader_transitions=0,
        )
        # fast path: still the holder of a lease this replica last saw valid
        if self.is_leader() and self._valid(now):
            assert self.observed is not None
            mine = replace(
                record, acquire_time=self.observed.acquire_time, leader_transitions=self.observed.leader_transitions
            )
            try:
                await self.lock.update(mine)
            except Exception as exc:  # a conflict or a network error: the slow path decides
                log.debug("fast-path renewal of %s failed: %s", self.lock.describe(), exc)
            else:
                self._set_observed(mine, mine.raw())
                return True
        try:
            got = await self.lock.get()
        except Exception as exc:
            log.error("error retrieving resource lock %s: %s", self.lock.describe(), exc)
            return False
        if got is None:
            return await self._write(self.lock.create, record, "error initially creating leader election record")
        old, raw = got
        if raw != self.observed_raw:
            self._set_observed(old, raw)
        if old.holder_identity and self._valid(now) and old.holder_identity != self.lock.identity:
            return False
        if old.holder_identity == self.lock.identity:
            record = replace(record, acquire_time=old.acquire_time, leader_transitions=old.leader_transitions)
        else:
            record = replace(record, leader_transitions=old.leader_transitions + 1)
        return await self._write(self.lock.update, record, "Failed to update lock")

    async def _write(
        self, write: Callable[[LeaderElectionRecord], Awaitable[None]], record: LeaderElectionRecord, failure: str
    ) -> bool:
        """Write ``record``; on success it is what this replica last observed."""
        try:
            await write(record)
        except Exception as exc:  # a conflict, a refusal or a network error: logged, the caller retries
            log.error("%s: %s", failure, exc)
            return False
        self._set_observed(record, record.raw())
        return True

    # -- the loops ---------------------------------------------------------------------------------
    async def acquire(self) -> None:
        """Until acquired (``wait.JitterUntil`` with sliding period)."""
        desc = self.lock.describe()
        log.info("attempting to acquire leader lease %s...", desc)
        while True:
            ok = await self.try_acquire_or_renew()
            self._report_transition()
            if ok:
                log.info("successfully acquired lease %s", desc)
                return
            period = self.config.retry_period
            await self.clock.sleep(period + self.rng.random() * JITTER_FACTOR * period)

    async def renew(self) -> None:
        """Every retryPeriod, renew within renewDeadline; returns when that fails."""
        desc = self.lock.describe()
        while True:
            deadline = self.clock.monotonic() + self.config.renew_deadline
            ok, err = False, "timed out waiting for the condition"
            while True:
                remaining = deadline - self.clock.monotonic()
                if remaining <= 0:
                    break
                ok = await self._within(self.try_acquire_or_renew(), remaining)
                if ok:
                    break
                remaining = deadline - self.clock.monotonic()
                if remaining <= 0:
                    break
                await self.clock.sleep(min(self.config.retry_period, remaining))
            self._report_transition()
            if not ok:
                log.info("failed to renew lease %s: %s", desc, err)
                return
            await self.clock.sleep(self.config.retry_period)

    async def _within(self, attempt: Coroutine[Any, Any, bool], seconds: float) -> bool:
        """``attempt``'s result, or False when it takes longer than ``seconds`` on the elector's
        clock (a hung request must not hold the renew loop past renewDeadline)."""
        task = asyncio.ensure_future(attempt)
        timer = asyncio.ensure_future(self.clock.sleep(seconds))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return False

    async def release(self) -> bool:
        """Give the lease up (holder "", a 1 s duration), keeping the transition count."""
        if not self.is_leader():
            return True
        assert self.observed is not None
        wall = micro_time(self.clock.wall())
        record = LeaderElectionRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=wall,
            renew_time=wall,
            leader_transitions=self.observed.leader_transitions,
        )
        return await self._write(self.lock.update, record, "Failed to release lock")

    async def stop(self) -> None:
        """Cancel ``run`` (the context's cancellation upstream): release, then stop leading."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def run(self) -> None:
        """Acquire, lead until the lease is lost or the task is cancelled, then stop leading."""
        self._task = asyncio.current_task()
        try:
            await self.acquire()
            self.leading = True
            self.callbacks.on_started_leading()
            await self.renew()
        finally:
            # ``leading`` drops before anything else, so the scheduler stops at once; the release
            # is bounded by retryPeriod (the API may be what failed)
            was_leading, self.leading = self.leading, False
            if was_leading and self.release_on_cancel:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._within(self.release(), self.config.retry_period))
            self.callbacks.on_stopped_leading()


def _whole_seconds(seconds: float) -> int:
    """``int(LeaseDuration / time.Second)``: the record carries whole seconds."""
    return int(seconds)
