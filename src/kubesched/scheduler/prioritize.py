"""``prioritizeNodes`` (``pkg/scheduler/schedule_one.go``): PreScore, Score and NormalizeScore
over the feasible nodes, the weighted sum, the prioritizer extenders' scores added; or, where
the node search read them from the shape cache, the stored scores normalized over the nodes it
found."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.status import Status
from kubesched.scheduler.extender import MAX_EXTENDER_PRIORITY, MAX_NODE_SCORE, ExtenderError, HTTPExtender
from kubesched.scheduler.framework.runtime import Framework
from kubesched.scheduler.nodesearch.extenders import NodeLookup, node_objects
from kubesched.scheduler.nodesearch.outcome import AttemptReport, SearchOutcome
from kubesched.scheduler.nodesearch.shapes import shape_report, shape_scores
from kubesched.scheduler.nodetable import NodeTable

log = logging.getLogger("kubesched.scheduler")


@dataclass(init=False, slots=True)
class Prioritized:
    """Each feasible node's total score (in the order of the search's feasible rows) and, when
    asked, the attempt's report of every plugin's scores."""

    total: np.ndarray
    report: AttemptReport | None

    def __init__(self, total: np.ndarray, report: AttemptReport | None) -> None:
        # written out (init=False): mypyc compiles this one; a dataclass's own runs interpreted
        self.total = total
        self.report = report


def prioritize_nodes(
    fwk: Framework,
    state: CycleState,
    pod: PodInfo,
    nodes: NodeTable,
    found: SearchOutcome,
    extenders: list[HTTPExtender],
    lookup: NodeLookup,
    *,
    report: bool,
) -> Prioritized | Status:
    """The scores of ``found``'s feasible nodes, or a plugin's Error."""
    feasible = found.feasible
    if found.shape is not None and found.window is not None:
        total = shape_scores(fwk, found.shape, pod, found.window)
        kept = shape_report(fwk, state, pod, nodes, found.shape, found.window) if report else None
        return Prioritized(total, kept)
    st = fwk.run_pre_score(state, pod, nodes, feasible)
    if st is not None:
        return st
    outcome, st = fwk.run_score(state, pod, nodes, feasible, keep=report)
    if st is not None or outcome is None:
        return st or Status.error("score failed")
    prioritizers = [e for e in extenders if e.is_prioritizer() and e.is_interested(pod)]
    if prioritizers:
        outcome.total += extender_scores(pod, nodes, feasible, prioritizers, lookup)
    elif not fwk.has_score():
        outcome.total[:] = 1
    kept = None
    if report:
        kept = AttemptReport(found.diagnosis).scored(feasible, outcome.raw_by_plugin, outcome.by_plugin, outcome.total)
    return Prioritized(outcome.total, kept)


def extender_scores(
    pod: PodInfo, nodes: NodeTable, feasible: np.ndarray, prioritizers: list[HTTPExtender], lookup: NodeLookup
) -> np.ndarray:
    """Each prioritizer's 0..10 scores times its weight, scaled to the plugins' 0..100
    (``MaxNodeScore / MaxExtenderPriority``); a failing prioritizer adds nothing."""
    names = [nodes.names[int(r)] for r in feasible]
    pos = {n: i for i, n in enumerate(names)}
    combined = np.zeros(len(names), np.int64)

    def call(ext: HTTPExtender) -> dict[str, int]:
        try:
            return ext.prioritize(pod, names, node_objects(ext, names, lookup))
        except ExtenderError as err:
            log.warning("extender %s prioritize failed: %s", ext.name, err)
            return {}

    if len(prioritizers) == 1:
        answers = [call(prioritizers[0])]
    else:  # upstream asks them in parallel (a goroutine each)
        with ThreadPoolExecutor(len(prioritizers)) as pool:
            answers = list(pool.map(call, prioritizers))
    for ext, scores in zip(prioritizers, answers, strict=True):
        for host, score in scores.items():
            i = pos.get(host)
            if i is not None:
                combined[i] += score * ext.cfg.weight
    return combined * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
