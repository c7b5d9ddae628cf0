"""InterPodAffinity (PreFilter, Filter, PreScore, Score; ``interpodaffinity/plugin.go``):
required and preferred pod affinity and anti-affinity, both the incoming pod's and existing
pods' toward it."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, cast

import numpy as np

from kubesched.api.node import NodeSpecInfo
from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import ASSIGNED_POD, NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.framework.handle import Handle
from kubesched.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    Memo,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
    SignFragment,
    SignPlugin,
)
from kubesched.framework.nodes import NodeTableView
from kubesched.framework.status import Code, Status
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.plugins.helper import OtherPodsReader, StateUpdater
from kubesched.scheduler.plugins.interpodaffinity import filtering, scoring
from kubesched.scheduler.plugins.interpodaffinity.common import matches_all, parse_args, resolve

PRE_FILTER_KEY = "PreFilterInterPodAffinity"
PRE_SCORE_KEY = "PreScoreInterPodAffinity"


def _no_terms(pod: PodInfo) -> bool:
    return pod.pod_affinity is None or pod.pod_affinity.empty


class InterPodAffinity(
    PreFilterPlugin,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    EnqueueExtensions,
    SignPlugin,
    OtherPodsReader,
):
    name = "InterPodAffinity"
    # a Skip of a pod without terms: no existing pod's terms count for it. (A pod with terms
    # reads every pod's labels: not replayed.)
    pre_filter_memo = Memo(guarded=True, skip_only=True, when=_no_terms)
    pre_score_memo = Memo(guarded=True, skip_only=True, when=_no_terms)

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): a pod with pod (anti-)affinity depends on other pods and is not
        signable; otherwise its labels, which existing pods' anti-affinity terms match."""
        affinity = (pod.obj.get("spec") or {}).get("affinity") or {}
        if affinity.get("podAffinity") is not None or affinity.get("podAntiAffinity") is not None:
            return [], Status(Code.UNSCHEDULABLE, ("pods with pod affinity or anti-affinity are not signable",))
        return [SignFragment("Labels", tuple(sorted(pod.labels.items())))], None

    def shape_pod(self, state: CycleState, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """The shape cache: a pod without terms of its own, while no existing pod has a term that
        scores (PreScore skips), takes no part when PreFilter skipped; otherwise its verdict on
        a node reads only that node's pods when every existing anti-affinity term selecting the
        pod has a topology key no two nodes share (kubernetes.io/hostname): then its namespace,
        labels and namespace labels (what those terms match) are its part."""
        if pod.pod_affinity is not None or scoring.scoring_terms_exist(self.pods, self.args):
            return [], Status(Code.UNSCHEDULABLE, ("pod (anti-)affinity terms apply",))
        if self.name in state.skip_filter:
            return [], None
        s: filtering.FilterState | None = state.get(PRE_FILTER_KEY)
        assert self.handle is not None
        nodes = self.handle.snapshot.table
        if s is None or not all(nodes.label_unique(key) for key in s.existing_anti_affinity_counts):
            return [], Status(Code.UNSCHEDULABLE, ("anti-affinity terms span several nodes",))
        ns_labels = tuple(sorted(s.ns_labels.items())) if s.ns_labels is not None else None
        return [SignFragment("InterPodAffinity", (pod.namespace, tuple(sorted(pod.labels.items())), ns_labels))], None

    scores_bounded = True

    def memo_guard(self, nodes: NodeTableView) -> Hashable:
        """Nothing while no existing pod has terms; else what a term-less pod's outcome reads:
        the terms and where their pods are, the namespaces' labels (namespaceSelector), the
        nodes' labels (topology keys)."""
        table = self.pods
        if not table.term_groups:
            return False
        return (table.terms_epoch, self.listers.versions.get("Namespace", 0), cast(NodeTable, nodes).epoch)

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.args = parse_args(args)
        self._extensions = StateUpdater(PRE_FILTER_KEY, filtering.update_with_pod)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = filtering.pre_filter_state(pod, nodes, self.pods, self.listers)
        if s is None:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self._extensions

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        s = state.get(PRE_FILTER_KEY)
        return None if s is None else filtering.filter_verdicts(s, pod, nodes)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> Status | None:
        s = scoring.pre_score_state(pod, nodes, self.pods, self.listers, self.args)
        if s is None:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_KEY, s)
        return None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
        s = state.get(PRE_SCORE_KEY)
        return np.zeros(len(rows), np.int64) if s is None else scoring.raw_scores(s, nodes, rows)

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        return scores if state.get(PRE_SCORE_KEY) is None else scoring.normalize(scores)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        def terms(pod: PodInfo) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
            a = pod.pod_affinity
            if a is None:
                return (), ()
            listers = self.listers
            return (
                tuple(resolve(t, listers) for t in a.required_affinity),
                tuple(resolve(t, listers) for t in a.required_anti_affinity),
            )

        def pod_change(pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterPodChange``: an assigned pod now matching all the affinity
            terms, or no longer (or, deleted, once) matching the anti-affinity terms."""
            old = old if isinstance(old, PodInfo) else None
            new = new if isinstance(new, PodInfo) else None
            if (new is not None and not new.node_name) or (old is not None and not old.node_name):
                return False
            affinity, anti = terms(pod)
            if old is not None and new is not None:
                return (not matches_all(affinity, old) and matches_all(affinity, new)) or (
                    matches_all(anti, old) and not matches_all(anti, new)
                )
            if new is not None:
                return matches_all(affinity, new)
            return old is None or matches_all(anti, old)

        def node_change(pod: PodInfo, _old: Any, new: Any) -> bool:
            """``isSchedulableAfterNodeChange``: the node has a topology key of a required term."""
            if not isinstance(new, NodeSpecInfo):
                return True
            affinity, anti = terms(pod)
            return any(t.term.topology_key in new.labels for t in (*affinity, *anti))

        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, pod_actions), pod_change),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), node_change),
        ]
