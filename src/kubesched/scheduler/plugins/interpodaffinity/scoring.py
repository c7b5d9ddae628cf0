"""InterPodAffinity's PreScore, Score and NormalizeScore (``interpodaffinity/scoring.go``).

``topologyScore[key][value]`` is built as arrays over value codes: the incoming pod's preferred
terms (±weight per matching pod), and existing pods' required affinity (hardPodAffinityWeight)
and preferred terms that select the incoming pod, one term group at a time. A node scores the
sum over keys of its domains' entries; normalization is min-max."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kubesched.api.pod import PodInfo
from kubesched.framework.interface import MAX_NODE_SCORE
from kubesched.framework.nodes import NodeTableView
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.plugins.interpodaffinity.common import (
    AffinityArgs,
    by_domain,
    lookup,
    per_node,
    resolve,
)
from kubesched.scheduler.podtable import PREFERRED_AFFINITY, PREFERRED_ANTI, REQUIRED_AFFINITY, PodTable


@dataclass(slots=True)
class ScoreState:
    topology_score: dict[str, np.ndarray] = field(default_factory=dict)

    def clone(self) -> ScoreState:
        return self

    def add(self, key: str, domains: np.ndarray) -> None:
        have = self.topology_score.get(key)
        if have is None:
            self.topology_score[key] = domains.astype(np.int64)
            return
        n = max(len(have), len(domains))
        self.topology_score[key] = np.pad(have, (0, n - len(have))) + np.pad(
            domains.astype(np.int64), (0, n - len(domains))
        )


def pre_score_state(
    pod: PodInfo, nodes: NodeTableView, table: PodTable, listers: Listers, args: AffinityArgs
) -> ScoreState | None:
    """None when PreScore returns Skip (no preferences anywhere)."""
    a = pod.pod_affinity
    preferred = a.preferred_affinity if a else ()
    preferred_anti = a.preferred_anti_affinity if a else ()
    has_constraints = bool(preferred or preferred_anti)
    if not has_constraints and (args.ignore_preferred_terms_of_existing_pods or not table.term_groups):
        return None  # nothing to score with, in the pod or in any existing pod
    s = ScoreState()
    touched = False

    def credit(key: str, rows: np.ndarray, weight: int) -> None:
        nonlocal touched
        codes = nodes.label_codes(key)
        if codes is None or not (rows[codes >= 0] > 0).any():
            return  # no matching pod on a node with the key: no topologyScore entry
        touched = True
        s.add(key, by_domain(nodes, key, rows.astype(np.int64) * weight))

    for sign, terms in ((1, preferred), (-1, preferred_anti)):
        for w in terms:
            t = resolve(w.term, listers)
            credit(t.term.topology_key, per_node(table, nodes, t.pod_mask(table)), sign * w.weight)
    ns_labels = listers.namespace_labels(pod.namespace)
    for key in list(table.term_groups):
        kind, weight, term = key
        if kind == REQUIRED_AFFINITY:
            signed = args.hard_pod_affinity_weight
        elif kind == PREFERRED_AFFINITY:
            signed = weight
        elif kind == PREFERRED_ANTI:
            signed = -weight
        else:
            continue
        if signed and term.matches(pod.namespace, pod.labels, ns_labels):
            credit(term.topology_key, table.group_per_row(key, nodes.n), signed)
    return s if touched else None


def scoring_terms_exist(table: PodTable, args: AffinityArgs) -> bool:
    """Whether an existing pod has a term ``pre_score_state`` would score an incoming pod
    against (a pod without terms of its own then gets no PreScore state: Skip)."""
    if args.ignore_preferred_terms_of_existing_pods:
        return False
    for kind, _weight, _term in table.term_groups:
        if kind in (PREFERRED_AFFINITY, PREFERRED_ANTI):
            return True
        if kind == REQUIRED_AFFINITY and args.hard_pod_affinity_weight:
            return True
    return False


def raw_scores(s: ScoreState, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
    out = np.zeros(nodes.n, np.int64)
    for key, domains in s.topology_score.items():
        has, values = lookup(nodes, key, domains)
        out += np.where(has, values, 0)
    return out[rows]


def normalize(scores: np.ndarray) -> np.ndarray:
    if len(scores) == 0:
        return scores
    low, high = int(scores.min()), int(scores.max())
    if high - low <= 0:
        return np.zeros_like(scores)
    # float64(MaxNodeScore) * (float64(s-min) / float64(max-min)), truncated
    return (float(MAX_NODE_SCORE) * ((scores - low).astype(np.float64) / float(high - low))).astype(np.int64)
