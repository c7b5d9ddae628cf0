"""PodTopologySpread (PreFilter, Filter, PreScore, Score; ``podtopologyspread/plugin.go``):
spread matching pods evenly over topology domains — hard (DoNotSchedule) in Filter, soft
(ScheduleAnyway) in Score; pods without constraints get the default ones."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import numpy as np

from kubesched.api.affinity import DO_NOT_SCHEDULE, HONOR, SCHEDULE_ANYWAY, SpreadConstraint
from kubesched.api.node import NodeSpecInfo
from kubesched.api.pod import PodInfo
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.events import NODE, POD, ActionType, ClusterEvent, ClusterEventWithHint
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
from kubesched.scheduler.plugins.helper import OtherPodsReader, StateUpdater
from kubesched.scheduler.plugins.podtopologyspread import filtering, scoring
from kubesched.scheduler.plugins.podtopologyspread.common import constraints_for, parse_args

PRE_FILTER_KEY = "PreFilterPodTopologySpread"
PRE_SCORE_KEY = "PreScorePodTopologySpread"


class PodTopologySpread(
    PreFilterPlugin,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    EnqueueExtensions,
    SignPlugin,
    OtherPodsReader,
):
    name = "PodTopologySpread"
    # a Skip: the pod has no constraints and the defaults select nothing (Services, controllers)
    pre_filter_memo = Memo(guarded=True, skip_only=True)
    pre_score_memo = Memo(guarded=True, skip_only=True)

    def sign_pod(self, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """``SignPod`` (KEP-5598): spreading depends on other pods, so a pod with constraints is
        not signable, nor is any pod while the plugin has default constraints (System defaulting,
        the default profile's, has two)."""
        if pod.spread_constraints:
            return [], Status(Code.UNSCHEDULABLE, ("pods with topology constraints are not signable",))
        if self.args.system_defaulted or self.args.default_constraints:
            return [], Status(Code.UNSCHEDULABLE, ("pods with default topology constraints are not signable",))
        return [], None

    def shape_pod(self, state: CycleState, pod: PodInfo) -> tuple[list[SignFragment], Status | None]:
        """The shape cache: no part for a pod with no constraint of either kind once the
        defaults are applied (PreFilter and PreScore both skip); otherwise other pods decide."""
        if self.name in state.skip_filter and not constraints_for(pod, SCHEDULE_ANYWAY, self.args, self.listers):
            return [], None
        return [], Status(Code.UNSCHEDULABLE, ("pod has topology spread constraints",))

    scores_bounded = True

    def memo_guard(self, nodes: NodeTableView) -> Hashable:
        return self.listers.selector_epoch

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.args = parse_args(args)
        self._extensions = StateUpdater(PRE_FILTER_KEY, filtering.update_with_pod)

    # -- Filter ---------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: NodeTableView
    ) -> tuple[PreFilterResult | None, Status | None]:
        constraints = constraints_for(pod, DO_NOT_SCHEDULE, self.args, self.listers)
        if not constraints:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, filtering.pre_filter_state(pod, constraints, nodes, self.pods))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions:
        return self._extensions

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView) -> NodeVerdicts | None:
        s = state.get(PRE_FILTER_KEY)
        if s is None:
            return None
        return filtering.filter_verdicts(s, nodes)

    # -- Score ----------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> Status | None:
        if len(rows) == 0:
            return None
        constraints = constraints_for(pod, SCHEDULE_ANYWAY, self.args, self.listers)
        if not constraints:
            return Status(Code.SKIP)
        require_all = bool(pod.spread_constraints) or not self.args.system_defaulted
        state.write(PRE_SCORE_KEY, scoring.pre_score_state(pod, constraints, require_all, nodes, rows, self.pods))
        return None

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTableView, rows: np.ndarray) -> np.ndarray:
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
        # The hints look at the hard constraints only (``getConstraints``): only those reject.
        def hard(pod: PodInfo) -> tuple[SpreadConstraint, ...]:
            return constraints_for(pod, DO_NOT_SCHEDULE, self.args, self.listers)

        def pod_change(pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterPodChange``: an assigned pod in the pod's namespace that a
            constraint selects was added or deleted, or a label change flipped some constraint's
            match; or the pod itself got new tolerations and a constraint honors taints."""
            old = old if isinstance(old, PodInfo) else None
            new = new if isinstance(new, PodInfo) else None
            if old is None and new is None:
                return True

            def involved(p: PodInfo) -> bool:
                return p.uid == pod.uid or (bool(p.node_name) and p.namespace == pod.namespace)

            if (new is not None and not involved(new)) or (old is not None and not involved(old)):
                return False
            constraints = hard(pod)
            if old is not None and new is not None:
                honors_taints = any(c.node_taints_policy == HONOR for c in constraints)
                if new.uid == pod.uid and old.tolerations != new.tolerations and honors_taints:
                    return True
                if old.labels == new.labels:
                    return False
                return any(c.selector.matches(old.labels) != c.selector.matches(new.labels) for c in constraints)
            changed = new if new is not None else old
            assert changed is not None
            return any(c.selector.matches(changed.labels) for c in constraints)

        def node_change(pod: PodInfo, old: Any, new: Any) -> bool:
            """``isSchedulableAfterNodeChange``: a node that has (had) every constraint's key was
            added or deleted, gained or lost one of them, or changed a key's value or its taints."""
            old = old if isinstance(old, NodeSpecInfo) else None
            new = new if isinstance(new, NodeSpecInfo) else None
            constraints = hard(pod)

            def matching(n: NodeSpecInfo | None) -> bool:
                return n is not None and all(c.topology_key in n.labels for c in constraints)

            if old is not None and new is not None:
                if matching(old) != matching(new):
                    return True
                keys_changed = any(
                    old.labels.get(c.topology_key) != new.labels.get(c.topology_key) for c in constraints
                )
                return matching(new) and (keys_changed or old.taints != new.taints)
            if old is None and new is None:
                return True
            return matching(new if new is not None else old)

        pod_actions = (
            ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATION | ActionType.DELETE
        )
        node_actions = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        return [
            ClusterEventWithHint(ClusterEvent(POD, pod_actions), pod_change),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions), node_change),
        ]
