"""What the binding cycle's extension points decide from their plugins' answers
(``framework/runtime/framework.go``: RunPermitPlugins, RunPlacementFeasiblePlugins,
RunPreBindPreFlights), apart from calling them, which the framework does."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interface import Plugin, PreBindPlugin
from kubesched.framework.status import Code, Status

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
