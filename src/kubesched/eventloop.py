"""The asyncio event loop kubesched's network code runs on: uvloop's (libuv) where it is
installed, asyncio's own elsewhere (Windows, which uvloop does not support).

Every request the API server serves, every watch event the scheduler's informers read and every
binding and Event it writes passes through the loop's transport and callback machinery, which in
asyncio's pure-Python selector loop costs more than the request's own work. uvloop implements the
same asyncio API over libuv; the HTTP benchmark (``benchmarks/scheduler_perf_http.py``) runs about
a quarter faster on it with every process using less CPU. Decisions do not depend on the loop.
``KUBESCHED_EVENT_LOOP=asyncio`` in the environment keeps asyncio's own (to debug with its tools,
or to compare).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def _choose() -> tuple[str, Callable[[], asyncio.AbstractEventLoop]]:
    if os.environ.get("KUBESCHED_EVENT_LOOP", "").lower() != "asyncio":
        try:  # a dependency everywhere but Windows (pyproject.toml)
            import uvloop
        except ImportError:  # pragma: no cover - Windows
            pass
        else:
            return "uvloop", uvloop.new_event_loop
    return "asyncio", asyncio.new_event_loop


NAME, _factory = _choose()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new loop of the fastest kind installed (for a thread that runs one of its own)."""
    return _factory()


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on such a loop."""
    with asyncio.Runner(loop_factory=_factory) as runner:
        return runner.run(main)
