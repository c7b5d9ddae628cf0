"""The framework runtime: one profile's plugins per extension point, and running them.

Mirrors ``pkg/scheduler/framework/runtime/framework.go``: plugins are built once from the
registry, MultiPoint is expanded per extension point (explicit overrides first, then MultiPoint,
then the remaining explicit ones), score weights default to 1 and are checked for overflow.
Filter runs column-wise: every plugin answers for all nodes and a node keeps the first
rejection in plugin order, which is what upstream's per-node loop yields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.events import ALL_EVENTS, ClusterEventWithHint
from kubesched.framework.interface import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    NodeVerdicts,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from kubesched.framework.registry import Registry
from kubesched.framework.status import Code, Status
from kubesched.scheduler.config import EXTENSION_POINTS, Profile
from kubesched.scheduler.framework.batch import OpportunisticBatch
from kubesched.scheduler.framework.binding_points import (
    SentBind,
    permit_outcome,
    placement_feasible,
    pre_bind_pre_flights,
)
from kubesched.scheduler.framework.filter_verdicts import FilterOutcome, FilterPass, VerdictMerge, has_odd_code
from kubesched.scheduler.framework.handle import Handle
from kubesched.scheduler.framework.point_calls import ObserverRelay, PluginObserver, PointCalls, both, memoised
from kubesched.scheduler.framework.point_times import (
    BIND,
    PERMIT,
    POST_BIND,
    POST_FILTER,
    PRE_BIND,
    PRE_BIND_PRE_FLIGHT,
    PRE_FILTER,
    PRE_SCORE,
    RESERVE,
    SCORE,
    UNRESERVE,
    PointTimes,
)
from kubesched.scheduler.framework.profile_plugins import expand, new_plugins, score_weights
from kubesched.scheduler.framework.shape_cache import ShapeCache
from kubesched.scheduler.framework.signatures import PodSigner
from kubesched.scheduler.framework.template_memo import PointMemo, Templates
from kubesched.scheduler.metrics import framework_recorders
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.resultstore import status_word


@dataclass(init=False, slots=True)
class ScoreOutcome:
    total: np.ndarray
    by_plugin: dict[str, np.ndarray]  # normalized, with ``keep``
    raw_by_plugin: dict[str, np.ndarray] = field(default_factory=dict)  # before NormalizeScore

    def __init__(
        self, total: np.ndarray, by_plugin: dict[str, np.ndarray], raw_by_plugin: dict[str, np.ndarray] | None = None
    ) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.total = total
        self.by_plugin = by_plugin
        self.raw_by_plugin = {} if raw_by_plugin is None else raw_by_plugin


class Framework:
    """One profile: its plugins at each extension point and the code that runs them."""

    def __init__(self, registry: Registry, profile: Profile, handle: Handle) -> None:
        self.profile = profile
        self.profile_name = profile.scheduler_name
        self.handle = handle
        # framework_extension_point_duration_seconds, and (plugin, extension point, what it
        # returned, seconds) of sampled cycles' plugin calls (plugin_execution_duration_seconds):
        # recorded into the scheduler's metrics when the handle has them (WithMetricsRecorder)
        self.point_times = PointTimes()
        self.plugin_metrics: PluginObserver | None = None
        if handle.metrics is not None:
            self.point_times, self.plugin_metrics = framework_recorders(handle.metrics, profile.scheduler_name)
        self.plugins: dict[str, Plugin] = new_plugins(registry, profile, handle)
        for plugin in self.plugins.values():
            attach = getattr(plugin, "set_framework", None)
            if attach is not None:
                attach(self)
        self.points: dict[str, list[Plugin]] = {}
        for ep in EXTENSION_POINTS:
            self.points[ep] = expand(ep, profile, self.plugins)
        if len(self.points["queueSort"]) != 1:
            raise InputError(
                f"one queue sort plugin required for profile with scheduler name {profile.scheduler_name!r}",
                field=f"{profile.field_path}.plugins.queueSort",
            )
        if not self.points["bind"]:
            raise InputError(
                f"at least one bind plugin is needed for profile with scheduler name {profile.scheduler_name!r}",
                field=f"{profile.field_path}.plugins.bind",
            )
        self.weights = score_weights(profile, self.plugins)
        self.queue_sort: QueueSortPlugin = self.points["queueSort"][0]  # type: ignore[assignment]
        self.pre_enqueue: list[PreEnqueuePlugin] = self.points["preEnqueue"]  # type: ignore[assignment]
        self.pre_filter: list[PreFilterPlugin] = self.points["preFilter"]  # type: ignore[assignment]
        self.filters: list[FilterPlugin] = self.points["filter"]  # type: ignore[assignment]
        self.filter_names = [p.name for p in self.filters]
        self.post_filter: list[PostFilterPlugin] = self.points["postFilter"]  # type: ignore[assignment]
        self.pre_score: list[PreScorePlugin] = self.points["preScore"]  # type: ignore[assignment]
        self.scores: list[ScorePlugin] = self.points["score"]  # type: ignore[assignment]
        # per Score plugin: its weight and whether its class has a NormalizeScore (looked up on
        # the class)
        score_plan = [
            (p, self.weights[p.name], type(p).normalize_scores is not ScorePlugin.normalize_scores) for p in self.scores
        ]
        self.reserve: list[ReservePlugin] = self.points["reserve"]  # type: ignore[assignment]
        self.permit: list[PermitPlugin] = self.points["permit"]  # type: ignore[assignment]
        self.pre_bind: list[PreBindPlugin] = self.points["preBind"]  # type: ignore[assignment]
        self.bind: list[BindPlugin] = self.points["bind"]  # type: ignore[assignment]
        self.post_bind: list[PostBindPlugin] = self.points["postBind"]  # type: ignore[assignment]
        # each point's plugins with their bound methods; a watched cycle's, timed (``calls``)
        self.point_calls = PointCalls.bind_methods(
            self.pre_filter,
            self.filters,
            self.post_filter,
            self.pre_score,
            score_plan,
            self.reserve,
            self.permit,
            self.pre_bind,
            self.bind,
            self.post_bind,
        )
        # the same calls timed, handed to the observer of the cycle being run (``calls``)
        self._relay = ObserverRelay()
        self._watched = self.point_calls.watched(self._relay)
        # GenericWorkload: GangScheduling is the one PlacementFeasible plugin (NewFramework)
        gang = self.plugins.get("GangScheduling")
        self.placement_feasible: list[Any] = (
            [gang] if gang is not None and handle.features.enabled("GenericWorkload") else []
        )
        # which template a pod belongs to, and the memo of PreFilter and PreScore outcomes per
        # template (template_memo.py)
        self.templates = Templates()
        # the batch's signatures and the shape cache's shapes of a pod
        self.signer = PodSigner(self.points, self.templates, bool(handle.extenders))
        self.shape_cache = ShapeCache()
        plugins_field = f"{profile.field_path}.plugins"
        self.pre_filter_memo = PointMemo.for_plugins(self.pre_filter, "pre_filter_memo", pair=True, field=plugins_field)
        self.pre_score_memo = PointMemo.for_plugins(self.pre_score, "pre_score_memo", pair=False, field=plugins_field)
        self._memoised = memoised(self.point_calls, self.templates, self.pre_filter_memo, self.pre_score_memo)
        self.batch = OpportunisticBatch(self.profile_name, self._batch_now, self._batch_count)

    # -- construction -------------------------------------------------------------------------
    def _batch_now(self) -> float:
        return float(self.handle.clock.now())

    def _batch_count(self, metric: str, profile: str, label: str) -> None:
        metrics = self.handle.metrics
        if metrics is None:
            return
        series = (metrics.batch_attempts if metric == "attempts" else metrics.batch_cache_flushed).series
        key = (profile, label)  # CounterVec.inc, without its call: this runs for every pod
        series[key] = series.get(key, 0.0) + 1.0

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        """Plugin name → events that may help pods it rejected (default: every event)."""
        out: dict[str, list[ClusterEventWithHint]] = {}
        for ep in ("preEnqueue", "preFilter", "filter", "reserve", "permit"):
            for p in self.points[ep]:
                if p.name in out:
                    continue
                if isinstance(p, EnqueueExtensions):
                    out[p.name] = list(p.events_to_register())
                else:
                    out[p.name] = [ClusterEventWithHint(ALL_EVENTS)]
        return out

    # -- queueing ----------------------------------------------------------------------------
    def run_pre_enqueue(self, pod: PodInfo) -> Status | None:
        for p in self.pre_enqueue:
            st = p.pre_enqueue(pod)
            if st is not None and not st.is_success():
                st.plugin = p.name
                if not st.is_rejected():
                    st = Status(Code.ERROR, st.reasons, p.name)
                return st
        return None

    # -- scheduling cycle ----------------------------------------------------------------------
    def run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult, Status | None, set[str]]:
        """RunPreFilterPlugins: the nodes PreFilter results allow (all when none narrows), the
        first rejection or error, and the plugins that rejected or narrowed."""
        started = perf_counter()
        out = self._run_pre_filter(state, pod, nodes)
        self.point_times.done(PRE_FILTER, started, out[1])
        return out

    def _run_pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult, Status | None, set[str]]:
        result = PreFilterResult()
        narrowing: list[str] = []
        rejected: Status | None = None
        rejectors: set[str] = set()
        calls = self.calls(state)
        whole = calls.pre_filter_whole(pod, nodes)
        if whole is not None:  # every plugin's outcome replayed (the template memo)
            state.skip_filter.update(whole.skips)
            state.replay(whole.writes)
            return result, None, set()
        for p, call in calls.pre_filter:
            res, st = call(state, pod, nodes)
            if st is not None and st.code == Code.SKIP:
                state.skip_filter.add(p.name)
                continue
            if st is not None and not st.is_success():
                st.plugin = p.name
                if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return result, st, {p.name}
                if st.code == Code.UNSCHEDULABLE:
                    rejected = rejected or st
                    rejectors.add(p.name)
                    continue
                return (
                    result,
                    Status(Code.ERROR, (f'running PreFilter plugin "{p.name}": {st.message()}',), p.name),
                    set(),
                )
            if res is not None and not res.all_nodes():
                narrowing.append(p.name)
                result = result.merge(res)
                if not result.node_names:
                    if len(narrowing) == 1:
                        msg = f"node(s) didn't satisfy plugin {narrowing[0]}"
                    else:
                        msg = f"node(s) didn't satisfy plugin(s) [{' '.join(narrowing)}] simultaneously"
                    return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (msg,)), set(narrowing)
        if rejected is not None:
            return result, rejected, rejectors
        return result, None, set(narrowing)

    def run_filters(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, *, passed_before: bool = False
    ) -> FilterOutcome:
        """RunFilterPlugins over every row. ``passed_before``: the rows passed every filter and
        only the pods on them changed since, so ``node_only`` plugins are not run again."""
        merge = VerdictMerge(nodes.n, len(self.filters))
        skip = state.skip_filter
        for i, (p, call) in enumerate(self.calls(state).filter):
            if p.name in skip or (passed_before and p.node_only):
                continue
            v = call(state, pod, nodes)
            if v is not None and merge.add(i, v) == 0:
                break
        return merge.outcome(self.filter_names)

    def filter_pass(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> FilterPass:
        """RunFilterPlugins over every row as ``run_filters`` runs them (the same plugins, the
        same stop once no row is left), keeping each plugin's verdicts unmerged beside the rows
        that passed them all: three numpy calls a plugin instead of a dozen."""
        passed: np.ndarray | None = None
        verdicts: list[tuple[int, NodeVerdicts]] = []
        suspect = False
        skip = state.skip_filter
        for i, (p, call) in enumerate(self.calls(state).filter):
            if p.name in skip:
                continue
            v = call(state, pod, nodes)
            if v is None:
                continue
            verdicts.append((i, v))
            ok = v.code == 0
            if passed is None:
                passed = ok
            else:
                np.logical_and(passed, ok, out=passed)
            suspect = suspect or (not v.checked and has_odd_code(v.code))
            if nodes.n and not np.count_nonzero(passed):
                break
        return FilterPass(np.ones(nodes.n, bool) if passed is None else passed, verdicts, suspect)

    def run_post_filter(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> tuple[Any, Status]:
        """RunPostFilterPlugins: first success or unresolvable wins, else reasons accumulate."""
        started = perf_counter()
        out = self._run_post_filter(state, pod, diagnosis)
        self.point_times.done(POST_FILTER, started, out[1])
        return out

    def _run_post_filter(self, state: CycleState, pod: PodInfo, diagnosis: Diagnosis) -> tuple[Any, Status]:
        reasons: list[str] = []
        first_rejector = ""
        result = None
        for p, call in self.calls(state).post_filter:
            res, st = call(state, pod, diagnosis)
            if st is None or st.is_success():
                return res, Status(Code.SUCCESS, st.reasons if st is not None else (), p.name)
            if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return res, Status(st.code, st.reasons, p.name)
            if not st.is_rejected():
                return None, Status(Code.ERROR, st.reasons, p.name)
            if not first_rejector:
                first_rejector = p.name
            if res is not None:  # the last meaningful result (framework/runtime/framework.go)
                result = res
            reasons.extend(st.reasons)
        return result, Status(Code.UNSCHEDULABLE, tuple(reasons), first_rejector)

    def run_pod_group_post_filter(self, group: Any, reschedule: Any) -> tuple[Any, Status]:
        """RunPodGroupPostFilterPlugins (GenericWorkload): after a pod group cycle that found no
        placement; the first success or unresolvable verdict wins, else the reasons gather (an
        error names its plugin)."""
        reasons: list[str] = []
        first_rejector = ""
        for p in self.post_filter:
            run = getattr(p, "pod_group_post_filter", None)
            if run is None:
                continue
            res, st = run(group, reschedule)
            if st is None or st.is_success():
                return res, Status(Code.SUCCESS, st.reasons if st is not None else (), p.name)
            if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return res, Status(st.code, st.reasons, p.name)
            if st.code != Code.UNSCHEDULABLE:
                message = f'error in "{p.name}" PodGroupPostFilter plugins: {st.message()}'
                return None, Status(Code.ERROR, (message,), p.name)
            reasons.extend(st.reasons)
            first_rejector = first_rejector or p.name
        return None, Status(Code.UNSCHEDULABLE, tuple(reasons), first_rejector)

    def run_pre_score(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        rows: np.ndarray,
        statuses: dict[str, str] | None = None,
    ) -> Status | None:
        """RunPreScorePlugins; each plugin's status is recorded in the attempt's results and,
        given ``statuses``, there as the results word it."""
        started = perf_counter()
        st = self._run_pre_score(state, pod, nodes, rows, statuses)
        self.point_times.done(PRE_SCORE, started, st)
        return st

    def _run_pre_score(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: NodeTable,
        rows: np.ndarray,
        statuses: dict[str, str] | None,
    ) -> Status | None:
        # the template memo is not asked where the statuses are kept
        calls = self.calls(state, memo=statuses is None and len(rows) > 0)
        whole = calls.pre_score_whole(pod, nodes)
        if whole is not None:  # every plugin's outcome replayed (the template memo)
            state.skip_score.update(whole.skips)
            state.replay(whole.writes)
            return None
        for p, call in calls.pre_score:
            st = call(state, pod, nodes, rows)
            if statuses is not None:
                statuses[p.name] = status_word(st)
            if st is None or st.code == Code.SUCCESS:
                continue
            if st.code == Code.SKIP:
                state.skip_score.add(p.name)
                continue
            return Status(Code.ERROR, (f'running PreScore plugin "{p.name}": {st.message()}',), p.name)
        return None

    def run_score(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: np.ndarray, *, keep: bool = False
    ) -> tuple[ScoreOutcome | None, Status | None]:
        """RunScorePlugins, NormalizeScore and the weighted sum over ``rows``."""
        started = perf_counter()
        out = self._run_score(state, pod, nodes, rows, keep)
        self.point_times.done(SCORE, started, out[1])
        return out

    def _run_score(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: np.ndarray, keep: bool
    ) -> tuple[ScoreOutcome | None, Status | None]:
        total: np.ndarray | None = None
        by_plugin: dict[str, np.ndarray] = {}
        raw_by_plugin: dict[str, np.ndarray] = {}
        skip = state.skip_score
        for p, weight, normalizes, call in self.calls(state).score:
            if skip and p.name in skip:
                continue
            raw = call(state, pod, nodes, rows)
            scores = raw
            if normalizes:
                norm = p.normalize_scores(state, pod, raw)
                if norm is not None:
                    scores = norm
            if (
                not p.scores_bounded
                and len(scores)
                and (np.minimum.reduce(scores) < MIN_NODE_SCORE or np.maximum.reduce(scores) > MAX_NODE_SCORE)
            ):
                bad = int(scores[(scores < MIN_NODE_SCORE) | (scores > MAX_NODE_SCORE)][0])
                return None, Status.error(
                    f'applying score defaultWeights on Score plugins: plugin "{p.name}" '
                    f"returns an invalid score {bad}, it should in the range of "
                    f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                )
            if total is None:
                total = np.multiply(scores, weight, dtype=np.int64)  # a new array: scores may be kept
            elif weight == 1:
                total += scores
            else:
                total += scores * weight
            if keep:
                by_plugin[p.name] = scores
                raw_by_plugin[p.name] = raw
        if total is None:
            total = np.zeros(len(rows), np.int64)
        return ScoreOutcome(total, by_plugin, raw_by_plugin), None

    def run_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        """RunReservePluginsReserve: the first plugin that fails stops the others."""
        started = perf_counter()
        st = self._run_reserve(state, pod, node)
        self.point_times.done(RESERVE, started, st)
        return st

    def _run_reserve(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        for p, call in self.calls(state).reserve:
            st = call(state, pod, node)
            if st is not None and not st.is_success():
                if st.is_rejected():
                    return Status(st.code, st.reasons, p.name)
                return Status(Code.ERROR, (f'running Reserve plugin "{p.name}": {st.message()}',), p.name)
        return None

    def run_unreserve(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """RunReservePluginsUnreserve, in the reverse order of Reserve."""
        started = perf_counter()
        for _p, call in self.calls(state).unreserve:
            call(state, pod, node)
        self.point_times.done(UNRESERVE, started, None)

    def run_permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status | None, dict[str, float]]:
        """RunPermitPlugins: a rejection or error stops the others; the waits asked, each cut to
        the maximum timeout."""
        started = perf_counter()
        out = self._run_permit(state, pod, node)
        self.point_times.done(PERMIT, started, out[0])
        return out

    def _run_permit(self, state: CycleState, pod: PodInfo, node: str) -> tuple[Status | None, dict[str, float]]:
        return permit_outcome(self.calls(state).permit, state, pod, node)

    def run_placement_feasible(self, pod_group: dict[str, Any], progress: Any) -> Status | None:
        return placement_feasible(self.placement_feasible, pod_group, progress)

    def run_pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        """RunPreBindPlugins: the first plugin that fails stops the others."""
        started = perf_counter()
        st = self._run_pre_bind(state, pod, node)
        self.point_times.done(PRE_BIND, started, st)
        return st

    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        started = perf_counter()
        out = pre_bind_pre_flights(self.pre_bind, state, pod, node)
        self.point_times.done(PRE_BIND_PRE_FLIGHT, started, out)
        return out

    def _run_pre_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        skipped = state.skip_pre_bind
        for p, call in self.calls(state).pre_bind:
            if p.name in skipped:
                continue
            st = call(state, pod, node)
            if st is not None and not st.is_success():
                if st.is_rejected():
                    return Status(st.code, st.reasons, p.name)
                return Status(Code.ERROR, (f'running PreBind plugin "{p.name}": {st.message()}',), p.name)
        return None

    def run_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        """RunBindPlugins: the first plugin that does not skip binds."""
        started = perf_counter()
        st = self._run_bind(state, pod, node)
        self.point_times.done(BIND, started, st)
        return st

    def _run_bind(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        for p, call in self.calls(state).bind:
            st = call(state, pod, node)
            if st is not None and st.code == Code.SKIP:
                continue
            if st is not None and not st.is_success():
                return Status(Code.ERROR, (f'running Bind plugin "{p.name}": {st.message()}',), p.name)
            return None
        return Status(Code.ERROR, ("all bind plugins skipped",))

    def send_bind(self, state: CycleState, pod: PodInfo, node: str) -> SentBind | None:
        """The binding as one request on its way, when that is all PreBind and Bind come to: every
        PreBind plugin skipped by its pre-flight (the point runs now, on this thread), the first Bind
        plugin one that binds by a single request (DefaultBinder), and no results recorded for the
        cycle (a cycle sampled for plugin metrics times the Bind plugin from the send to the
        answer). None otherwise, and nothing has run: the binding runs as ``run_pre_bind`` and
        ``run_bind``. What the request comes to is ``SentBind.status``."""
        if not self.bind or state.results is not None:
            return None
        binder = self.bind[0]
        # a Bind plugin that binds by one request offers it as ``send`` (DefaultBinder)
        send = getattr(binder, "send", None)
        if send is None or any(p.name not in state.skip_pre_bind for p in self.pre_bind):
            return None
        started = perf_counter()
        future = send(state, pod, node)
        if future is None:
            return None
        self.point_times.done(PRE_BIND, started, None)
        timing = self.plugin_metrics if state.record_plugin_metrics else None
        return SentBind(self.point_times, binder.name, future, perf_counter(), timing, (state, pod, node))

    def run_post_bind(self, state: CycleState, pod: PodInfo, node: str) -> None:
        """RunPostBindPlugins (informational: nothing they return is read)."""
        started = perf_counter()
        for _p, call in self.calls(state).post_bind:
            call(state, pod, node)
        self.point_times.done(POST_BIND, started, None)

    def observer(self, state: CycleState) -> PluginObserver | None:
        """Who sees this cycle's plugin calls, from outside the cycle: ``plugin_metrics`` when
        the cycle is sampled (``ShouldRecordPluginMetrics``), the attempt's results recorder when
        its results are kept (the simulator's wrapped plugins); None and the plugins are called
        directly."""
        timing = self.plugin_metrics if state.record_plugin_metrics else None
        rec = state.results
        if rec is None:
            return timing
        return rec.observe if timing is None else both(timing, rec.observe)

    def calls(self, state: CycleState, memo: bool = True) -> PointCalls:
        """The plugin calls of this cycle, each way of calling chosen here: an unwatched cycle's
        through the template memo (unless ``memo`` is False, or the memo is off), a watched
        cycle's timed (built once) and handed to its observer through the relay."""
        if state.results is None and not state.record_plugin_metrics:
            return self._memoised if memo else self.point_calls  # unwatched: most cycles
        obs = self.observer(state)
        if obs is None:
            return self.point_calls
        self._relay.target = obs
        return self._watched

    def use_template_memo(self, on: bool) -> None:
        """The template memo on (as built) or off (every PreFilter and PreScore plugin called in
        every cycle: the equivalence tests compare both)."""
        memos = (self.pre_filter_memo, self.pre_score_memo)
        self._memoised = memoised(self.point_calls, self.templates, *memos) if on else self.point_calls

    def plugin(self, name: str) -> Plugin | None:
        return self.plugins.get(name)

    def has_score(self) -> bool:
        return bool(self.scores)
