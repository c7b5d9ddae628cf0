"""The node search over the shape cache (``framework/shape_cache.py``), kubesched's own: the
same nodes, verdicts and scores a search over fresh Filter verdicts finds, read from the verdicts
and raw scores stored per pod shape; the stored entry is computed here, refreshed where pods
changed, and scored and reported from."""

from __future__ import annotations

from time import perf_counter

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.interface import ScorePlugin
from kubesched.framework.status import Code, Status
from kubesched.scheduler.framework.filter_verdicts import FilterOutcome
from kubesched.scheduler.framework.point_times import SCORE
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.framework.shape_cache import ShapeEntry, Window
from kubesched.scheduler.nodesearch.columns import covered
from kubesched.scheduler.nodesearch.outcome import (
    AttemptReport,
    SearchOutcome,
    StoredAnswer,
    num_feasible_nodes_to_find,
)
from kubesched.scheduler.nodesearch.way import SearchAsk, SearchWay
from kubesched.scheduler.nodetable import NodeTable

# the shape cache is used when a search covers at most 1/this of the nodes (with the adaptive
# percentage: from about 200 nodes); an entry then stays good for about this many pods before a
# search reaches a node bound since, and smaller clusters gain nothing from it
SHAPE_MIN_SEARCHES_PER_LAP = 2


class ShapeCacheSearch(SearchWay):
    """The search over the shape cache's stored verdicts, for the pods whose cycle reads nothing
    an entry does not keep: the profile's plugins all give shapes, and there is no batch
    signature, no PreFilterResult narrowing the nodes, no fresh explanation, no nominated node
    or nominated pods to add and no filter extender."""

    def find(self, ask: SearchAsk) -> SearchOutcome | Status | None:
        fwk, pod, queue = ask.fwk, ask.pod, ask.queue
        if (
            fwk.signer.shape_static is None
            or ask.signed
            or not ask.pre_res.all_nodes()
            or ask.explain
            or pod.nominated_node_name
            or ask.extenders
            or (queue.nominated_table is not None and queue.nominated)
        ):
            return None
        return search_shapes(fwk, ask.state, pod, ask.nodes, ask.start % ask.nodes.n, ask.percentage)


class ShapeAnswer(StoredAnswer):
    """A search answered from a shape cache entry: its window's nodes scored and reported from
    the entry."""

    entry: ShapeEntry
    window: Window

    def __init__(self, entry: ShapeEntry, window: Window) -> None:
        self.entry = entry
        self.window = window
        self.processed = window.processed

    def scores(self, fwk: Framework, pod: PodInfo) -> np.ndarray:
        return shape_scores(fwk, self.entry, pod, self.window)

    def report(self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable) -> AttemptReport:
        return shape_report(fwk, state, pod, nodes, self.entry, self.window)


def search_shapes(
    fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, start: int, percentage: int
) -> SearchOutcome | Status | None:
    """The first nodes from ``start`` that pass, over the shape cache's verdicts. The entry is
    computed when there is none, and its changed rows again when the search covers one of them.
    None: the cache does not apply to this pod (or no node passes, which the search over fresh
    verdicts then explains); a Status: a plugin's Error."""
    n = nodes.n
    want = num_feasible_nodes_to_find(percentage, n)
    if want * SHAPE_MIN_SEARCHES_PER_LAP > n:
        return None  # each search covers most nodes: filtering them all each time is cheaper
    shape = fwk.signer.shape_of(state, pod)
    if shape is None:
        return None
    cache = fwk.shape_cache
    entry = cache.get(shape, nodes)
    if entry is not None:
        window = entry.search(start, want)
        stale = entry.stale_rows()
        if stale and covered(nodes, stale, start, window.processed):
            rows = np.array(sorted({r for r in stale if r < n}), np.int64)
            cache.refreshed += 1
            st = refresh_entry(fwk, entry, state, pod, rows)
            if st is not None:
                cache.clear()
                return st
            window = entry.search(start, want)
    else:
        built = build_entry(fwk, state, pod, nodes)
        if isinstance(built, Status):
            return built
        entry = built
        cache.put(shape, entry)
        cache.built += 1
        window = entry.search(start, want)
    if not len(window):
        return None
    cache.searches += 1
    return SearchOutcome(entry.rows(window), _NOTHING_REJECTED, stored=ShapeAnswer(entry, window))


_NOTHING_REJECTED = Diagnosis.empty(())


