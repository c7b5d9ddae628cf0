"""PodTopologySpread's PreScore, Score and NormalizeScore (``podtopologyspread/scoring.go``).

Per ScheduleAnyway constraint: weight ln(domains among the feasible nodes + 2); a node's raw
score is Σ count(domain)·weight + (maxSkew − 1), rounded; fewer matching pods is better, so
normalization reverses: 100·(max + min − s)/max over the nodes not ignored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kubesched.api.affinity import SpreadConstraint
from kubesched.api.pod import PodInfo
from kubesched.framework.interface import MAX_NODE_SCORE
from kubesched.framework.nodes import NodeTableView
from kubesched.scheduler.plugins.podtopologyspread.common import (
    HOSTNAME,
    domain_codes,
    has_all_keys,
    inclusion,
    matching_per_node,
    n_values,
)
from kubesched.scheduler.podtable import PodTable


@dataclass(slots=True)
class ScoreState:
    constraints: tuple[SpreadConstraint, ...]
    require_all: bool
    weights: list[float]
    domain_counts: list[np.ndarray | None]  # per constraint, by value code + 1 (0: key missing)
    per_node: list[np.ndarray | None]  # hostname constraints: matching pods per row
    ignored: np.ndarray | None = None  # of the rows last scored

    def clone(self) -> ScoreState:
        return self


def pre_score_state(
    pod: PodInfo,
    constraints: tuple[SpreadConstraint, ...],
    require_all: bool,
    nodes: NodeTableView,
    rows: np.ndarray,
    pods: PodTable,
) -> ScoreState:
    all_keys = has_all_keys(nodes, constraints)
    kept = rows[all_keys[rows]] if require_all else rows
    policies = inclusion(nodes, pod, constraints)
    weights: list[float] = []
    domain_counts: list[np.ndarray | None] = []
    per_node: list[np.ndarray | None] = []
    for c, ok in zip(constraints, policies, strict=True):
        counts = matching_per_node(pods, nodes, pod.namespace, c)
        if c.topology_key == HOSTNAME:
            weights.append(math.log(len(kept) + 2))
            domain_counts.append(None)
            per_node.append(counts)
            continue
        # domains: the values among the feasible nodes kept ("" for a node without the key)
        shifted = domain_codes(nodes, c.topology_key).astype(np.int64) + 1
        size = n_values(nodes, c.topology_key) + 1
        in_domain = np.bincount(shifted[kept], minlength=size) > 0
        weights.append(math.log(int(np.count_nonzero(in_domain)) + 2))
        counted = ok & all_keys if require_all else ok
        sums = np.bincount(shifted[counted], weights=counts[counted], minlength=size).astype(np.int64)
        domain_counts.append(np.where(in_domain, sums, 0))
        per_node.append(None)
    return ScoreState(constraints, require_all, weights, domain_counts, per_node)


def raw_scores(state: ScoreState, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
    ignored = ~has_all_keys(nodes, state.constraints)[rows] if state.require_all else np.zeros(len(rows), bool)
    score = np.zeros(len(rows), np.float64)
    for i, c in enumerate(state.constraints):
        codes = domain_codes(nodes, c.topology_key)[rows]
        per_node = state.per_node[i]
        if per_node is not None:
            cnt = per_node[rows]
        else:
            dc = state.domain_counts[i]
            assert dc is not None
            cnt = dc[codes.astype(np.int64) + 1]
        score += np.where(codes >= 0, cnt * state.weights[i] + (c.max_skew - 1), 0.0)
    state.ignored = ignored
    # math.Round: half away from zero (scores are never negative)
    return np.where(ignored, 0, np.floor(score + 0.5)).astype(np.int64)


def normalize(state: ScoreState, scores: np.ndarray) -> np.ndarray:
    ignored = state.ignored if state.ignored is not None else np.zeros(len(scores), bool)
    counted = scores[~ignored]
    if len(counted) == 0:
        return np.zeros_like(scores)
    low, high = int(counted.min()), int(max(int(counted.max()), 0))
    if high == 0:
        out = np.full_like(scores, MAX_NODE_SCORE)
    else:
        out = MAX_NODE_SCORE * (high + low - scores) // high
    out[ignored] = 0
    return out
