"""InterPodAffinity's PreFilter, AddPod/RemovePod and Filter (``interpodaffinity/filtering.go``).

Three counts per topology pair, each an array over a key's label-value codes: pods matching all
of the incoming pod's required affinity terms, pods matching its anti-affinity terms, and
existing pods whose required anti-affinity selects the incoming pod (read from the pod table's
term index, one group per distinct term)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.interface import NodeVerdicts
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.plugins.interpodaffinity.common import (
    Resolved,
    by_domain,
    lookup,
    matches_all,
    pad_add,
    per_node,
    resolve,
)
from kubesched.scheduler.podtable import REQUIRED_ANTI, PodTable, term_keys

ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
_REASONS = {1: (ERR_REASON_AFFINITY,), 2: (ERR_REASON_ANTI_AFFINITY,), 3: (ERR_REASON_EXISTING_ANTI_AFFINITY,)}

Counts = dict[str, np.ndarray]  # topology key -> count per value code


def _add(counts: Counts, key: str, domains: np.ndarray) -> None:
    counts[key] = pad_add(counts.get(key), domains)


@dataclass(slots=True)
class FilterState:
    affinity: tuple[Resolved, ...]
    anti_affinity: tuple[Resolved, ...]
    ns_labels: dict[str, str] | None
    affinity_counts: Counts = field(default_factory=dict)
    anti_affinity_counts: Counts = field(default_factory=dict)
    existing_anti_affinity_counts: Counts = field(default_factory=dict)

    def clone(self) -> FilterState:
        def copy(c: Counts) -> Counts:
            return {k: v.copy() for k, v in c.items()}

        return FilterState(
            self.affinity,
            self.anti_affinity,
            self.ns_labels,
            copy(self.affinity_counts),
            copy(self.anti_affinity_counts),
            copy(self.existing_anti_affinity_counts),
        )


def pre_filter_state(pod: PodInfo, nodes: NodeTableView, table: PodTable, listers: Listers) -> FilterState | None:
    """None when there is nothing to check (PreFilter returns Skip)."""
    a = pod.pod_affinity
    if a is None and not table.term_groups:
        return None
    affinity = tuple(resolve(t, listers) for t in (a.required_affinity if a else ()))
    anti = tuple(resolve(t, listers) for t in (a.required_anti_affinity if a else ()))
    if not affinity and not anti and not table.has_terms(REQUIRED_ANTI):
        return None
    ns_labels = listers.namespace_labels(pod.namespace)
    s = FilterState(affinity, anti, dict(ns_labels) if ns_labels is not None else None)
    # existing pods' required anti-affinity terms that select the incoming pod
    for key in list(table.term_groups):
        kind, _, term = key
        if kind == REQUIRED_ANTI and term.matches(pod.namespace, pod.labels, s.ns_labels):
            rows = table.group_per_row(key, nodes.n)
            _add(s.existing_anti_affinity_counts, term.topology_key, by_domain(nodes, term.topology_key, rows))
    if affinity:
        mask = affinity[0].pod_mask(table)
        for t in affinity[1:]:
            mask &= t.pod_mask(table)
        rows = per_node(table, nodes, mask)
        for t in affinity:
            _add(s.affinity_counts, t.term.topology_key, by_domain(nodes, t.term.topology_key, rows))
    for t in anti:
        rows = per_node(table, nodes, t.pod_mask(table))
        _add(s.anti_affinity_counts, t.term.topology_key, by_domain(nodes, t.term.topology_key, rows))
    return s


def update_with_pod(s: FilterState, pod: PodInfo, other: PodInfo, nodes: NodeTableView, row: int, delta: int) -> None:
    """``preFilterState.updateWithPod``: ``other`` added to (or removed from) ``row``."""

    def bump(counts: Counts, key: str) -> None:
        # in place: a state owns its arrays (``clone`` copies them); grown when the domain is new
        codes = nodes.label_codes(key)
        if codes is None or codes[row] < 0:
            return
        code = int(codes[row])
        have = counts.get(key)
        if have is None or len(have) <= code:
            grown = np.zeros(code + 1, np.int64)
            if have is not None:
                grown[: len(have)] = have
            counts[key] = have = grown
        have[code] += delta

    for kind, _, term in term_keys(other):
        if kind == REQUIRED_ANTI and term.matches(pod.namespace, pod.labels, s.ns_labels):
            bump(s.existing_anti_affinity_counts, term.topology_key)
    if matches_all(s.affinity, other):
        for t in s.affinity:
            bump(s.affinity_counts, t.term.topology_key)
    for t in s.anti_affinity:
        if t.matches(other):
            bump(s.anti_affinity_counts, t.term.topology_key)


def filter_verdicts(s: FilterState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
    reason = np.zeros(nodes.n, np.int64)
    if s.affinity:
        all_keys = np.ones(nodes.n, bool)
        exist = np.ones(nodes.n, bool)
        for t in s.affinity:
            has, count = lookup(nodes, t.term.topology_key, s.affinity_counts.get(t.term.topology_key, np.zeros(0)))
            all_keys &= has
            exist &= count > 0
        ok = all_keys & exist
        # the first pod of a group: nobody matches anywhere and it matches its own terms
        if not any(c.any() for c in s.affinity_counts.values()) and matches_all(s.affinity, pod):
            ok = all_keys
        reason[~ok] = 1
    if s.anti_affinity and any(c.any() for c in s.anti_affinity_counts.values()):
        bad = np.zeros(nodes.n, bool)
        for t in s.anti_affinity:
            has, count = lookup(
                nodes, t.term.topology_key, s.anti_affinity_counts.get(t.term.topology_key, np.zeros(0))
            )
            bad |= has & (count > 0)
        reason[(reason == 0) & bad] = 2
    if s.existing_anti_affinity_counts:
        bad = np.zeros(nodes.n, bool)
        for key, domains in s.existing_anti_affinity_counts.items():
            has, count = lookup(nodes, key, domains)
            bad |= has & (count > 0)
        reason[(reason == 0) & bad] = 3
    if not reason.any():
        return None
    code = np.where(reason == 1, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(Code.UNSCHEDULABLE))
    code = np.where(reason > 0, code, np.int8(0)).astype(np.int8)
    return NodeVerdicts(code, reason, _REASONS.__getitem__, checked=True)
