"""Fault injection for tests (off unless the server runs with ``--fault-injection``): added
latency, requests failed with 503 or dropped (the connection closed without an answer) at a
given rate, and a pause that holds every request, watches included, until it ends.

Set through ``PUT /debug/kubesched/faults`` with the bearer token, from loopback only:
``{"latencySeconds": 0.2, "failRate": 0.1, "dropRate": 0, "pauseSeconds": 12}`` (absent
fields are reset to none). ``GET`` shows what is in force.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.errors import ApiError, BadRequest, Forbidden

PATH = "/debug/kubesched/faults"
LOOPBACK = ("127.0.0.1", "::1")


class ServiceUnavailable(ApiError):
    code = 503
    reason = "ServiceUnavailable"


@dataclass(slots=True)
class Faults:
    latency: float = 0.0
    fail_rate: float = 0.0
    drop_rate: float = 0.0
    paused_until: float = 0.0  # event-loop time
    rng: random.Random = field(default_factory=random.Random)

    def set(self, body: Any, now: float) -> None:
        if not isinstance(body, dict):
            raise BadRequest("faults: expected a JSON object")
        values: dict[str, float] = {}
        for key, lo, hi in (
            ("latencySeconds", 0.0, 600.0),
            ("failRate", 0.0, 1.0),
            ("dropRate", 0.0, 1.0),
            ("pauseSeconds", 0.0, 600.0),
        ):
            v = body.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= v <= hi:
                raise BadRequest(f"faults: {key} must be a number from {lo:g} to {hi:g}")
            values[key] = float(v)
        unknown = set(body) - {"latencySeconds", "failRate", "dropRate", "pauseSeconds"}
        if unknown:
            raise BadRequest(f'faults: unknown field "{sorted(unknown)[0]}"')
        self.latency = values["latencySeconds"]
        self.fail_rate = values["failRate"]
        self.drop_rate = values["dropRate"]
        self.paused_until = now + values["pauseSeconds"] if values["pauseSeconds"] else 0.0

    def show(self, now: float) -> dict[str, float]:
        return {
            "latencySeconds": self.latency,
            "failRate": self.fail_rate,
            "dropRate": self.drop_rate,
            "pauseSeconds": max(0.0, self.paused_until - now),
        }

    async def before(self) -> str | None:
        """Apply the faults to a request about to be served: "drop", "fail" or None (serve it)."""
        loop = asyncio.get_running_loop()
        while loop.time() < self.paused_until:
            await asyncio.sleep(min(0.05, self.paused_until - loop.time()))
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.drop_rate and self.rng.random() < self.drop_rate:
            return "drop"
        if self.fail_rate and self.rng.random() < self.fail_rate:
            return "fail"
        return None

    def paused(self) -> bool:
        return asyncio.get_running_loop().time() < self.paused_until


def check_loopback(remote: str | None) -> None:
    if remote not in LOOPBACK:
        raise Forbidden("fault injection is only accepted from loopback")
