"""What the binding cycle's extension points decide from their plugins' answers
(``framework/runtime/framework.go``: RunPermitPlugins, RunPlacementFeasiblePlugins,
RunPreBindPreFlights), apart from calling them, which the framework does; and a binding sent as one
request (``SentBind``), answered later on the scheduler's thread."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any

from kubesched.api.errors import ApiError
from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import Plugin, PreBindPlugin
from kubesched.framework.status import Code, Status
from kubesched.scheduler.framework.point_calls import PluginObserver
from kubesched.scheduler.framework.point_times import BIND, PointTimes

MAX_PERMIT_TIMEOUT = 15 * 60.0

PermitCall = Callable[[CycleState, PodInfo, str], tuple[Status | None, float]]


def permit_outcome(
    calls: Sequence[tuple[Plugin, PermitCall]], state: CycleState, pod: PodInfo, node: str
) -> tuple[Status | None, dict[str, float]]:
    """RunPermitPlugins: a rejection or error stops the others; the waits asked, each cut to the
    maximum timeout."""
    waits: dict[str, float] = {}
    for p, call in calls:
        st, timeout = call(state, pod, node)
        if st is None or st.is_success():
            continue
        if st.is_rejected():
            return Status(st.code, st.reasons, p.name), {}
        if st.code == Code.WAIT:
            waits[p.name] = min(float(timeout), MAX_PERMIT_TIMEOUT)
            continue
        return Status(Code.ERROR, (f'running Permit plugin "{p.name}": {st.message()}',), p.name), {}
    if waits:
        return Status(Code.WAIT, (f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"',)), waits
    return None, {}


def placement_feasible(plugins: Sequence[Any], pod_group: dict[str, Any], progress: Any) -> Status | None:
    """RunPlacementFeasiblePlugins: Unschedulable or an error stops at once; a Wait is kept while
    the others run."""
    status: Status | None = None
    for p in plugins:
        st = p.placement_feasible(pod_group, progress)
        if st is None or st.is_success():
            continue
        if st.code == Code.WAIT:
            status = Status(st.code, st.reasons, p.name)
            continue
        if st.code == Code.UNSCHEDULABLE:
            return Status(st.code, st.reasons, p.name)
        if st.code == Code.ERROR:
            return Status(Code.ERROR, (f"running PlacementFeasible plugin: {st.message()}",), p.name)
        return Status(Code.ERROR, (f"unexpected status from PlacementFeasible plugin: {st.code.name}",), p.name)
    return status


def pre_bind_pre_flights(plugins: Sequence[PreBindPlugin], state: CycleState, pod: PodInfo, node: str) -> Status | None:
    """RunPreBindPreFlights: Success (None) when some PreBind plugin has work, Skip when none has
    (no plugins included), an Error naming the plugin; the plugins that skipped are not called
    at PreBind (``state.skip_pre_bind``)."""
    out: Status | None = Status(Code.SKIP)
    skipped: set[str] = set()
    for p in plugins:
        st = p.pre_bind_pre_flight(state, pod, node)
        if st is None or st.is_success():
            out = None
        elif st.code == Code.SKIP:
            skipped.add(p.name)
        elif st.code == Code.ERROR:
            out = Status(Code.ERROR, (f'running PreBindPreFlight "{p.name}": {st.message()}',), p.name)
            break
        else:
            reason = (
                f'PreBindPreFlight {p.name} returned "{st.code}", which is unsupported. '
                "It is supposed to return Success, Skip, or Error status"
            )
            out = Status(Code.ERROR, (reason,), p.name)
            break
    state.skip_pre_bind = skipped
    return out


class SentBind:
    """A Bind point sent as one request (``Framework.send_bind``), timed as the Bind point and, in
    a sampled cycle, as its plugin."""

    __slots__ = ("_answered", "_args", "_plugin", "_point_times", "_started", "_timing", "future")

    def __init__(
        self,
        point_times: PointTimes,
        plugin: str,
        future: concurrent.futures.Future[None],
        started: float,
        timing: PluginObserver | None = None,
        args: tuple[Any, ...] = (),
    ) -> None:
        self._point_times = point_times
        self._plugin = plugin
        self.future: concurrent.futures.Future[None] | None = future
        self._started = started
        # a cycle sampled for plugin metrics times the Bind plugin from the send to the answer
        self._timing = timing
        self._args = args
        self._answered = 0.0
        if timing is not None:
            future.add_done_callback(self._answer_came)

    def _answer_came(self, _future: concurrent.futures.Future[None]) -> None:
        self._answered = perf_counter()

    def status(self) -> Status | None:
        """Once answered, on the scheduler's thread: what ``run_bind`` returns for the same answer
        (a refusal is the plugin's error, as DefaultBinder and RunBindPlugins word it)."""
        returned: Status | None = None
        st: Status | None = None
        # the request's future is let go once read (its done-callbacks refer back to this object),
        # and its error is read, not raised here: a traceback through this frame would hold the future
        future, self.future = self.future, None
        if future is None:
            err: BaseException | None = RuntimeError("the binding's answer was read twice")
        elif future.cancelled():
            err = RuntimeError("the binding's request was cancelled")
        else:
            err = future.exception(0)
        if isinstance(err, ApiError):
            returned = Status(Code.ERROR, (err.message,), self._plugin)
            st = Status(Code.ERROR, (f'running Bind plugin "{self._plugin}": {err.message}',), self._plugin)
        elif err is not None:  # as a binding that raised on a thread (``run_guarded``)
            returned = st = Status.error(f"binding failed: {err}")
        if self._timing is not None:
            self._timing(self._plugin, BIND, self._args, returned, (self._answered or perf_counter()) - self._started)
        self._point_times.done(BIND, self._started, st)
        return st
