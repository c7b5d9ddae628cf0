"""``framework_extension_point_duration_seconds`` as ``frameworkImpl`` records it: every
``Run*Plugins`` call timed by the framework itself (Filter by the node search, as
``findNodesThatPassFilters`` does upstream), labelled with the status code it returned.

The framework calls ``done`` with the start time; a Success lands in a plain list, which the
metrics fold into buckets later, so that the common case costs an append, not a wrapper around
every extension point. A framework without metrics keeps the default, which drops everything.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, MutableSequence
from time import perf_counter

from kubesched.framework.status import Status

# extension point labels (``metrics.PreFilter`` …)
PRE_FILTER = "PreFilter"
FILTER = "Filter"
POST_FILTER = "PostFilter"
PRE_SCORE = "PreScore"
SCORE = "Score"
RESERVE = "Reserve"
UNRESERVE = "Unreserve"
PERMIT = "Permit"
PRE_BIND = "PreBind"
PRE_BIND_PRE_FLIGHT = "PreBindPreFlight"
BIND = "Bind"
POST_BIND = "PostBind"

POINTS = (
    PRE_FILTER,
    FILTER,
    POST_FILTER,
    PRE_SCORE,
    SCORE,
    RESERVE,
    UNRESERVE,
    PERMIT,
    PRE_BIND_PRE_FLIGHT,
    PRE_BIND,
    BIND,
    POST_BIND,
)


def _drop(point: str, code: str, seconds: float) -> None:
    return None


class PointTimes:
    """One profile's extension point durations: ``ok[point]`` receives the seconds of each call
    that succeeded, ``other(point, code, seconds)`` the rest."""

    __slots__ = ("ok", "other")

    def __init__(
        self,
        ok: Mapping[str, MutableSequence[float]] | None = None,
        other: Callable[[str, str, float], None] = _drop,
    ) -> None:
        if ok is None:
            ok = {p: deque(maxlen=0) for p in POINTS}  # appends go nowhere
        self.ok = ok
        self.other = other

    def done(self, point: str, started: float, status: Status | None) -> None:
        """A call of ``point`` that began at ``started`` (``perf_counter``) returned ``status``."""
        seconds = perf_counter() - started
        if status is None:
            self.ok[point].append(seconds)
        else:
            self.other(point, str(status.code), seconds)
