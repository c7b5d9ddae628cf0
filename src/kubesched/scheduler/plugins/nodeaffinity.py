"""NodeAffinity (PreFilter, Filter, PreScore, Score): nodeSelector, required and preferred node affinity.

Required: ``spec.nodeSelector`` AND (terms ORed, each term's requirements ANDed), plus the
plugin's ``addedAffinity``. PreFilter narrows the search to the node names a required term
pins with ``matchFields: metadata.name``. Score sums the weights of matching preferred terms,
normalized by DefaultNormalizeScore.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kubesched.api.node import NodeSpecInfo
from kubesched.api.pod import PodInfo, PreferredTerm
from kubesched.api.selectors import NodeSelectorTerm, parse_node_selector_term
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.scheduler.plugins.helper import default_normalize_score

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_REASONS = {1: (ERR_REASON_ENFORCED,), 2: (ERR_REASON_POD,)}


def match_terms(nodes: NodeTableView, terms: Sequence[NodeSelectorTerm]) -> np.ndarray:
    """OR over terms of AND over each term's requirements, for every row."""
    out = np.zeros(nodes.n, bool)
    for term in terms:
        if not term.expressions and not term.fields:
            continue
        mask = np.ones(nodes.n, bool)
        for req in (*term.expressions, *term.fields):
            mask &= nodes.match_requirement(req)
        out |= mask
    return out


def match_node_selector(nodes: NodeTableView, selector: tuple[tuple[str, str], ...]) -> np.ndarray:
    mask = np.ones(nodes.n, bool)
    for key, value in selector:
        codes = nodes.label_codes(key)
        code = nodes.label_value_code(key, value)
        if codes is None or code < 0:
            return np.zeros(nodes.n, bool)
        mask &= codes == code
    return mask


def required_node_affinity(nodes: NodeTableView, pod: PodInfo) -> np.ndarray:
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match`` for every row: nodeSelector AND
    required terms (no terms at all match nothing)."""
    ok = match_node_selector(nodes, pod.node_selector) if pod.node_selector else np.ones(nodes.n, bool)
    if pod.required_terms is not None:
        ok &= match_terms(nodes, pod.required_terms)
    return ok


def preferred_score(nodes: NodeTableView, rows: np.ndarray, terms: Sequence[PreferredTerm]) -> np.ndarray:
    total = np.zeros(len(rows), np.int64)
    for p in terms:
        total += np.where(match_terms(nodes, [p.term])[rows], p.weight, 0)
    return total


class NodeAffinity(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, SignPlugin):
    name = "NodeAffinity"
    # PreFilter and PreScore read the pod and the plugin's args alone
    pre_filter_memo = Memo()
    pre_score_memo = Memo()

    sign_may_refuse = False

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): nodeSelector and node affinity (the profile's addedAffinity is
        the same for every pod of the profile)."""
        return [
            SignFragment("NodeSelector", pod.node_selector),
            SignFragment("NodeAffinity", (pod.required_terms, pod.preferred_terms)),
        ], None

    node_only = True
    cross_node = False
    rows_only = True
    scores_bounded = True

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.added_required: tuple[NodeSelectorTerm, ...] | None = None
        self.added_preferred: tuple[PreferredTerm, ...] = ()
        added = (args or {}).get("addedAffinity")
        if added:
            if not isinstance(added, Mapping):
                raise InputError("expected an object", field="addedAffinity")
            req = added.get("requiredDuringSchedulingIgnoredDuringExecution")
            if req is not None:
                self.added_required = tuple(
                    parse_node_selector_term(
                        t, f"addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]"
                    )
                    for i, t in enumerate(req.get("nodeSelectorTerms") or [])
                )
            prefs = []
            for i, p in enumerate(added.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
                term = parse_node_selector_term(
                    p.get("preference") or {}, f"addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
                )
                prefs.append(PreferredTerm(int(p.get("weight") or 0), term))
            self.added_preferred = tuple(prefs)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.node_selector and pod.required_terms is None and self.added_required is None:
            return None, Status(Code.SKIP)
        terms = pod.required_terms
        if not terms:
            return None, None
        # Only when every term pins metadata.name with In can the search be narrowed.
        names: set[str] | None = None
        for term in terms:
            pinned = [set(f.values) for f in term.fields if f.operator == "In"]
            if not pinned:
                return None, None
            term_names = set.intersection(*pinned)
            names = term_names if names is None else names | term_names
        if names is not None and not names:
            return None, Status.of(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)
        return PreFilterResult(frozenset(names) if names is not None else None), None

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        reason = np.zeros(nodes.n, np.int64)
        if self.added_required is not None:
            reason[~match_terms(nodes, self.added_required)] = 1
        ok = required_node_affinity(nodes, pod)
        reason[(reason == 0) & ~ok] = 2
        if not np.count_nonzero(reason):
            return None
        code = np.where(reason > 0, np.int8(Code.UNSCHEDULABLE_AND_UNRESOLVABLE), np.int8(0)).astype(np.int8)
        return NodeVerdicts(code, reason, _REASONS.__getitem__, checked=True)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> Status | None:
        if not pod.preferred_terms and not self.added_preferred:
            return Status(Code.SKIP)
        return None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        return preferred_score(nodes, rows, self.added_preferred) + preferred_score(nodes, rows, pod.preferred_terms)

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=False)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def node_matches(pod: PodInfo, _old: Any, new: Any) -> bool:
            if not isinstance(new, NodeSpecInfo):
                return True
            labels = new.labels
            if any(labels.get(k) != v for k, v in pod.node_selector):
                return False
            if self.added_required is not None and not any(t.matches(labels, new.name) for t in self.added_required):
                return False
            return pod.required_terms is None or any(t.matches(labels, new.name) for t in pod.required_terms)

        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), node_matches)]
