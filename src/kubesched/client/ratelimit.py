"""Client-side rate limiting, as client-go's ``flowcontrol.NewTokenBucketRateLimiter(qps, burst)``
limits every request of a clientset (``clientConnection.qps`` / ``burst``: kube-scheduler's
defaults are 50 and 100)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class TokenBucket:
    """A bucket of ``burst`` tokens refilled at ``qps`` per second; each request takes one and
    waits for it when the bucket is empty (a reservation, first come first served, as
    ``golang.org/x/time/rate``'s ``Wait``). ``qps`` < 0: no limit (client-go builds no limiter);
    0: client-go's DefaultQPS 5 and DefaultBurst 10."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if qps == 0:
            qps, burst = 5.0, burst or 10
        self.qps = float(qps)
        self.burst = max(int(burst), 1)
        self._now = now
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = now()

    @property
    def unlimited(self) -> bool:
        return self.qps < 0

    def reserve(self) -> float:
        """Take a token; how long to wait before using it."""
        if self.unlimited:
            return 0.0
        now = self._now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def wait(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)