def build_entry(fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable) -> ShapeEntry | Status:
    """RunFilterPlugins over every node, then PreScore and each Score plugin's raw scores over
    every node that passed (an error Status when a plugin failed)."""
    outcome = fwk.run_filters(state, pod, nodes)
    if outcome.error is not None:
        return outcome.error
    passed = outcome.codes == 0
    node_ok = _node_only_ok(fwk, state, pod, nodes)
    rows = np.flatnonzero(passed)
    pre_score: dict[str, str] = {}
    st = fwk.run_pre_score(state, pod, nodes, rows, pre_score)
    if st is not None:
        return st
    fixed = np.zeros(nodes.n, np.int64)
    summed: list[tuple[ScorePlugin, int, np.ndarray]] = []
    normalized: list[tuple[ScorePlugin, int, np.ndarray]] = []
    for p in fwk.scores:
        if p.name in state.skip_score:
            continue
        raw = np.zeros(nodes.n, np.int64)
        raw[rows] = p.score_nodes(state, pod, nodes, rows)
        weight = fwk.weights[p.name]
        if type(p).normalize_scores is ScorePlugin.normalize_scores:
            fixed += raw * weight
            summed.append((p, weight, raw))
        else:
            normalized.append((p, weight, raw))
    return ShapeEntry(
        nodes, nodes.epoch, len(nodes.changed), passed, node_ok, fixed, summed, normalized, state, pre_score
    )


def refresh_entry(
    fwk: Framework, entry: ShapeEntry, state: CycleState, pod: PodInfo, rows: np.ndarray
) -> Status | None:
    """Filter and score again the ``rows`` whose pods changed, with this cycle's PreFilter
    state. Only the filters that read the pods on a node run (those that read only the Node keep
    their verdicts: a changed Node drops the entry), over the table, whose other rows they
    leave alone."""
    table = entry.table
    outcome = fwk.run_filters(state, pod, table, passed_before=True)
    if outcome.error is not None:
        return outcome.error
    passed = entry.node_ok[rows] & (outcome.codes[rows] == 0)
    ok = rows[passed]
    scores: dict[str, np.ndarray] = {}
    scorers = entry.scorers()
    if len(ok):
        names = {p.name for p in scorers}
        for pre in fwk.pre_score:  # those of the entry's scorers (the others skipped then)
            if pre.name in names:
                st = pre.pre_score(state, pod, table, ok)
                if st is not None and st.code not in (Code.SUCCESS, Code.SKIP):
                    return Status(Code.ERROR, (f'running PreScore plugin "{pre.name}": {st.message()}',), pre.name)
        for p in scorers:
            scores[p.name] = p.score_nodes(state, pod, table, ok)
    else:
        scores = {p.name: np.zeros(0, np.int64) for p in scorers}
    entry.update(rows, passed, scores)
    return None


def _node_only_ok(fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable) -> np.ndarray:
    """Rows every ``node_only`` Filter plugin passes, each judged on its own."""
    ok = np.ones(nodes.n, bool)
    for p in fwk.filters:
        if p.node_only and p.name not in state.skip_filter:
            v = p.filter_nodes(state, pod, nodes)
            if v is not None:
                ok &= v.code == 0
    return ok


def shape_scores(fwk: Framework, entry: ShapeEntry, pod: PodInfo, window: Window) -> np.ndarray:
    """RunScorePlugins from an entry: NormalizeScore over the window's nodes and the weighted
    sum (up to a constant no choice depends on)."""
    started = perf_counter()
    total = entry.totals(pod, window)
    fwk.point_times.done(SCORE, started, None)
    return total


def shape_report(
    fwk: Framework, state: CycleState, pod: PodInfo, nodes: NodeTable, entry: ShapeEntry, window: Window
) -> AttemptReport:
    """What ``explain`` and the results keep, from an entry: the nodes it rejects filtered
    again (alone) for their reasons, the window's raw scores and their normalization."""
    rows = entry.rows(window)
    rejected = entry.rejected_rows()
    diagnosis: Diagnosis | None = None  # no node rejected
    if len(rejected):
        sub = fwk.run_filters(state, pod, nodes.take(rejected))
        codes = np.zeros(nodes.n, sub.codes.dtype)
        plugins = np.zeros(nodes.n, sub.plugins.dtype)
        reasons = np.zeros(nodes.n, sub.reasons.dtype)
        codes[rejected], plugins[rejected], reasons[rejected] = sub.codes, sub.plugins, sub.reasons
        diagnosis = FilterOutcome(codes, plugins, reasons, sub.describers).diagnosis(nodes.names, fwk.filter_names)
    info = AttemptReport(diagnosis)
    if len(rows) == 1:
        info.feasible = rows
        return info
    # PreScore's statuses, as this cycle would have given them: those of the cycle that
    # computed the entry's scores
    if state.results is not None:
        state.results.pre_score.update(entry.pre_score)
    raw: dict[str, np.ndarray] = {}
    norm: dict[str, np.ndarray] = {}
    total = np.zeros(len(rows), np.int64)
    for plugin, weight, column in (*entry.summed, *entry.normalized):
        r = column[rows]
        n = plugin.normalize_scores(entry.state, pod, r.copy())
        raw[plugin.name] = r
        norm[plugin.name] = r if n is None else n
        total += norm[plugin.name] * weight
    return info.scored(rows, raw, norm, total)
