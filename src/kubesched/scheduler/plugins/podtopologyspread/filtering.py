"""PodTopologySpread's PreFilter, AddPod/RemovePod and Filter (``podtopologyspread/filtering.go``).

PreFilter counts, per constraint, the matching pods of every topology domain over the eligible
nodes (all constraint keys present, inclusion policies met) as an array indexed by the domain's
label-value code; Filter then reads each row's domain: skew = count + selfMatch − global min.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubesched.api.affinity import SpreadConstraint
from kubesched.api.pod import PodInfo
from kubesched.framework.interface import NodeVerdicts
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code
from kubesched.scheduler.plugins.podtopologyspread.common import (
    domain_codes,
    has_all_keys,
    inclusion,
    matching_per_node,
    n_values,
    self_matches,
)
from kubesched.scheduler.podtable import PodTable

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
_REASONS = {1: (ERR_REASON_CONSTRAINTS_NOT_MATCH,), 2: (ERR_REASON_NODE_LABEL_NOT_MATCH,)}
# each reason's code: a skew too large can change as pods come and go, a missing label cannot
_CODES = np.array([0, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE], np.int8)


@dataclass(slots=True)
class FilterState:
    constraints: tuple[SpreadConstraint, ...]
    counts: list[np.ndarray]  # per constraint: matching pods per domain (value code)
    present: list[np.ndarray]  # per constraint: domains with an eligible node
    self_match: list[int]

    def clone(self) -> FilterState:
        return FilterState(self.constraints, [c.copy() for c in self.counts], self.present, self.self_match)

    def min_match(self, i: int) -> int:
        """``minMatchNum``: the smallest count over eligible domains; 0 when there are fewer
        domains than minDomains."""
        present = self.present[i]
        domains = int(np.count_nonzero(present))
        if domains < self.constraints[i].min_domains or domains == 0:
            return 0
        return int(self.counts[i][present].min())


def pre_filter_state(
    pod: PodInfo, constraints: tuple[SpreadConstraint, ...], nodes: NodeTableView, pods: PodTable
) -> FilterState:
    all_keys = has_all_keys(nodes, constraints)
    policies = inclusion(nodes, pod, constraints)
    counts, present = [], []
    for c, ok in zip(constraints, policies, strict=True):
        eligible = all_keys & ok
        codes = domain_codes(nodes, c.topology_key)[eligible]
        size = n_values(nodes, c.topology_key)
        per_node = matching_per_node(pods, nodes, pod.namespace, c)[eligible]
        counts.append(np.bincount(codes, weights=per_node, minlength=size).astype(np.int64))
        present.append(np.bincount(codes, minlength=size) > 0)
    return FilterState(constraints, counts, present, [int(self_matches(pod, c)) for c in constraints])


def update_with_pod(
    state: FilterState, pod: PodInfo, other: PodInfo, nodes: NodeTableView, row: int, delta: int
) -> None:
    """``preFilterState.updateWithPod``: a nominated pod added, or a victim removed, on ``row``."""
    if other.namespace != pod.namespace or not has_all_keys(nodes, state.constraints)[row]:
        return
    policies = inclusion(nodes, pod, state.constraints)
    for i, c in enumerate(state.constraints):
        if not c.selector.matches(other.labels) or not policies[i][row]:
            continue
        code = int(domain_codes(nodes, c.topology_key)[row])
        if code >= len(state.counts[i]):
            state.counts[i] = np.pad(state.counts[i], (0, code + 1 - len(state.counts[i])))
        state.counts[i][code] += delta


def filter_verdicts(state: FilterState, nodes: NodeTableView) -> NodeVerdicts | None:
    reason = np.zeros(nodes.n, np.int64)
    undecided = np.ones(nodes.n, bool)
    for i, c in enumerate(state.constraints):
        codes = domain_codes(nodes, c.topology_key)
        missing = undecided & (codes < 0)
        reason[missing] = 2
        undecided &= ~missing
        counts = state.counts[i]
        if len(counts) < n_values(nodes, c.topology_key):
            counts = np.pad(counts, (0, n_values(nodes, c.topology_key) - len(counts)))
        match = np.where(codes >= 0, counts[np.maximum(codes, 0)] if len(counts) else 0, 0)
        skew = match + state.self_match[i] - state.min_match(i)
        bad = undecided & (skew > c.max_skew)
        reason[bad] = 1
        undecided &= ~bad
    if not reason.any():
        return None
    code = _CODES[reason]
    return NodeVerdicts(code, reason, _REASONS.__getitem__, checked=True)
