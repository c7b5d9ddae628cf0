"""PodTopologySpread (PreFilter, Filter, PreScore, Score; ``podtopologyspread/plugin.go``):
spread matching pods evenly over topology domains — hard (DoNotSchedule) in Filter, soft
(ScheduleAnyway) in Score; pods without constraints get the default ones."""

from __future__ import annotations

from typing import Any

import numpy as np

from kubesched.api.affinity import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY
from kubesched.api.node import NodeSpecInfo
from kubesched.api.pod import PodInfo
from kubesched.scheduler.events import ASSIGNED_POD, NODE, ActionType, ClusterEvent, ClusterEventWithHint
from kubesched.scheduler.framework.cycle_state import CycleState
from kubesched.scheduler.framework.interface import (
    EnqueueExtensions,
    FilterPlugin,
    NodeVerdicts,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ScorePlugin,
)
from kubesched.scheduler.framework.status import Code, Status
from kubesched.scheduler.listers import Listers
from kubesched.scheduler.nodetable import NodeTable
from kubesched.scheduler.plugins.helper import StateUpdater
from kubesched.scheduler.plugins.podtopologyspread import filtering, scoring
from kubesched.scheduler.plugins.podtopologyspread.common import constraints_for, parse_args
from kubesched.scheduler.podtable import PodTable

PRE_FILTER_KEY = "PreFilterPodTopologySpread"
PRE_SCORE_KEY = "PreScorePodTopologySpread"


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
    name = "PodTopologySpread"
    scores_bounded = True

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.args = parse_args(args)
        self._extensions = StateUpdater(PRE_FILTER_KEY, filtering.update_with_pod)

    @property
    def _listers(self) -> Listers:
        assert self.handle is not None
        return self.handle.listers

    def _pods(self) -> PodTable:
        assert self.handle is not None
        return self.handle.cache.pod_table

    # -- Filter ---------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTable
    ) -> tuple[PreFilterResult | None, Status | None]:
        constraints = constraints_for(pod, DO_NOT_SCHEDULE, self.args, self._listers)
        if not constraints:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, filtering.pre_filter_state(pod, constraints, nodes, self._pods()))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self._extensions

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> NodeVerdicts | None:
        s = state.get(PRE_FILTER_KEY)
        if s is None:
            return None
        return filtering.filter_verdicts(s, nodes)

    # -- Score ----------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: np.ndarray) -> Status | None:
        if len(rows) == 0:
            return None
        constraints = constraints_for(pod, SCHEDULE_ANYWAY, self.args, self._listers)
        if not constraints:
            return Status(Code.SKIP)
        require_all = bool(pod.spread_constraints) or not self.args.system_defaulted
        state.write(PRE_SCORE_KEY, scoring.pre_score_state(pod, constraints, require_all, nodes, rows, self._pods()))
        return None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTable, rows: np.ndarray) -> np.ndarray:
        s = state.get(PRE_SCORE_KEY)
        if s is None:
            return np.zeros(len(rows), np.int64)
        return scoring.raw_scores(s, nodes, rows)

    def normalize_scores(self, state: CycleState, pod: PodInfo, scores: np.ndarray) -> np.ndarray:
        s = state.get(PRE_SCORE_KEY)
        if s is None:
            return scores
        return scoring.normalize(s, scores)

    # -- QueueingHints ----------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        def pod_change(pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterPodChange``: a pod in the pod's namespace that a constraint
            selects was added or deleted, or a label change flipped some constraint's match."""
            if not isinstance(old, PodInfo) and not isinstance(new, PodInfo):
                return True
            constraints = constraints_for(pod, DO_NOT_SCHEDULE, self.args, self._listers)
            constraints += constraints_for(pod, SCHEDULE_ANYWAY, self.args, self._listers)
            changed = new if isinstance(new, PodInfo) else old
            if changed.namespace != pod.namespace:
                return False
            if isinstance(old, PodInfo) and isinstance(new, PodInfo):
                if old.labels == new.labels:
                    return False
                return any(c.selector.matches(old.labels) != c.selector.matches(new.labels) for c in constraints)
            return any(c.selector.matches(changed.labels) for c in constraints)

        def node_change(pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterNodeChange``: a node with every constraint key that was added,
            or whose keys or taints changed."""
            keys = [c.topology_key for c in pod.spread_constraints] or ["kubernetes.io/hostname"]
            if not isinstance(new, NodeSpecInfo):
                return True
            if not all(k in new.labels for k in keys):
                return isinstance(old, NodeSpecInfo) and all(k in old.labels for k in keys)
            if not isinstance(old, NodeSpecInfo):
                return True
            return any(old.labels.get(k) != new.labels.get(k) for k in keys) or old.taints != new.taints

        pod_actions = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
        node_actions = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, pod_actions), pod_change),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions), node_change),
        ]
