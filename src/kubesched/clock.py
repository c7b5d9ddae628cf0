"""Clocks: a virtual clock with timers for simulations (no wall time spent waiting) and the real one."""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
EPOCH_UNIX = EPOCH.timestamp()


class Clock(Protocol):
    def now(self) -> float: ...

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer: ...


class Timer:
    """A scheduled callback; ``cancel()`` makes it a no-op."""

    __slots__ = ("cancelled", "fn", "when")

    def __init__(self, when: float, fn: Callable[[], None]) -> None:
        self.when = when
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


def _fire(timer: Timer) -> None:
    """A real-time timer due: its callback, unless it was cancelled."""
    if not timer.cancelled:
        timer.fn()


class VirtualClock:
    """Seconds since the simulation epoch; time moves only when ``advance_to`` is called."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, Timer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer:
        timer = Timer(when, fn)
        heapq.heappush(self._timers, (when, next(self._seq), timer))
        return timer

    def next_timer(self) -> float | None:
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    def advance_to(self, when: float) -> None:
        """Move time forward to ``when``, firing due timers in order."""
        while self._timers and self._timers[0][0] <= when:
            at, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, at)
            timer.fn()
        self._now = max(self._now, when)


class RealClock:
    """Wall time (seconds since EPOCH, so timestamps render as real dates); timers are fired by
    the thread that polls ``fire_due`` (the scheduler's loop)."""

    def __init__(self) -> None:
        self._virtual = VirtualClock(self.now())

    def now(self) -> float:
        return time.time() - EPOCH_UNIX

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer:
        return self._virtual.call_at(when, fn)

    def next_timer(self) -> float | None:
        return self._virtual.next_timer()

    def fire_due(self) -> None:
        self._virtual.advance_to(self.now())


@functools.lru_cache(maxsize=4096)
def _rfc3339_second(second: int) -> str:
    return (EPOCH + timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339(seconds: float) -> str:
    """Render a clock reading as an RFC 3339 timestamp (metav1.Time, whole seconds)."""
    return _rfc3339_second(int(seconds))


def parse_rfc3339(text: str) -> float:
    """Seconds since EPOCH for a metav1.Time string."""
    global _last_parsed
    last = _last_parsed
    if last[0] == text:  # objects created in the same second share their timestamp
        return last[1]
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    value = (dt - EPOCH).total_seconds()
    _last_parsed = (text, value)
    return value


_last_parsed: tuple[str, float] = ("", 0.0)


def rfc3339_micro(seconds: float) -> str:
    """A clock reading as metav1.MicroTime (``2026-01-01T00:00:00.000000Z``)."""
    global _last_micro
    last = _last_micro
    if last[0] == seconds:  # a virtual clock stands still while many events are recorded
        return last[1]
    whole = math.floor(seconds)
    text = f"{_rfc3339_second(whole)[:-1]}.{min(999_999, round((seconds - whole) * 1e6)):06d}Z"
    _last_micro = (seconds, text)
    return text


_last_micro: tuple[float, str] = (math.nan, "")


class WallClock:
    """Wall time (seconds since EPOCH, so timestamps render as real dates) with timers on an
    asyncio loop; ``call_at`` may be called from any thread."""

    def __init__(self, loop: Any) -> None:
        self.loop = loop

    def now(self) -> float:
        return time.time() - EPOCH_UNIX

    def call_at(self, when: float, fn: Callable[[], None]) -> Timer:
        timer = Timer(when, fn)
        # bound methods, not closures: compiled, two closures sharing an environment hold each other
        self.loop.call_soon_threadsafe(self._arm, timer)
        return timer

    def _arm(self, timer: Timer) -> None:
        self.loop.call_later(max(0.0, timer.when - self.now()), _fire, timer)
