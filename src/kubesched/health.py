"""Every long-running loop's health: apimachinery's ``util/runtime.HandleError`` (an error syncing
one object is logged with the object and counted, and the loop goes on) and the per-loop checks
of kube-controller-manager's and kube-apiserver's ``/healthz`` and ``/readyz``: each loop's last
good sync, and a loop that has not finished one for ``stall`` seconds is stuck."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("kubesched")

STALL = 60.0  # seconds without a good sync after which a loop is reported stuck


@dataclass(slots=True)
class LoopState:
    """One loop: when it last finished a sync, how many objects failed, and the last failure."""

    last_success: float
    errors: int = 0
    last_error: str = ""
    last_error_at: float = 0.0


class LoopHealth:
    """The loops of one process by name (``controller-manager``, ``kubelet``, ``scheduler``…)."""

    def __init__(self, clock: Callable[[], float] = time.time, stall: float = STALL) -> None:
        self.clock = clock
        self.stall = stall
        self.loops: dict[str, LoopState] = {}

    def register(self, loop: str) -> None:
        """A loop counts from its start: it is stuck when no sync finishes within ``stall``."""
        self.loops.setdefault(loop, LoopState(self.clock()))

    def ok(self, loop: str) -> None:
        """The loop finished a sync (objects that failed in it are retried on their own)."""
        state = self.loops.get(loop)
        if state is None:
            self.loops[loop] = LoopState(self.clock())
        else:
            state.last_success = self.clock()

    def error(self, loop: str, obj: str, exc: BaseException) -> None:
        """``HandleError``: one object failed; logged with the object and counted."""
        state = self.loops.setdefault(loop, LoopState(self.clock()))
        state.errors += 1
        state.last_error = f"{obj}: {type(exc).__name__}: {exc}"
        state.last_error_at = self.clock()
        log.error('"Error syncing" loop="%s" object="%s" err="%s: %s"', loop, obj, type(exc).__name__, exc)
        log.debug("traceback of the error syncing %s", obj, exc_info=exc)

    def stuck(self) -> list[str]:
        """The loops whose last good sync is older than ``stall``."""
        now = self.clock()
        return [name for name, s in sorted(self.loops.items()) if now - s.last_success > self.stall]

    def report(self) -> dict[str, dict[str, object]]:
        """Each loop's state as JSON (the health endpoint's body)."""
        now = self.clock()
        return {
            name: {
                "lastSuccessSecondsAgo": round(now - s.last_success, 3),
                "stuck": now - s.last_success > self.stall,
                "errors": s.errors,
                "lastError": s.last_error,
                "lastErrorSecondsAgo": round(now - s.last_error_at, 3) if s.errors else None,
            }
            for name, s in sorted(self.loops.items())
        }


def describe(kind: str, key: object) -> str:
    """How an object is named in an error line: ``Deployment default/web``."""
    if isinstance(key, tuple) and len(key) == 2:
        ns, name = key
        return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
    return f"{kind} {key}"
